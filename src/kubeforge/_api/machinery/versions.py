"""Kubernetes API version ordering: `v2` before `v1`, GA before beta before alpha."""

from __future__ import annotations

import re

__all__ = ["version_priority"]

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?\Z")
_STAGES = {None: 0, "beta": 1, "alpha": 2}


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting versions in Kubernetes priority order (v2, v1, v1beta2, v1alpha1, foo)."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    return (_STAGES[m.group(2)], -int(m.group(1)), -int(m.group(3) or 0), "")
