"""Lists: selectors, resourceVersion semantics and pagination with continue tokens.

Objects a conversion webhook converts are filtered in the version asked for, as
kube-apiserver filters them (its watch cache for each version holds them converted): when
the selectors may read something a conversion can change (labels, fields other than
metadata.name and metadata.namespace), `list_converted` converts the candidates first.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from kubeforge._api.machinery.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
)
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.store import Expired, Revisions, StoredObject
from kubeforge._apiserver.types.resource import ResourceType

__all__ = [
    "ListOptions",
    "ListResult",
    "Selection",
    "list_converted",
    "list_objects",
    "parse_resource_version",
]

_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)

Predicate = Callable[[dict[str, Any]], bool]
# Stored objects to the version a request asks for, in order (a conversion webhook call).
BatchConverter = Callable[[list[StoredObject]], Awaitable[list[dict[str, Any]]]]
_INVARIANT_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def parse_resource_version(value: str | None) -> int | None:
    """None for unset/empty, else the integer revision (400 when not a number)."""
    if value is None or value == "":
        return None
    try:
        rv = int(value)
    except ValueError:
        raise StatusError.bad_request(f"invalid resource version: {value}") from None
    if rv < 0:
        raise StatusError.bad_request(f"invalid resource version: {value}")
    return rv


@dataclass(frozen=True)
class Selection:
    """Label and field selectors of a list or watch, checked against the type."""

    labels: LabelSelector
    fields: FieldSelector
    field_paths: Mapping[str, str]  # selectable field name -> dotted path in the object

    @classmethod
    def parse(cls, rt: ResourceType, query: Mapping[str, str]) -> Selection:
        try:
            labels = LabelSelector.parse(query.get("labelSelector") or "")
        except SelectorError as exc:
            raise StatusError.bad_request(str(exc)) from None
        try:
            fields = FieldSelector.parse(query.get("fieldSelector") or "")
        except SelectorError as exc:
            raise StatusError.bad_request(str(exc)) from None
        paths = selectable_fields(rt)
        for name in fields.fields:
            if name not in paths:
                known = ", ".join(f'"{f}"' for f in paths)
                raise StatusError.bad_request(
                    f'Unable to find "{rt.qualified()}" that match label selector '
                    f'"{query.get("labelSelector") or ""}", field selector '
                    f'"{query.get("fieldSelector") or ""}": "{name}" is not a known field '
                    f"selector: only {known}"
                )
        return cls(labels, fields, paths)

    @property
    def empty(self) -> bool:
        return self.labels.empty and self.fields.empty

    @property
    def version_invariant(self) -> bool:
        """Whether the selectors read only what no conversion may change (a conversion
        webhook may change labels, and a version's fields are its own)."""
        return self.labels.empty and all(f in _INVARIANT_FIELDS for f in self.fields.fields)

    def predicate(self) -> Predicate | None:
        """A filter for objects, or None when everything matches."""
        if self.empty:
            return None
        labels, fields, paths = self.labels, self.fields, self.field_paths

        def getter(obj: Mapping[str, Any], name: str) -> str | None:
            return field_value(obj, paths[name])

        def matches(obj: dict[str, Any]) -> bool:
            if not labels.empty:
                meta = obj.get("metadata")
                if not labels.matches(meta.get("labels") if isinstance(meta, dict) else None):
                    return False
            return fields.empty or fields.matches(obj, getter)

        return matches


def selectable_fields(rt: ResourceType) -> dict[str, str]:
    """Field selector names the type supports, with the object path each reads."""
    paths = {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}
    renamed = rt.extras.get("field_paths", {})
    for name in rt.field_selectors:
        paths[name] = renamed.get(name, name)
    for field in rt.extras.get("selectable_fields", ()):
        name = field.lstrip(".")
        paths[name] = name
    return paths


@dataclass(frozen=True)
class ListOptions:
    """The list-related query parameters."""

    limit: int
    continue_token: str | None
    resource_version: int | None
    exact: bool

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> ListOptions:
        raw_limit = query.get("limit") or "0"
        try:
            limit = max(int(raw_limit), 0)
        except ValueError:
            raise StatusError.bad_request(f"invalid limit: {raw_limit}") from None
        token = query.get("continue") or None
        rv_text = query.get("resourceVersion")
        rv = parse_resource_version(rv_text)
        match = query.get("resourceVersionMatch") or ""
        if match and match not in ("Exact", "NotOlderThan"):
            raise StatusError.bad_request(
                f"resourceVersionMatch: Unsupported value: {match!r}: supported values: "
                '"Exact", "NotOlderThan"'
            )
        if token and match:
            raise StatusError.bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when "
                "continue is provided"
            )
        if token and rv not in (None, 0):
            raise StatusError.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        if match and rv is None:
            raise StatusError.bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                "resourceVersion is provided"
            )
        if match == "Exact" and rv == 0:
            raise StatusError.bad_request(
                'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
                'resourceVersion "0"'
            )
        # A non-zero resourceVersion with a limit (legacy) or Exact means exactly that revision.
        exact = rv not in (None, 0) and (match == "Exact" or (not match and limit > 0))
        return cls(limit, token, rv, exact)


