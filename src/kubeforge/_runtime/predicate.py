"""Event filters: which changes are worth a reconcile.

Predicates see objects as dicts (what the informer holds). An update from an object to
itself with the same resourceVersion is a resync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge._api.machinery.access import meta_of
from kubeforge._api.machinery.selectors import LabelSelector

__all__ = [
    "AnnotationsChanged",
    "Funcs",
    "GenerationChanged",
    "LabelSelectorPredicate",
    "LabelsChanged",
    "Predicate",
    "ResourceVersionChanged",
    "all_of",
    "any_of",
    "negate",
]

Obj = Mapping[str, Any]


class Predicate:
    """Accepts every event; subclasses narrow it down."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True

    def generic(self, obj: Obj) -> bool:
        return True


@dataclass
class Funcs(Predicate):
    """A predicate from optional functions (a missing one accepts)."""

    on_create: Callable[[Obj], bool] | None = None
    on_update: Callable[[Obj, Obj], bool] | None = None
    on_delete: Callable[[Obj], bool] | None = None
    on_generic: Callable[[Obj], bool] | None = None

    def create(self, obj: Obj) -> bool:
        return self.on_create is None or self.on_create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self.on_update is None or self.on_update(old, new)

    def delete(self, obj: Obj) -> bool:
        return self.on_delete is None or self.on_delete(obj)

    def generic(self, obj: Obj) -> bool:
        return self.on_generic is None or self.on_generic(obj)


class GenerationChanged(Predicate):
    """Updates only when metadata.generation changed: spec changes, not status or metadata
    edits (and not resyncs)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return meta_of(old).get("generation") != meta_of(new).get("generation")


class ResourceVersionChanged(Predicate):
    """Updates only when the resourceVersion changed (drops resyncs)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return meta_of(old).get("resourceVersion") != meta_of(new).get("resourceVersion")


class LabelsChanged(Predicate):
    """Updates only when labels changed."""

    def update(self, old: Obj, new: Obj) -> bool:
        return (meta_of(old).get("labels") or {}) != (meta_of(new).get("labels") or {})


class AnnotationsChanged(Predicate):
    """Updates only when annotations changed."""

    def update(self, old: Obj, new: Obj) -> bool:
        return (meta_of(old).get("annotations") or {}) != (meta_of(new).get("annotations") or {})


class LabelSelectorPredicate(Predicate):
    """Events for objects whose labels match a selector."""

    def __init__(self, selector: str | LabelSelector) -> None:
        self.selector = LabelSelector.parse(selector) if isinstance(selector, str) else selector

    def _match(self, obj: Obj) -> bool:
        return self.selector.matches(meta_of(obj).get("labels"))

    def create(self, obj: Obj) -> bool:
        return self._match(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._match(new)

    def delete(self, obj: Obj) -> bool:
        return self._match(obj)

    def generic(self, obj: Obj) -> bool:
        return self._match(obj)


@dataclass
class _All(Predicate):
    parts: tuple[Predicate, ...]

    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.parts)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.parts)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.parts)

    def generic(self, obj: Obj) -> bool:
        return all(p.generic(obj) for p in self.parts)


@dataclass
class _Any(Predicate):
    parts: tuple[Predicate, ...]

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.parts)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.parts)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.parts)

    def generic(self, obj: Obj) -> bool:
        return any(p.generic(obj) for p in self.parts)


@dataclass
class _Not(Predicate):
    part: Predicate

    def create(self, obj: Obj) -> bool:
        return not self.part.create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not self.part.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.part.delete(obj)

    def generic(self, obj: Obj) -> bool:
        return not self.part.generic(obj)


def all_of(*predicates: Predicate) -> Predicate:
    """Accepts an event when every predicate does."""
    return _All(predicates)


def any_of(*predicates: Predicate) -> Predicate:
    """Accepts an event when any predicate does."""
    return _Any(predicates)


def negate(predicate: Predicate) -> Predicate:
    """Accepts what `predicate` rejects."""
    return _Not(predicate)
