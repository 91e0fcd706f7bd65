"""Kubernetes timestamps: metav1.Time, metav1.MicroTime, and reading either back.

metav1.Time is RFC 3339 in UTC with whole seconds (`2024-05-01T12:00:00Z`); metav1.MicroTime
keeps six fractional digits (`2024-05-01T12:00:00.123456Z`); container log lines carry nine.
Reading accepts any RFC 3339 timestamp: `Z` or a `±hh:mm` offset, any fraction.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

__all__ = [
    "format_micro_time",
    "format_nano_time",
    "format_time",
    "now",
    "now_micro_time",
    "now_rfc3339",
    "parse_time",
    "parse_time_or_none",
]

_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def now() -> datetime:
    """The current time in UTC, in whole seconds as metav1.Time keeps it."""
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    """A metav1.Time string: RFC 3339 in UTC with whole seconds and `Z` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """A metav1.MicroTime string: exactly six fractional digits and `Z` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_nano_time(epoch_nanos: int) -> str:
    """Nanoseconds since the epoch as RFC 3339 with nine fractional digits and `Z`."""
    seconds, fraction = divmod(epoch_nanos, 1_000_000_000)
    whole = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{fraction:09d}Z"


_last_second = 0
_last_text = ""


def now_rfc3339() -> str:
    """The current time as a metav1.Time string."""
    global _last_second, _last_text
    second = int(time.time())
    if second != _last_second:  # formatting once a second keeps it off the write path
        _last_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second = second
    return _last_text


def now_micro_time() -> str:
    """The current time as a metav1.MicroTime string."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@lru_cache(maxsize=8192)
def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp (`Z` or `±hh:mm`, optional fraction) as an aware datetime.

    Raises ValueError when `text` is not such a timestamp. Fractions beyond microseconds are
    truncated.
    """
    m = _RFC3339_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = m.groups()
    micro = int((frac + "000000")[:6]) if frac else 0
    if zulu:
        tz = UTC
    else:
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        if offset >= timedelta(hours=24):
            raise ValueError(f"time zone offset out of range: {text!r}")
        tz = timezone(-offset if sign == "-" else offset)
    return datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=tz
    )


def parse_time_or_none(value: Any) -> datetime | None:
    """A timestamp field's value as an aware datetime; None when absent, empty, not a string
    or not RFC 3339 (for reading objects, whose stored times are always valid)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None
