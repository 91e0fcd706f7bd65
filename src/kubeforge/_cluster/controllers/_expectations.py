"""Expectations: the pod creations and deletions a controller asked for and its cache has not
shown yet, fed from pod events."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeforge import clock
from kubeforge._api.machinery.access import controller_ref, is_deleting, name_of, namespace_of
from kubeforge._runtime.informer import HandlerFuncs
from kubeforge._runtime.manager import Manager

__all__ = ["EXPECTATIONS_TTL", "Expectations", "observe_pods"]

Obj = dict[str, Any]

# Go clients give up on an expectation after five minutes (ExpectationsTimeout).
EXPECTATIONS_TTL = 300.0


@dataclass
class _Record:
    creations: int = 0
    deletions: set[str] = field(default_factory=set)
    since: float = field(default_factory=clock.monotonic)


class Expectations:
    """Creations and deletions a controller asked for that its cache has not shown yet
    (client-go's ControllerExpectations, deletions tracked by pod name).

    A controller acting on a cache that lags its own writes would create or delete twice;
    it skips managing an owner until the events for its last writes arrived (or five
    minutes passed, in case an event was lost).
    """

    def __init__(self, ttl: float = EXPECTATIONS_TTL) -> None:
        self.ttl = ttl
        self._records: dict[str, _Record] = {}

    def expect(self, key: str, creations: int, deletions: Iterable[str]) -> None:
        """Creations and deletions asked for at once (SetExpectations)."""
        self._records[key] = _Record(creations=creations, deletions=set(deletions))

    def expect_creations(self, key: str, count: int) -> None:
        self._records[key] = _Record(creations=count)

    def expect_deletions(self, key: str, names: Iterable[str]) -> None:
        self._records[key] = _Record(deletions=set(names))

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.creations -= 1

    def deletion_observed(self, key: str, name: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.deletions.discard(name)

    def satisfied(self, key: str) -> bool:
        record = self._records.get(key)
        if record is None:
            return True
        if record.creations <= 0 and not record.deletions:
            return True
        return clock.monotonic() - record.since > self.ttl

    def remaining_wait(self, key: str) -> float:
        """Seconds until an unmet expectation of `key` expires (0 when met or none)."""
        record = self._records.get(key)
        if record is None or self.satisfied(key):
            return 0.0
        return max(self.ttl - (clock.monotonic() - record.since), 0.0)

    def forget(self, key: str) -> None:
        self._records.pop(key, None)


def observe_pods(
    manager: Manager,
    owner_kind: str,
    expectations: Expectations,
    on_update: Callable[[Obj, Obj], None] | None = None,
    on_delete: Callable[[Obj], None] | None = None,
) -> None:
    """Feed `expectations` from pod events of pods controlled by an `owner_kind` object."""

    def owner_key(pod: Mapping[str, Any]) -> str | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != owner_kind:
            return None
        return f"{namespace_of(pod)}/{ref.get('name')}"

    def added(pod: Obj, _initial: bool) -> None:
        key = owner_key(pod)
        if key is None:
            return
        if is_deleting(pod):
            # A pod first seen already deleting was not one of ours being created.
            expectations.deletion_observed(key, name_of(pod))
        else:
            expectations.creation_observed(key)

    def updated(old: Obj, new: Obj) -> None:
        key = owner_key(new)
        if key is not None and is_deleting(new) and not is_deleting(old):
            expectations.deletion_observed(key, name_of(new))
        if on_update is not None:
            on_update(old, new)

    def deleted(pod: Obj) -> None:
        key = owner_key(pod)
        if key is not None:
            expectations.deletion_observed(key, name_of(pod))
        if on_delete is not None:
            on_delete(pod)

    informer = manager.cache.informer_for("v1/Pod")
    informer.add_handler(HandlerFuncs(add=added, update=updated, delete=deleted))
