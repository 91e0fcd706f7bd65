"""client-go's event correlator (_runtime/eventcorrelation.py): similar events aggregated from
the tenth distinct note within ten minutes, and 25 events per source and object, then one
every five minutes. The recorder that uses it is tested against the API server in
test_events.py."""

from __future__ import annotations

from kubeforge._runtime.eventcorrelation import AGGREGATE_PREFIX, Correlated, EventCorrelator

POD = ("kubelet", "node-1", ("v1", "Pod", "default", "web-1", "uid-1"))
OTHER_POD = ("kubelet", "node-1", ("v1", "Pod", "default", "web-2", "uid-2"))
OTHER_NODE = ("kubelet", "node-2", ("v1", "Pod", "default", "web-1", "uid-1"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def aggregated(
    correlator: EventCorrelator,
    source: tuple[str, str, tuple[str, ...]],
    type: str,
    reason: str,
    note: str,
) -> bool:
    correlated = correlator.correlate(source, type, reason, note)
    assert correlated is not None
    return correlated.aggregate


def test_similar_events_are_aggregated_from_the_tenth_distinct_note() -> None:
    correlator = EventCorrelator(Clock())
    seen = [correlator.correlate(POD, "Normal", "Created", f"note {i}") for i in range(12)]
    assert seen[:9] == [Correlated(f"note {i}", aggregate=False) for i in range(9)]
    assert seen[9] == Correlated(AGGREGATE_PREFIX + "note 9", aggregate=True)
    assert seen[10] == Correlated(AGGREGATE_PREFIX + "note 10", aggregate=True)
    assert seen[11] == Correlated(AGGREGATE_PREFIX + "note 11", aggregate=True)


def test_aggregation_is_per_object_type_and_reason_and_forgets_after_ten_quiet_minutes() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock)
    for i in range(9):
        correlator.correlate(POD, "Normal", "Created", f"note {i}")
    # Another reason, type, object or source is not similar.
    assert not aggregated(correlator, POD, "Normal", "Started", "x")
    assert not aggregated(correlator, POD, "Warning", "Created", "x")
    assert not aggregated(correlator, OTHER_POD, "Normal", "Created", "x")
    assert not aggregated(correlator, OTHER_NODE, "Normal", "Created", "x")
    # The same note again is not a new distinct one.
    assert not aggregated(correlator, POD, "Normal", "Created", "note 0")
    clock.now += 601
    assert correlator.correlate(POD, "Normal", "Created", "note 9") == Correlated(
        "note 9", aggregate=False
    )


def test_a_source_may_burst_25_events_about_an_object_then_one_every_five_minutes() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock)
    kept = [correlator.correlate(POD, "Normal", "Tick", "same") for _ in range(30)]
    assert all(c is not None for c in kept[:25])
    assert kept[25:] == [None] * 5
    # Others keep their own budgets.
    assert correlator.correlate(OTHER_POD, "Normal", "Tick", "same") is not None
    assert correlator.correlate(OTHER_NODE, "Normal", "Tick", "same") is not None
    clock.now += 299
    assert correlator.correlate(POD, "Normal", "Tick", "same") is None
    clock.now += 1
    assert correlator.correlate(POD, "Normal", "Tick", "same") is not None
    assert correlator.correlate(POD, "Normal", "Tick", "same") is None
    clock.now += 25 * 300  # refilled, but no more than the burst
    assert (
        sum(correlator.correlate(POD, "Normal", "Tick", "same") is not None for _ in range(30))
        == 25
    )


def test_the_records_kept_are_bounded() -> None:
    correlator = EventCorrelator(Clock(), cache_size=2)
    for _ in range(25):
        assert correlator.correlate(POD, "Normal", "Tick", "same") is not None
    assert correlator.correlate(POD, "Normal", "Tick", "same") is None
    # Two other objects push the first one's budget out: it starts full again.
    correlator.correlate(OTHER_POD, "Normal", "Tick", "same")
    correlator.correlate(OTHER_NODE, "Normal", "Tick", "same")
    assert correlator.correlate(POD, "Normal", "Tick", "same") is not None
