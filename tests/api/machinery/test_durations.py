"""Human durations and RFC 3339 timestamps, as kubectl and table cells print them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kubeforge._api.machinery.durations import age, human_duration, short_human_duration
from tests.support.tables import NOW, ts


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


def test_age() -> None:
    assert age(ts(90), NOW) == "90s"
    assert age(None, NOW) == "<unknown>"
    assert age("", NOW) == "<unknown>"
