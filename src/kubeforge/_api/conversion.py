"""Several versions of one kind: a hub, spokes that convert to and from it, and lossless stashes.

    @kubeforge.resource(group="cnat.kubeforge.dev", version="v1")
    class At(kubeforge.Resource[AtSpec, AtStatus], kubeforge.Hub): ...

    @kubeforge.resource(group="cnat.kubeforge.dev", version="v1alpha1", storage=False)
    class At(kubeforge.Resource[AtSpec, AtStatus], kubeforge.Convertible[v1.At]):
        def to_hub(self) -> v1.At: ...
        @classmethod
        def from_hub(cls, hub: v1.At) -> Self: ...

controller-runtime's hub-and-spoke model (pkg/conversion: `Hub`, `Convertible` with
`ConvertTo(hub)` / `ConvertFrom(hub)`): one version is the hub, every other version (a spoke)
converts to and from it, and a conversion between two spokes goes through the hub. A spoke
names its hub as the type parameter of `Convertible`, so the hub need not know its spokes.

Conversions that drop something keep it in an annotation (`stash` / `unstash`), so that a
round trip through another version gives back the object it started from.
"""

from __future__ import annotations

import typing
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Self, TypeVar

import orjson

from kubeforge._api.machinery.names import is_qualified_name
from kubeforge._api.meta import ResourceInfo
from kubeforge._api.resource import registered_resources

__all__ = [
    "ConversionError",
    "Convertible",
    "Hub",
    "KindVersions",
    "conversion_versions",
    "convert",
    "hub_of",
    "kind_versions",
    "stash",
    "unstash",
]

HubT = TypeVar("HubT")
R = TypeVar("R")


class Hub:
    """Marks a resource class as the hub of its kind: the version every other version
    converts to and from (controller-runtime's `Hub()`)."""

    __slots__ = ()


class Convertible(Generic[HubT], metaclass=ABCMeta):
    """A version of a kind that converts to and from the hub `HubT` (a spoke).

    Both methods return new objects and may share parts of their input: the input is a
    private copy. The converted object keeps the source's metadata (at least name,
    namespace and uid); raise ConversionError to refuse a conversion with a message.
    """

    __slots__ = ()

    @abstractmethod
    def to_hub(self) -> HubT:
        """This object in the hub's version (controller-runtime's ConvertTo)."""

    @classmethod
    @abstractmethod
    def from_hub(cls, hub: HubT) -> Self:
        """An object of this version from one in the hub's version (ConvertFrom)."""


class ConversionError(Exception):
    """Refuses a conversion: the conversion webhook answers Failure with this message, which
    the API server's client sees."""


def _info(cls: type) -> ResourceInfo | None:
    info = getattr(cls, "__kubeforge__", None)
    return info if isinstance(info, ResourceInfo) else None


def _name(cls: type) -> str:
    return getattr(cls, "__qualname__", repr(cls))


def hub_of(cls: type) -> type | None:
    """The hub a Convertible class names (`Convertible[Hub]`); None for other classes.

    TypeError when a spoke does not name its hub as a class."""
    if not (isinstance(cls, type) and issubclass(cls, Convertible)):
        return None
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if typing.get_origin(base) is Convertible:
                (hub,) = typing.get_args(base)
                if not isinstance(hub, type):
                    raise TypeError(
                        f"{_name(cls)}: name the hub class as Convertible's parameter, "
                        f"e.g. Convertible[v1.{_name(cls).rpartition('.')[2]}], not {hub!r}"
                    )
                return hub
    raise TypeError(
        f"{_name(cls)}: name the hub class as Convertible's parameter, e.g. Convertible[v1.Kind]"
    )


def _is_hub(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, Hub)


@dataclass(frozen=True)
class KindVersions:
    """The versions of one convertible kind: its hub and its spokes, by version."""

    group: str
    kind: str
    hub: type
    spokes: Mapping[str, type] = field(default_factory=dict)

    @property
    def classes(self) -> dict[str, type]:
        """Every version's class by version name, the hub's included."""
        hub_version = _version_of(self.hub)
        return {hub_version: self.hub, **self.spokes}

    def class_for(self, version: str) -> type | None:
        """The class of `version`, or None when the kind has no such version."""
        return self.classes.get(version)


