"""Kubernetes Events about objects, as client-go's `record` package:
`manager.event_recorder(name)` gives an `EventRecorder`; its `record(obj, type, reason,
message)` writes an Event (`EventType` is "Normal" or "Warning"), folding repeats into one.
"""

from __future__ import annotations

from kubeforge._runtime.events import EventRecorder, EventType

__all__ = [
    "EventRecorder",
    "EventType",
]
