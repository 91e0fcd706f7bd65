"""Keeping recorded events from flooding the API server: client-go's EventCorrelator.

Every recorder kube's components and controller-runtime hand out passes its events through
an EventCorrelator (client-go tools/record/events_cache.go) before writing them, and so does
`EventRecorder.record` here:

- **Aggregation.** Events one source records about one object with the same type and reason
  but different notes are similar. Once ten different notes have been seen within ten
  minutes of each other, each further similar event is recorded as one aggregate event,
  its note `(combined from similar events): <note>`, which repeats as a series (its count
  rising) instead of a new Event for every note. A ReplicaSet creating a thousand pods
  writes nine "Created pod: ..." events and then counts the rest in one.
- **Spam filter.** A source may record a burst of 25 events about one object, then one
  every five minutes (a token bucket per source and object, starting full); events beyond
  that are dropped. Repeats counted in a series use the budget too.

A source is the recorder's controller and instance (an event's Source component and host).
At most `cache_size` objects' records are kept for each of the two, the least recently
used forgotten first, as upstream's LRU caches of 4096 entries.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

__all__ = [
    "AGGREGATE_PREFIX",
    "Correlated",
    "EventCorrelator",
]

AGGREGATE_PREFIX: Final = "(combined from similar events): "
# Upstream's defaults (defaultAggregateMaxEvents, defaultAggregateIntervalInSeconds,
# defaultSpamBurst, defaultSpamQPS, maxLruCacheEntries).
MAX_SIMILAR: Final = 10
SIMILAR_WITHIN: Final = 600.0
SPAM_BURST: Final = 25
SPAM_RATE: Final = 1 / 300
CACHE_SIZE: Final = 4096

K = TypeVar("K")
V = TypeVar("V")
# (source component, source host, the object's identity)
ObjectKey = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Correlated:
    """What to record: the note, and whether it is the aggregate of similar events (which
    repeats as one series whatever the note)."""

    note: str
    aggregate: bool


@dataclass(slots=True)
class _Similar:
    notes: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class EventCorrelator:
    """Aggregates similar events and filters spam for one recorder (see the module)."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        cache_size: int = CACHE_SIZE,
        max_similar: int = MAX_SIMILAR,
        similar_within: float = SIMILAR_WITHIN,
        burst: int = SPAM_BURST,
        rate: float = SPAM_RATE,
    ) -> None:
        self._clock = clock
        self.cache_size = max(1, cache_size)
        self.max_similar = max_similar
        self.similar_within = similar_within
        self.burst = burst
        self.rate = rate
        self._similar: OrderedDict[tuple[ObjectKey, str, str], _Similar] = OrderedDict()
        self._buckets: OrderedDict[ObjectKey, _Bucket] = OrderedDict()

    def correlate(self, source: ObjectKey, type: str, reason: str, note: str) -> Correlated | None:
        """What to record for an event of `source` (who records it, about which object);
        None when the spam filter drops it."""
        now = self._clock()
        correlated = self._aggregate((source, type, reason), note, now)
        return correlated if self._allow(source, now) else None

    def _aggregate(self, key: tuple[ObjectKey, str, str], note: str, now: float) -> Correlated:
        # As EventAggregator.EventAggregate: the notes seen lately, reset after a quiet spell.
        similar = _lru_get(self._similar, key)
        if similar is None or now - similar.last > self.similar_within:
            similar = _Similar()
        similar.notes.add(note)
        similar.last = now
        _lru_put(self._similar, key, similar, self.cache_size)
        if len(similar.notes) < self.max_similar:
            return Correlated(note, aggregate=False)
        # Kept below the maximum, so every further new note is aggregated too.
        similar.notes.pop()
        return Correlated(AGGREGATE_PREFIX + note, aggregate=True)

    def _allow(self, source: ObjectKey, now: float) -> bool:
        # As EventSourceObjectSpamFilter.Filter: a token bucket per source and object.
        bucket = _lru_get(self._buckets, source)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.rate)
            bucket.last = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        _lru_put(self._buckets, source, bucket, self.cache_size)
        return allowed


def _lru_get(cache: OrderedDict[K, V], key: K) -> V | None:
    value = cache.get(key)
    if value is not None:
        cache.move_to_end(key)
    return value


def _lru_put(cache: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)
