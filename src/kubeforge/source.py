"""Event sources besides the watched kinds, as controller-runtime's `source` package:
a `Channel` of events from outside the cluster, given to `builder.watches(...)`.
"""

from __future__ import annotations

from kubeforge._runtime.source import Channel

__all__ = [
    "Channel",
]
