"""Kubernetes timestamps: metav1.Time, metav1.MicroTime, and reading either back.

metav1.Time is RFC 3339 in UTC with whole seconds (`2024-05-01T12:00:00Z`); metav1.MicroTime
keeps six fractional digits (`2024-05-01T12:00:00.123456Z`); container log lines carry nine.
Reading accepts any RFC 3339 timestamp: `Z` or a `±hh:mm` offset, any fraction.

`Time` and `MicroTime` are the field types of typed models (`start_time: Time | None`): an
aware datetime in Python, read from any RFC 3339 string and written back as Kubernetes writes
it, in UTC with whole seconds (Time) or six fractional digits (MicroTime).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from typing import Annotated, Any, TypeAlias

import annotated_types
from pydantic import BeforeValidator, PlainSerializer

from kubeforge import clock

__all__ = [
    "MicroTime",
    "Time",
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
    """The current time of the process's clock in UTC, in whole seconds as metav1.Time
    keeps it."""
    return clock.now().replace(microsecond=0)


def format_time(moment: datetime) -> str:
    """A metav1.Time string: RFC 3339 in UTC with whole seconds and `Z` (naive means UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    # Not strftime: its %Y does not pad years before 1000 to four digits everywhere.
    m = moment
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


def format_micro_time(moment: datetime) -> str:
    """A metav1.MicroTime string: exactly six fractional digits and `Z` (naive means UTC)."""
    return f"{format_time(moment)[:-1]}.{moment.microsecond:06d}Z"


def format_nano_time(epoch_nanos: int) -> str:
    """Nanoseconds since the epoch as RFC 3339 with nine fractional digits and `Z`."""
    seconds, fraction = divmod(epoch_nanos, 1_000_000_000)
    whole = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{fraction:09d}Z"


_last_second = 0
_last_text = ""


def _second_text(second: int) -> str:
    global _last_second, _last_text
    if second != _last_second:  # formatting once a second keeps it off the write path
        _last_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second = second
    return _last_text


def now_rfc3339() -> str:
    """The current time of the process's clock as a metav1.Time string."""
    return _second_text(int(clock.time()))


def now_micro_time() -> str:
    """The current time of the process's clock as a metav1.MicroTime string."""
    moment = clock.time()
    second = int(moment)
    # The float's last bits are noise below a microsecond: round, short of the next second.
    micro = min(round((moment - second) * 1_000_000), 999_999)
    return f"{_second_text(second)[:-1]}.{micro:06d}Z"


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


def _aware_time(value: Any) -> Any:
    """A time field's input: RFC 3339 text parsed, a naive datetime refused (its zone would be
    a guess), anything else left to pydantic's datetime validation."""
    if isinstance(value, str):
        return parse_time(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        raise ValueError("a Kubernetes time needs a time zone, e.g. datetime.now(UTC)")
    return value


# Objects repeat their times (a pod's conditions, a list's objects): writing one is then a
# lookup, several times faster than formatting it again.
_time_text = lru_cache(maxsize=4096)(format_time)
_micro_time_text = lru_cache(maxsize=4096)(format_micro_time)

# Timezone(...) says "aware" to tools reading annotated-types constraints (Hypothesis).
Time: TypeAlias = Annotated[
    datetime,
    annotated_types.Timezone(...),
    BeforeValidator(_aware_time),
    PlainSerializer(_time_text, return_type=str, when_used="json"),
]
"""metav1.Time: an aware datetime, written as `2024-05-01T12:00:00Z`."""

MicroTime: TypeAlias = Annotated[
    datetime,
    annotated_types.Timezone(...),
    BeforeValidator(_aware_time),
    PlainSerializer(_micro_time_text, return_type=str, when_used="json"),
]
"""metav1.MicroTime: an aware datetime, written as `2024-05-01T12:00:00.123456Z`."""
