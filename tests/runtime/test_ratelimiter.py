"""Rate limiters: per-item exponential backoff, the token bucket and their combination."""

from __future__ import annotations

import itertools

import pytest

from kubeforge._runtime.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialBackoff,
    MaxOf,
    default_controller_rate_limiter,
)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_backoff_doubles_from_five_milliseconds() -> None:
    limiter = ItemExponentialBackoff()
    delays = [limiter.when("a") for _ in range(6)]
    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08, 0.16])
    assert limiter.num_requeues("a") == 6


def test_backoff_is_per_item() -> None:
    limiter = ItemExponentialBackoff()
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == pytest.approx(0.005)
    assert limiter.num_requeues("a") == 2
    assert limiter.num_requeues("b") == 1
    assert limiter.num_requeues("never") == 0


def test_backoff_caps_at_1000_seconds() -> None:
    limiter = ItemExponentialBackoff(base=0.005, cap=1000)
    delays = [limiter.when("a") for _ in range(25)]
    # 0.005 * 2**17 = 655.36 s is the last uncapped delay; 2**18 would exceed the cap.
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * 7
    assert all(earlier <= later for earlier, later in itertools.pairwise(delays))


def test_backoff_survives_very_many_failures() -> None:
    limiter = ItemExponentialBackoff()
    for _ in range(5000):
        delay = limiter.when("a")
    assert delay == 1000.0
    assert limiter.num_requeues("a") == 5000


def test_forget_resets_the_backoff() -> None:
    limiter = ItemExponentialBackoff()
    for _ in range(10):
        limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)
    limiter.forget("unknown")  # forgetting an unknown item is harmless


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="base"):
        ItemExponentialBackoff(base=0)


def test_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = ManualClock()
    bucket = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    # Reservations on an empty bucket queue up one token interval apart.
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    clock.advance(0.2)
    assert bucket.when("z") == pytest.approx(0.1)
    clock.advance(100)  # a long pause refills only up to the burst size
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("again") == pytest.approx(0.1)


def test_bucket_does_not_track_items() -> None:
    bucket = BucketRateLimiter(clock=ManualClock())
    bucket.when("a")
    bucket.forget("a")
    assert bucket.num_requeues("a") == 0


def test_max_of_takes_the_longest_delay() -> None:
    clock = ManualClock()
    limiter = MaxOf(ItemExponentialBackoff(), BucketRateLimiter(qps=10, burst=1, clock=clock))
    assert limiter.when("a") == pytest.approx(0.005)  # the bucket still had its token
    assert limiter.when("a") == pytest.approx(0.1)  # the bucket is now the slower one
    clock.advance(10)
    assert limiter.when("a") == pytest.approx(0.02)  # backoff kept counting meanwhile
    assert limiter.num_requeues("a") == 3
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MaxOf()


def test_default_controller_rate_limiter_combines_backoff_and_bucket() -> None:
    clock = ManualClock()
    limiter = default_controller_rate_limiter(clock=clock)
    delays = [limiter.when(f"item-{i}") for i in range(101)]
    assert delays[:100] == [pytest.approx(0.005)] * 100
    assert delays[100] == pytest.approx(0.1)