@dataclass
class ListResult:
    """One page of a list."""

    items: list[StoredObject]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


def _encode_token(rv: int, start: tuple[str, str]) -> str:
    payload = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(start)})
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        rv = int(data["rv"])
        start = data["start"]
        return rv, (str(start[0]), str(start[1]))
    except (ValueError, KeyError, TypeError, IndexError, binascii.Error, orjson.JSONDecodeError):
        raise StatusError.bad_request("continue key is not valid: invalid continue token") from None


def list_objects(
    store: Revisions,
    rt: ResourceType,
    namespace: str | None,
    selection: Selection,
    options: ListOptions,
    matches: Callable[[StoredObject], bool] | None = None,
) -> ListResult:
    """The objects a list request returns, honouring revision, selectors and paging.
    `matches` replaces the selectors' test of each stored object."""
    gr = rt.group_resource
    object_predicate = selection.predicate()
    predicate: Callable[[StoredObject], bool] | None = matches
    if predicate is None and object_predicate is not None:
        test = object_predicate

        def predicate(stored: StoredObject) -> bool:
            return test(stored.obj)

    after: tuple[str, str] | None = None
    at: int | None = None
    if options.continue_token:
        at, after = _decode_token(options.continue_token)
    elif options.exact:
        assert options.resource_version is not None
        at = options.resource_version
    requested = at if at is not None else options.resource_version
    if requested is not None and requested > store.revision:
        raise StatusError.timeout(
            f"Too large resource version: {requested}, current: {store.revision}"
        )
    try:
        state, keys = store.state_at(gr, at, namespace)
    except Expired as exc:
        if options.continue_token:
            raise StatusError.gone(_EXPIRED_CONTINUE) from None
        raise StatusError.gone(
            f"too old resource version: {exc.requested} ({exc.oldest})"
        ) from None
    rv = at if at is not None else store.revision

    start = bisect.bisect_right(keys, after) if after is not None else 0
    limit = options.limit
    items: list[StoredObject] = []
    i = start
    # Collect one more than a page to know whether another page follows.
    while i < len(keys) and (not limit or len(items) <= limit):
        stored = state[keys[i]]
        if predicate is None or predicate(stored):
            items.append(stored)
        i += 1
    if limit and len(items) > limit:
        page = items[:limit]
        token = _encode_token(rv, page[-1].key)
        remaining = len(keys) - start - limit if predicate is None else None
        return ListResult(page, rv, token, remaining)
    return ListResult(items, rv)


async def list_converted(
    store: Revisions,
    rt: ResourceType,
    namespace: str | None,
    selection: Selection,
    options: ListOptions,
    convert: BatchConverter,
) -> tuple[ListResult, list[dict[str, Any]]]:
    """A list page whose objects `convert` brings to the requested version, and those
    objects, selected in that version. Selectors that read only names go to the store as
    usual and only the page is converted; others see every candidate converted first (one
    conversion), at the revision the list is of."""
    if selection.version_invariant:
        result = list_objects(store, rt, namespace, selection, options)
        return result, await convert(result.items)
    everything = Selection.parse(rt, {})
    candidates = list_objects(store, rt, namespace, everything, replace(options, limit=0))
    converted = await convert(candidates.items)
    by_key = {stored.key: obj for stored, obj in zip(candidates.items, converted, strict=True)}
    test = selection.predicate()
    assert test is not None
    # The page is taken from the same revision the candidates came from, whatever was
    # written while they were converted.
    pinned = options
    if not options.continue_token:
        pinned = replace(options, resource_version=candidates.resource_version, exact=True)
    result = list_objects(
        store,
        rt,
        namespace,
        selection,
        pinned,
        matches=lambda stored: stored.key in by_key and test(by_key[stored.key]),
    )
    return result, [by_key[stored.key] for stored in result.items]
