"""Kubernetes timestamps: metav1.Time and MicroTime strings, and reading RFC 3339 back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubeforge._api.machinery.timestamps import (
    format_micro_time,
    format_nano_time,
    format_time,
    now_micro_time,
    now_rfc3339,
    parse_time,
    parse_time_or_none,
)


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


@pytest.mark.parametrize("value", [None, "", 5, "yesterday", "2024-05-01"])
def test_parse_time_or_none_reads_nothing_from_a_bad_value(value: object) -> None:
    assert parse_time_or_none(value) is None


def test_formats_are_utc_with_the_precision_of_their_type() -> None:
    moment = datetime(2024, 5, 1, 14, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(moment) == "2024-05-01T12:30:00Z"
    assert format_micro_time(moment) == "2024-05-01T12:30:00.123456Z"
    assert format_time(datetime(2024, 5, 1, 12)) == "2024-05-01T12:00:00Z"  # naive is UTC
    nanos = int(datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()) * 10**9 + 7
    assert format_nano_time(nanos) == "2024-05-01T12:00:00.000000007Z"


def test_now_reads_back() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    seconds = parse_time(now_rfc3339())
    micro = parse_time(now_micro_time())
    after = datetime.now(UTC)
    assert before <= seconds <= after
    assert before <= micro <= after


def test_now_is_the_process_clocks_to_the_microsecond() -> None:
    from kubeforge.clock import VirtualClock, use

    virtual = VirtualClock(datetime(2031, 2, 3, 4, 5, 6, 123_457, tzinfo=UTC))
    with use(virtual):
        assert now_micro_time() == "2031-02-03T04:05:06.123457Z"
        assert now_rfc3339() == "2031-02-03T04:05:06Z"
        assert parse_time(now_micro_time()) == virtual.now()
