"""What both stages of the machine share."""

from __future__ import annotations

from datetime import datetime

GROUP = "useless.container.training"
INTERVAL = 5.0
"""Seconds between a switch going up and the machine turning it back down (and, in stage 2,
the least time between two flips of the same machine)."""


def rfc3339(when: datetime | None) -> str | None:
    """A timestamp as Kubernetes writes it (UTC, `Z`), for merge patches; None stays None."""
    return None if when is None else when.isoformat().replace("+00:00", "Z")
