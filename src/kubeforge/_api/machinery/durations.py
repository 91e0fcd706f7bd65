"""Human-readable durations, as Kubernetes prints them.

`human_duration` gives about two significant figures ("10m5s" below ten minutes, "5h20m" below
eight hours, "3d4h" below eight days, "2y10d" below eight years); `short_human_duration` keeps
only the largest unit. Both answer "<invalid>" for durations more than a second in the past,
tolerating a little clock skew.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = [
    "age",
    "human_duration",
    "short_human_duration",
]

_MINUTE = 60
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR = 365 * _DAY


def _whole_seconds(seconds: float | timedelta) -> int | None:
    """Truncated seconds, or None when the duration lies too far in the past."""
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    whole = int(seconds)  # truncates toward zero, so -1.9s still counts as "now"
    if whole < -1:
        return None
    return max(whole, 0)


def human_duration(seconds: float | timedelta) -> str:
    """A succinct duration with limited precision: 59s, 119s, 2m, 9m59s, 10m, 3h, 5h20m, 2d."""
    s = _whole_seconds(seconds)
    if s is None:
        return "<invalid>"
    if s < 2 * _MINUTE:
        return f"{s}s"
    minutes = s // _MINUTE
    if minutes < 10:
        rest = s % _MINUTE
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = s // _HOUR
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def short_human_duration(seconds: float | timedelta) -> str:
    """Only the largest whole unit: 59s, 1m, 59m, 1h, 23h, 1d, 364d, 1y."""
    s = _whole_seconds(seconds)
    if s is None:
        return "<invalid>"
    if s < _MINUTE:
        return f"{s}s"
    if s < _HOUR:
        return f"{s // _MINUTE}m"
    if s < _DAY:
        return f"{s // _HOUR}h"
    if s < _YEAR:
        return f"{s // _DAY}d"
    return f"{s // _YEAR}y"


def age(timestamp: str | None, now: datetime) -> str:
    """How long ago `timestamp` was, as `human_duration`; "<unknown>" when it is missing.

    An unparsable timestamp also reads "<unknown>": stored objects always carry valid ones.
    """
    then = parse_time_or_none(timestamp)
    if then is None:
        return "<unknown>"
    return human_duration((now - then).total_seconds())
