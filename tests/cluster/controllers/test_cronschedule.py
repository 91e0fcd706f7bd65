"""CronJob schedules: robfig/cron's grammar and times (kubeforge._api.machinery.cron), and
when a CronJob is due as pkg/controller/cronjob/utils.go reckons it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubeforge._api.machinery.cron import ScheduleError, load_zone, parse_schedule
from kubeforge._cluster.controllers._cronschedule import (
    Missed,
    cronjob_schedule,
    job_name,
    most_recent_schedule_time,
    next_schedule_delay,
)
from kubeforge._cluster.controllers.cronjob import SCHEDULED_TIMESTAMP, job_from_template


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def cronjob(schedule: str, created: str = "2024-01-01T00:00:30Z", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "ns", "uid": "u-1", "creationTimestamp": created},
        "spec": {"schedule": schedule, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "after", "expected"),
    [
        ("*/15 * * * *", "2024-01-01T10:07:00Z", "2024-01-01T10:15:00Z"),
        # Strictly after, whole seconds: a time on the schedule gives the next one.
        ("* * * * *", "2024-01-01T10:07:00Z", "2024-01-01T10:08:00Z"),
        ("* * * * *", "2024-01-01T10:07:59.900Z", "2024-01-01T10:08:00Z"),
        ("@hourly", "2024-01-01T10:07:00Z", "2024-01-01T11:00:00Z"),
        ("@weekly", "2024-01-03T00:00:00Z", "2024-01-07T00:00:00Z"),
        ("@yearly", "2024-03-01T00:00:00Z", "2025-01-01T00:00:00Z"),
        ("0 12 * JAN,jul mon", "2024-01-02T00:00:00Z", "2024-01-08T12:00:00Z"),
        # Both day fields restricted: either may match (the 15th was a Monday's rival).
        ("0 0 15 * fri", "2024-01-06T00:00:00Z", "2024-01-12T00:00:00Z"),
        # A day field starting with * (or ?) restricts with AND, as robfig/cron reads it.
        ("0 0 */2 * 1", "2024-01-01T00:00:30Z", "2024-01-15T00:00:00Z"),
        ("0 0 ? * 1", "2024-01-01T00:00:30Z", "2024-01-08T00:00:00Z"),
        # Empty list items and a `+` sign are read as robfig/cron reads them.
        ("1,,2 * * * *", "2024-01-01T10:00:00Z", "2024-01-01T10:01:00Z"),
        ("+5 * * * *", "2024-01-01T10:00:00Z", "2024-01-01T10:05:00Z"),
        ("@every 90s", "2024-01-01T10:00:00.5Z", "2024-01-01T10:01:30Z"),
        ("@every 1ms", "2024-01-01T10:00:00Z", "2024-01-01T10:00:01Z"),
        ("TZ=Asia/Tokyo 0 9 * * *", "2024-01-01T01:00:00Z", "2024-01-02T00:00:00Z"),
    ],
)
def test_next_times(spec: str, after: str, expected: str) -> None:
    assert parse_schedule(spec).next_after(at(after)) == at(expected)


def test_a_zone_moves_the_times_and_a_prefix_wins_over_it() -> None:
    tokyo = load_zone("Asia/Tokyo")
    schedule = parse_schedule("0 9 * * *", tokyo)
    assert schedule.next_after(at("2024-01-01T01:00:00Z")) == at("2024-01-02T00:00:00Z")
    in_prefix = parse_schedule("CRON_TZ=UTC 0 9 * * *", tokyo)
    assert in_prefix.next_after(at("2024-01-01T01:00:00Z")) == at("2024-01-01T09:00:00Z")


def test_fields_no_date_has_never_come() -> None:
    assert parse_schedule("0 0 30 2 *").next_after(at("2024-01-01T00:00:00Z")) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("@every", "unrecognized descriptor: @every"),
        ("TZ=Mars/Olympus * * * * *", "provided bad location Mars/Olympus: unknown time zone "
         "Mars/Olympus"),
    ],
)  # fmt: skip
def test_parse_errors(spec: str, message: str) -> None:
    with pytest.raises(ScheduleError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_schedule(spec)


def test_unknown_zones() -> None:
    for name in ("Mars/Olympus", "../etc/passwd", "/etc/localtime"):
        with pytest.raises(ScheduleError, match=f"unknown time zone {name}"):
            load_zone(name)
    assert load_zone("") is UTC


# -- when a CronJob is due -------------------------------------------------------------------


def test_nothing_due_before_the_first_time() -> None:
    cj = cronjob("*/5 * * * *")
    due = most_recent_schedule_time(
        cj, at("2024-01-01T00:04:00Z"), cronjob_schedule(cj), with_deadline=True
    )
    assert (due.most_recent, due.missed) == (None, Missed.NONE)
    # Wake just after 00:05 (a tenth of a second late, as upstream pads).
    assert next_schedule_delay(cj, at("2024-01-01T00:04:00Z"), cronjob_schedule(cj)) == 60.1


def test_only_the_most_recent_missed_time_is_due() -> None:
    cj = cronjob("*/5 * * * *")
    now = at("2024-01-01T00:17:00Z")
    due = most_recent_schedule_time(cj, now, cronjob_schedule(cj), with_deadline=True)
    assert (due.most_recent, due.missed) == (at("2024-01-01T00:15:00Z"), Missed.FEW)
    # After a start, counting resumes from it.
    cj["status"] = {"lastScheduleTime": "2024-01-01T00:15:00Z"}
    due = most_recent_schedule_time(cj, now, cronjob_schedule(cj), with_deadline=True)
    assert due.most_recent is None
    assert next_schedule_delay(cj, now, cronjob_schedule(cj)) == pytest.approx(180.1)


def test_too_many_missed_times_and_the_starting_deadline() -> None:
    cj = cronjob("* * * * *")
    now = at("2024-01-01T03:00:45Z")
    due = most_recent_schedule_time(cj, now, cronjob_schedule(cj), with_deadline=True)
    assert (due.most_recent, due.missed) == (at("2024-01-01T03:00:00Z"), Missed.MANY)
    # A deadline counts from no earlier than that long ago: 03:00 is out of reach.
    cj["spec"]["startingDeadlineSeconds"] = 30
    due = most_recent_schedule_time(cj, now, cronjob_schedule(cj), with_deadline=True)
    assert (due.most_recent, due.missed) == (None, Missed.NONE)
    # The wake-up ignores the deadline: the next minute.
    assert next_schedule_delay(cj, now, cronjob_schedule(cj)) == pytest.approx(15.1)


def test_irregular_schedules_find_their_exact_most_recent_time() -> None:
    cj = cronjob("30 6-16/4 * * 1-5")  # 6:30, 10:30 and 14:30 on weekdays
    now = at("2024-01-08T11:00:00Z")  # a Monday, after a weekend
    due = most_recent_schedule_time(cj, now, cronjob_schedule(cj), with_deadline=False)
    assert due.most_recent == at("2024-01-08T10:30:00Z")


def test_a_schedule_that_never_comes_is_an_error() -> None:
    cj = cronjob("0 0 30 2 *")
    with pytest.raises(ScheduleError, match="less than 1 second"):
        most_recent_schedule_time(
            cj, at("2024-06-01T00:00:00Z"), cronjob_schedule(cj), with_deadline=True
        )
    assert next_schedule_delay(cj, at("2024-06-01T00:00:00Z"), cronjob_schedule(cj)) is None


def test_jobs_are_named_by_their_minute_and_carry_the_zones_time() -> None:
    scheduled = at("2024-01-01T00:05:00Z")
    assert job_name("tick", scheduled) == "tick-28401125"
    cj = cronjob("5 * * * *", timeZone="Europe/Paris")
    cj["spec"]["jobTemplate"] = {
        "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
        "spec": {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "Never"}}},
    }
    job = job_from_template(cj, scheduled)
    assert job["metadata"] == {
        "name": "tick-28401125",
        "namespace": "ns",
        "labels": {"team": "a"},
        "annotations": {"note": "x", SCHEDULED_TIMESTAMP: "2024-01-01T01:05:00+01:00"},
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": "tick",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    del cj["spec"]["timeZone"]
    assert (
        job_from_template(cj, scheduled)["metadata"]["annotations"][SCHEDULED_TIMESTAMP]
        == "2024-01-01T00:05:00Z"
    )


def test_delays_are_measured_from_now() -> None:
    cj = cronjob("* * * * *")
    now = at("2024-01-01T00:00:58.500Z")
    delay = next_schedule_delay(cj, now, cronjob_schedule(cj))
    assert delay == pytest.approx(1.6)
    assert now + timedelta(seconds=delay or 0) > at("2024-01-01T00:01:00Z")
