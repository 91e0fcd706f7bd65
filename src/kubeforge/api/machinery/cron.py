"""Cron schedules as robfig/cron's standard parser reads them: the grammar kube-apiserver
validates a CronJob's `spec.schedule` with and kube-controller-manager runs it by
(cron.ParseStandard in pkg/apis/batch/validation and pkg/controller/cronjob).

A schedule is five fields (minute, hour, day of month, month, day of week) with month and
weekday names, ranges, steps, lists and `?` (as `*`); or a descriptor: `@yearly` (or
`@annually`), `@monthly`, `@weekly`, `@daily` (or `@midnight`), `@hourly`, `@every <Go
duration>`. A leading `TZ=<zone>` or `CRON_TZ=<zone>` names the schedule's time zone.

`schedule_error` says why a schedule does not parse, in the library's words. `parse_schedule`
gives a `Schedule` whose `next_after` answers the first time after a given one; the times of
a five-field expression come from cronsim, which joins the day-of-month and day-of-week
fields as robfig/cron does (both must match when either starts with `*`, otherwise either
may). Zones are IANA names read with the standard library's zoneinfo.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from kubeforge.api.machinery.formats import go_duration_nanos
from kubeforge.api.machinery.govalues import go_quote

__all__ = ["Schedule", "ScheduleError", "load_zone", "parse_schedule", "schedule_error"]


class ScheduleError(ValueError):
    """A schedule that does not parse, or names a time zone that does not exist."""


# Each field's bounds and names (robfig/cron's minutes, hours, dom, months, dow).
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (
        1,
        12,
        {
            m: i + 1
            for i, m in enumerate(
                ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
            )
        },
    ),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
# Descriptors as the five-field expressions they stand for.
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "
_NANOS = 1_000_000_000


def _int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _value(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    return _int(text)


def _check_range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _value(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _value(low_high[1], names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_high) == 1:
            end = high
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")


def load_zone(name: str) -> tzinfo:
    """An IANA time zone by name, as Go's time.LoadLocation finds it ("" and "UTC" are UTC);
    ScheduleError `unknown time zone <name>` when there is none."""
    if name in ("", "UTC"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"unknown time zone {name}") from None


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: a five-field expression or a constant interval, in a time zone;
    neither for fields the library accepts that no date has (`0 0 30 2 *`), which never
    come, as robfig/cron answers its zero time."""

    expression: str | None
    every: timedelta | None
    zone: tzinfo

    def next_after(self, moment: datetime) -> datetime | None:
        """The first time of the schedule after `moment` (fractions of a second ignored, as
        the library starts from the next whole second), in UTC; None when there is none."""
        if self.every is not None:
            whole = moment - timedelta(microseconds=moment.microsecond)
            return (whole + self.every).astimezone(UTC)
        if self.expression is None:
            return None
        try:
            found = next(CronSim(self.expression, moment.astimezone(self.zone)))
        except (CronSimError, StopIteration, OverflowError):
            return None
        return found.astimezone(UTC)


def _split_zone(spec: str) -> tuple[str | None, str]:
    """The zone a `TZ=`/`CRON_TZ=` prefix names (None without one) and the rest."""
    if not spec.startswith(("TZ=", "CRON_TZ=")):
        return None, spec
    prefix, _, rest = spec.partition(" ")
    return prefix.partition("=")[2], rest.strip()


def _every(spec: str) -> timedelta:
    text = spec[len(_EVERY) :]
    nanos = go_duration_nanos(text)
    if nanos is None:
        raise ScheduleError(
            f"failed to parse duration {spec}: time: invalid duration {go_quote(text)}"
        )
    # Every(): at least a second, and whole seconds only.
    return timedelta(seconds=max(nanos - nanos % _NANOS, _NANOS) // _NANOS)


def _parse(spec: str) -> tuple[str | None, timedelta | None]:
    """A spec without its zone as (five-field expression, None) or (None, interval)."""
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return _DESCRIPTORS[spec], None
        if spec.startswith(_EVERY):
            return None, _every(spec)
        raise ScheduleError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    lists = [[part for part in text.split(",") if part] for text in fields]
    for parts, (low, high, names) in zip(lists, _FIELDS, strict=True):
        for expr in parts:
            _check_range(expr, low, high, names)
    # Empty list items are dropped, `?` is `*` (also where it decides how the day fields
    # combine), and a number may carry a `+`, as robfig/cron and strconv.Atoi read them.
    expression = " ".join(",".join(parts) for parts in lists)
    return expression.replace("?", "*").replace("+", ""), None


def parse_schedule(spec: str, zone: tzinfo = UTC) -> Schedule:
    """A schedule in `zone`, unless it names its own with a `TZ=` prefix; ScheduleError
    with the library's message when it does not parse."""
    named, rest = _split_zone(spec)
    if named is not None:
        try:
            zone = load_zone(named)
        except ScheduleError as exc:
            raise ScheduleError(f"provided bad location {named}: {exc}") from None
    expression, every = _parse(rest)
    if expression is not None:
        try:
            CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC))
        except CronSimError:
            return Schedule(None, None, zone)
    return Schedule(expression, every, zone)


def schedule_error(spec: str) -> str | None:
    """Why `spec` does not parse as a schedule (the library's message), or None."""
    try:
        parse_schedule(spec)
    except ScheduleError as exc:
        return str(exc)
    return None