def _version_of(cls: type) -> str:
    info = _info(cls)
    assert info is not None
    return info.gvk.version


def _check_spoke(spoke: type, hub: type) -> None:
    """A spoke must be a resource of the hub's kind and implement both conversions."""
    spoke_info, hub_info = _info(spoke), _info(hub)
    if spoke_info is None:
        raise TypeError(
            f"{_name(spoke)} is Convertible but not a resource: decorate it with @resource"
        )
    if hub_info is None:
        raise TypeError(
            f"{_name(spoke)} converts to {_name(hub)}, which is not a resource: decorate it "
            "with @resource"
        )
    if not _is_hub(hub):
        raise TypeError(
            f"{_name(spoke)} converts to {_name(hub)}, which is not marked as the hub: "
            "add kubeforge.Hub to its bases"
        )
    same = (spoke_info.gvk.group, spoke_info.gvk.kind) == (hub_info.gvk.group, hub_info.gvk.kind)
    if not same:
        raise TypeError(
            f"{_name(spoke)} ({spoke_info.gvk}) names a hub of another kind: {_name(hub)} "
            f"({hub_info.gvk})"
        )
    missing = sorted(getattr(spoke, "__abstractmethods__", ()))
    if missing:
        raise TypeError(
            f"{_name(spoke)} is Convertible but does not implement {', '.join(missing)}"
        )


def _versions(hub: type, spokes: Iterable[type]) -> KindVersions | None:
    info = _info(hub)
    assert info is not None
    by_version: dict[str, type] = {}
    for spoke in spokes:
        _check_spoke(spoke, hub)
        version = _version_of(spoke)
        if version == info.gvk.version:
            raise ValueError(f"{_name(spoke)} and its hub {_name(hub)} are both {version}")
        if version in by_version:
            raise ValueError(
                f"{_name(by_version[version])} and {_name(spoke)} are both version {version} "
                f"of {info.gvk.kind}.{info.gvk.group}"
            )
        by_version[version] = spoke
    if not by_version:
        return None  # a hub alone is a single version: nothing to convert
    return KindVersions(info.gvk.group, info.gvk.kind, hub, by_version)


def conversion_versions(classes: Iterable[type]) -> KindVersions | None:
    """The hub and spokes among the classes of one kind's versions, or None when none of
    them is a Hub or Convertible (or the hub stands alone).

    ValueError/TypeError for a partial set, as controller-runtime's IsConvertible refuses
    one: several hubs, spokes without their hub, or a version that converts to nothing.
    """
    members = list(classes)
    hubs = [cls for cls in members if _is_hub(cls)]
    spokes = [cls for cls in members if hub_of(cls) is not None]
    if not hubs and not spokes:
        return None
    names = ", ".join(_name(cls) for cls in members)
    if len(hubs) > 1:
        raise ValueError(f"{names}: a kind has one hub, not {len(hubs)}")
    if not hubs:
        raise ValueError(
            f"{names}: {_name(spokes[0])} converts to {_name(hub_of(spokes[0]) or object)}, "
            "which is not one of these versions"
        )
    hub = hubs[0]
    for spoke in spokes:
        if hub_of(spoke) is not hub:
            raise ValueError(
                f"{names}: {_name(spoke)} converts to {_name(hub_of(spoke) or object)}, not to "
                f"this kind's hub {_name(hub)}"
            )
    loose = [cls for cls in members if cls is not hub and cls not in spokes]
    if loose:
        raise ValueError(
            f"{names}: {', '.join(_name(c) for c in loose)} neither is the hub nor converts to "
            f"it; make it kubeforge.Convertible[{_name(hub)}]"
        )
    return _versions(hub, spokes)


def kind_versions(cls: type) -> KindVersions | None:
    """The versions of `cls`'s kind (`cls` is the hub or a spoke): the hub and every
    @resource class declared Convertible to that very hub class. None when the kind does
    not convert (no hub, or a hub without spokes); TypeError/ValueError when one of those
    classes is of another kind, lacks a conversion, or repeats a version."""
    if _is_hub(cls):
        hub: type = cls
    else:
        declared = hub_of(cls)
        if declared is None:
            return None
        hub = declared
        _check_spoke(cls, hub)
    if _info(hub) is None:
        raise TypeError(f"the hub {_name(hub)} is not a resource: decorate it with @resource")
    # A project imported twice declares new classes; only the spokes of this hub count.
    return _versions(hub, [c for c in registered_resources() if c is not hub and _names(c, hub)])


