"""When a CronJob's jobs are due, as pkg/controller/cronjob/utils.go reckons it: the most
recent start time that has come (only that one: older missed starts are skipped), how many
were missed, and how long until the next one.

Times are aware datetimes in UTC. A CronJob without `timeZone` runs in UTC, the zone
kube-controller-manager has in kind's and most clusters' containers.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubeforge.api.machinery.access import meta_of, spec_of, status_of
from kubeforge.api.machinery.cron import Schedule, ScheduleError, load_zone, parse_schedule
from kubeforge.api.machinery.timestamps import parse_time_or_none

__all__ = [
    "NEXT_SCHEDULE_DELTA",
    "Due",
    "Missed",
    "cronjob_schedule",
    "job_name",
    "most_recent_schedule_time",
    "next_schedule_delay",
]

# Wake-ups come this much after a scheduled time, so a clock a little behind still finds
# the time come (nextScheduleDelta).
NEXT_SCHEDULE_DELTA = timedelta(milliseconds=100)
# More missed starts than this are reported as too many (and suggest a clock problem).
TOO_MANY_MISSED = 100


class Missed(enum.Enum):
    """How many start times went by unmet since the last one (missedSchedulesType)."""

    NONE = "none"
    FEW = "few"
    MANY = "many"


@dataclass(frozen=True)
class Due:
    """The schedule reckoned at one moment: where counting started, the most recent start
    time that has come (None when none has), and how many went by."""

    earliest: datetime
    most_recent: datetime | None
    missed: Missed


def cronjob_schedule(cronjob: Mapping[str, Any]) -> Schedule:
    """The CronJob's schedule in its `timeZone` (formatSchedule, then cron.ParseStandard): a
    schedule with its own `TZ=` prefix keeps it. ScheduleError when it does not parse or the
    zone is unknown."""
    spec = spec_of(cronjob)
    schedule = str(spec.get("schedule") or "")
    zone_name = spec.get("timeZone")
    if "TZ" in schedule or not isinstance(zone_name, str):
        return parse_schedule(schedule)
    return parse_schedule(schedule, load_zone(zone_name))


def _time(value: Any) -> datetime | None:
    parsed = parse_time_or_none(value)
    return parsed.astimezone(UTC) if parsed is not None else None


def _earliest(cronjob: Mapping[str, Any]) -> datetime:
    """The last scheduled time, or the CronJob's creation when it never ran."""
    last = _time(status_of(cronjob).get("lastScheduleTime"))
    if last is not None:
        return last
    created = _time(meta_of(cronjob).get("creationTimestamp"))
    return created if created is not None else datetime.fromtimestamp(0, UTC)


def most_recent_schedule_time(
    cronjob: Mapping[str, Any], now: datetime, schedule: Schedule, *, with_deadline: bool
) -> Due:
    """The most recent start time in (earliest, now] (mostRecentScheduleTime); with
    `with_deadline`, counting starts no earlier than `startingDeadlineSeconds` ago.
    ScheduleError for a schedule whose times are less than a second apart or never come."""
    earliest = _earliest(cronjob)
    deadline = spec_of(cronjob).get("startingDeadlineSeconds")
    if with_deadline and isinstance(deadline, int):
        earliest = max(earliest, now - timedelta(seconds=deadline))
    t1 = schedule.next_after(earliest)
    t2 = schedule.next_after(t1) if t1 is not None else None
    if t1 is not None and now < t1:
        return Due(earliest, None, Missed.NONE)
    if t1 is not None and t2 is not None and now < t2:
        return Due(earliest, t1, Missed.NONE)
    gap = round((t2 - t1).total_seconds()) if t1 is not None and t2 is not None else 0
    if t1 is None or t2 is None or gap < 1:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    # A rough count of the starts that went by, from the interval between the first two:
    # then the library walks the last stretch for the exact most recent one (starting one
    # interval early, for schedules whose intervals differ, like `30 6-16/4 * * 1-5`).
    missed_count = int((now - t1).total_seconds()) // gap + 1
    most_recent: datetime | None = None
    moment = schedule.next_after(t1 + timedelta(seconds=(missed_count - 2) * gap))
    while moment is not None and moment <= now:
        most_recent = moment
        moment = schedule.next_after(moment)
    missed = Missed.MANY if missed_count > TOO_MANY_MISSED else Missed.FEW
    return Due(earliest, most_recent, missed)


def next_schedule_delay(
    cronjob: Mapping[str, Any], now: datetime, schedule: Schedule
) -> float | None:
    """Seconds until the CronJob's next start time, plus NEXT_SCHEDULE_DELTA
    (nextScheduleTimeDuration); None when its schedule never comes again."""
    try:
        due = most_recent_schedule_time(cronjob, now, schedule, with_deadline=False)
    except ScheduleError:
        last = now
    else:
        if due.most_recent is not None:
            last = due.most_recent
        elif due.missed is Missed.NONE:
            last = due.earliest
        else:
            last = now
    upcoming = schedule.next_after(last)
    if upcoming is None:
        return None
    return (upcoming + NEXT_SCHEDULE_DELTA - now).total_seconds()


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>` (getJobName): the same start
    always makes the same name, so a start is never made twice."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"
