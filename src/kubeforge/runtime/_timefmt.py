"""Kubernetes timestamp formats: metav1.Time (whole seconds) and metav1.MicroTime."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["micro_time", "utc_now"]


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def micro_time(when: datetime | None = None) -> str:
    """RFC 3339 with exactly six fractional digits and `Z`, as MicroTime is serialised."""
    moment = utc_now() if when is None else when.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
