"""Decoding and validating objects of any served type against its schema.

Built-in types use the official definitions (unknown fields are dropped, as typed decoding
does) and their per-type strategy; CRD-defined types use the CRD's structural schema
(pruning, defaulting, OpenAPI and CEL validation) shared with client-side validation.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery import crvalidation, defaulting, pruning
from kubeforge._api.machinery.definitions import OBJECT_META
from kubeforge._api.machinery.fielderror import FieldError, FieldErrorType
from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.builtin_schemas import STRICT_INTEGERS, BuiltinSchemas, DecodeError
from kubeforge._apiserver.types.customobjects import EmbeddedMetadataError, decode_embedded_metadata
from kubeforge._apiserver.types.resource import ResourceType
from kubeforge._apiserver.types.strategies import Strategy, strategy_for

__all__ = ["TypeSupport"]


class TypeSupport:
    """Schema-driven operations for every served type."""

    def __init__(self, schemas: BuiltinSchemas) -> None:
        self.schemas = schemas
        self._views: dict[int, SchemaView] = {}

    def strategy(self, rt: ResourceType, subresource: str | None = None) -> Strategy:
        """The kind's strategy, or that of writes through `subresource`."""
        strategy = strategy_for(rt.group, rt.kind, rt.version)
        return strategy.for_subresource(subresource) if subresource else strategy

    def view(self, rt: ResourceType) -> SchemaView:
        """The type's schema, for patching and field ownership."""
        key = id(rt)
        view = self._views.get(key)
        if view is None:
            if rt.schema is not None:
                view = SchemaView(_with_object_meta(rt.schema), self.schemas.defs)
            elif rt.definition is not None:
                view = self.schemas.view(rt.definition)
            else:
                view = SchemaView(None)
            self._views[key] = view
        return view

    def forget(self, rt: ResourceType) -> None:
        self._views.pop(id(rt), None)

    def prune(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        omit_empty: bool = False,
        integers: str | None = STRICT_INTEGERS,
        patched: dict[str, Any] | None = None,
    ) -> list[str]:
        """Drop, in place, fields the type does not know; returns their paths.

        With `omit_empty`, built-in objects also lose the empty maps and lists that Go's
        encoder leaves out (`labels: {}`, `env: []`), as a typed round trip does; custom
        objects keep theirs, except in `metadata`, which the server reads as an ObjectMeta.
        Built-in objects' integer fields are read as `integers` says (builtin_schemas.py):
        strictly, as from a request body, or converted, as from a strategic merge patch or
        an apply; a value that does not fit is a 400. `patched` (built-in objects): the
        merge patch `obj` results from, applied to the object as stored, whose parts the
        patch leaves as they were are not looked at again (builtin_schemas.py).
        """
        if rt.schema is not None:
            unknown = pruning.prune(obj, rt.schema)
            try:
                decode_embedded_metadata(obj, rt.schema)
            except EmbeddedMetadataError as exc:
                raise StatusError.bad_request(
                    f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"{exc.error}"
                ) from None
            meta = obj.get("metadata")
            if omit_empty and isinstance(meta, dict):
                self.schemas.drop_empty_fields(OBJECT_META, meta)
            return unknown
        if rt.definition is None:
            return []
        try:
            return self.schemas.drop_unknown_fields(
                rt.definition, obj, omit_empty, integers, patched
            )
        except DecodeError as exc:
            raise StatusError.bad_request(exc.status_message(rt.kind, rt.version)) from None

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Apply the type's defaults in place."""
        if rt.schema is not None:
            defaulting.apply_defaults(obj, rt.schema)
        elif rt.definition is not None:
            self.strategy(rt).default(obj)

    def decode(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        integers: str = STRICT_INTEGERS,
        patched: dict[str, Any] | None = None,
    ) -> list[str]:
        """Prune and default, as decoding a request body does; returns the pruned paths.
        `patched` as for `prune`."""
        unknown = self.prune(rt, obj, omit_empty=True, integers=integers, patched=patched)
        self.default(rt, obj)
        return unknown

    def validate(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        subresource: str | None = None,
    ) -> list[FieldError]:
        """Schema and type-specific validation (metadata is checked separately) of a write,
        through `subresource` if it names one."""
        if rt.schema is not None:
            return crvalidation.validate(obj, rt.schema, old=old)
        errors: list[FieldError] = []
        strategy = self.strategy(rt, subresource)
        if rt.definition is not None:
            try:
                schema_errors = self.schemas.validate(rt.definition, obj)
            except DecodeError as exc:
                # What a typed decoder rejects is a malformed request, not an invalid object.
                raise StatusError.bad_request(exc.status_message(rt.kind, rt.version)) from None
            if strategy.reports_required:
                # The type's own checks name missing fields in the server's words.
                schema_errors = [e for e in schema_errors if e.type is not FieldErrorType.REQUIRED]
            errors.extend(schema_errors)
        errors.extend(strategy.validate(obj) if old is None else strategy.validate_update(obj, old))
        return _unique(errors)


def _unique(errors: list[FieldError]) -> list[FieldError]:
    """Errors without repeats (values may be unhashable, so compare their rendering)."""
    if not errors:
        return errors
    seen: set[tuple[str, str]] = set()
    out = []
    for error in errors:
        key = (error.type.value, str(error))
        if key not in seen:
            seen.add(key)
            out.append(error)
    return out


def _with_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD schema whose `metadata` is the full ObjectMeta, for field ownership of labels etc."""
    props = dict(schema.get("properties") or {})
    props["metadata"] = {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    return {**schema, "properties": props}
