"""What the server's own loops need of the write pipeline: its three writes.

The loops write as kube-controller-manager's controllers would, through the same pipeline
as any client (defaults, validation, field ownership, commit), but without admission: their
calls carry none. The server's `Writes` (`handlers/writes.py`) meets this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import Written
from kubeforge._apiserver.storage.store import StoredObject

__all__ = ["Writer"]


class Writer(Protocol):
    """Creates, updates and deletes objects."""

    async def create(self, call: Call, body: Any) -> Written:
        """Create the object `body` describes."""

    async def write_update(
        self, call: Call, obj: dict[str, Any], old: StoredObject, track_fields: bool = True
    ) -> Written:
        """Replace `old` with `obj`."""

    async def delete_stored(
        self, call: Call, old: StoredObject, options: dict[str, Any], answer: bool = True
    ) -> Written:
        """Delete `old` (or mark it deleting while finalizers hold it)."""
