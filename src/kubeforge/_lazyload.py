"""Public names that load on first use (a module-level `__getattr__`, PEP 562).

`import kubeforge` then costs almost nothing; each name imports its module when first read
and is cached in the package's namespace, so later reads are plain attribute lookups.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A `__getattr__` for `package` resolving each name in `exports` (name -> defining
    module) on first use."""

    def load(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
