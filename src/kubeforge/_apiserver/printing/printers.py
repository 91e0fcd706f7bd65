"""`kubectl get` columns for built-in kinds: which printer each kind has.

The server always fills every column, wide ones included; clients hide columns whose
priority is above zero unless asked for wide output. Cells follow the Kubernetes printers
(pkg/printers/internalversion/printers.go): ages are human durations, counts are integers,
absent values print as `<none>`, `<unset>` or `<unknown>` exactly where Kubernetes prints
them. Each group's printers live with their cells (`core.py`, `workloads.py`,
`networking.py`, `storage.py`, `controlplane.py`), on what they share (`columns.py`).
"""

from __future__ import annotations

from kubeforge._apiserver.printing import controlplane, core, networking, storage, workloads
from kubeforge._apiserver.printing.columns import Printer

__all__ = ["printer_for"]

_PRINTERS: dict[tuple[str, str], Printer] = {
    **core.PRINTERS,
    **workloads.PRINTERS,
    **networking.PRINTERS,
    **storage.PRINTERS,
    **controlplane.PRINTERS,
}


def printer_for(group: str, kind: str) -> Printer | None:
    """The printer of a built-in kind; None for kinds printed with the default columns."""
    return _PRINTERS.get((group, kind))
