"""Human durations and RFC 3339 timestamps, as kubectl and table cells print them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubeforge.api.durations import age, human_duration, parse_time, short_human_duration
from tests.unit.table_objects import NOW, ts


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-2, "<invalid>"),
        (-1.9, "0s"),
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (9 * 60 + 59, "9m59s"),
        (605, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 20 * 60 + 7, "5h20m"),
        (8 * 3600 + 59 * 60, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (7 * 86400 + 23 * 3600, "7d23h"),
        (8 * 86400 + 5 * 3600, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (740 * 86400, "2y10d"),
        (8 * 365 * 86400 + 100 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


def test_human_duration_accepts_timedelta() -> None:
    assert human_duration(timedelta(minutes=5, seconds=3)) == "5m3s"


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-3, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (60, "1m"),
        (3599, "59m"),
        (3600, "1h"),
        (86399, "23h"),
        (86400 * 364, "364d"),
        (86400 * 365 * 3 + 5, "3y"),
    ],
)
def test_short_human_duration(seconds: float, expected: str) -> None:
    assert short_human_duration(seconds) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00.123456789Z", datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)),
        ("2024-05-01T14:30:00+02:30", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T09:00:00.5-03:00", datetime(2024, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_parse_time(text: str, expected: datetime) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "2024-05-01", "2024-05-01 12:00:00Z", "2024-05-01T12:00:00", "2024-13-01T00:00:00Z"],
)
def test_parse_time_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


def test_age() -> None:
    assert age(ts(90), NOW) == "90s"
    assert age(None, NOW) == "<unknown>"
    assert age("", NOW) == "<unknown>"