def _names(candidate: type, hub: type) -> bool:
    """Whether `candidate` declares `hub` as its hub. A class that names its hub wrongly is
    reported where it is used itself, not in the conversions of every other kind."""
    try:
        return hub_of(candidate) is hub
    except TypeError:
        return False


def convert(obj: Any, to: type[R]) -> R:
    """`obj` in the version of class `to`: spoke to hub, hub to spoke, or spoke to spoke
    through the hub. `obj` is left unchanged.

    TypeError when the classes do not convert into each other or a conversion returns the
    wrong thing; ValueError when it loses the object's name, namespace or uid;
    ConversionError (and anything else) as the conversion raised it.
    """
    source = type(obj)
    source_info, target_info = _info(source), _info(to)
    if source_info is None or target_info is None:
        raise TypeError(f"cannot convert {_name(source)} to {_name(to)}: both must be resources")
    copy = obj.model_copy(deep=True)
    if source is to:
        return copy  # type: ignore[no-any-return]
    source_hub, target_hub = hub_of(source), hub_of(to)
    if _is_hub(source) and target_hub is source:
        result = to.from_hub(copy)  # type: ignore[attr-defined]
    elif _is_hub(to) and source_hub is to:
        result = copy.to_hub()
    elif source_hub is not None and source_hub is target_hub:
        hub = copy.to_hub()
        _check_result(hub, source_hub, obj, f"{_name(source)}.to_hub()")
        result = to.from_hub(hub)  # type: ignore[attr-defined]
    else:
        raise TypeError(
            f"{_name(source)} ({source_info.gvk}) does not convert to {_name(to)} "
            f"({target_info.gvk}): neither is the other's hub, nor do they share one"
        )
    what = f"{_name(source)}.to_hub()" if _is_hub(to) else f"{_name(to)}.from_hub()"
    _check_result(result, to, obj, what)
    result.api_version = target_info.gvk.api_version
    result.kind = target_info.gvk.kind
    return result  # type: ignore[no-any-return]


def _check_result(result: Any, expected: type, source: Any, what: str) -> None:
    returned: type[Any] = type(result)
    if returned is not expected:
        raise TypeError(f"{what} returned {returned.__name__}, not {_name(expected)}")
    before, after = source.metadata, result.metadata
    for attr in ("name", "namespace", "uid"):
        if getattr(before, attr) != getattr(after, attr):
            raise ValueError(
                f"{what} changed metadata.{attr} from {getattr(before, attr)!r} to "
                f"{getattr(after, attr)!r}: give the converted object the source's metadata"
            )


# Stashing what a version cannot hold -----------------------------------------------------------


def _check_key(annotation: str) -> None:
    problems = is_qualified_name(annotation)
    if problems:
        raise ValueError(f"{annotation!r} is not an annotation key: {'; '.join(problems)}")


def stash(obj: Any, annotation: str, value: Any) -> None:
    """Keep `value` (anything JSON can hold) in `obj`'s annotation `annotation`, as JSON, for
    a later conversion back to restore with `unstash`."""
    _check_key(annotation)
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    annotations = dict(obj.metadata.annotations or {})
    annotations[annotation] = encoded
    obj.metadata.annotations = annotations


def unstash(obj: Any, annotation: str) -> Any:
    """Take back what `stash` kept in `annotation`: the value, with the annotation removed
    from `obj` (metadata.annotations becomes None when nothing else is left); None when there
    is no such annotation. ConversionError when the annotation does not hold JSON."""
    _check_key(annotation)
    annotations = dict(obj.metadata.annotations or {})
    if annotation not in annotations:
        return None
    raw = annotations.pop(annotation)
    obj.metadata.annotations = annotations or None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConversionError(
            f"the annotation {annotation} does not hold the JSON a conversion stashed there: {exc}"
        ) from None
