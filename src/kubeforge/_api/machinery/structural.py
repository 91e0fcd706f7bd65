"""The checks a CRD's openAPIV3Schema must pass before the API server accepts the CRD.

Three layers, in the server's order and wording: the generic OpenAPI rules (unsupported
keywords, list/map types, CEL rules that do not compile), the structural-schema rules (every
field typed, logical junctors only restating value validations, metadata restrictions), and
finally the defaults (valid against their schema and already pruned).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery import cel as celrules
from kubeforge._api.machinery.crvalidation import validate_against
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, shown_value
from kubeforge._api.machinery.pruning import prune_value
from kubeforge._api.machinery.schemaextensions import embedded_errors
from kubeforge._api.machinery.schemanode import Node
from kubeforge._api.machinery.schemarules import rule_errors

__all__ = ["structural_errors"]

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_UNSUPPORTED = (
    ("id", "id is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("$ref", "$ref is not supported"),
)
_META_FIELDS = ("apiVersion", "kind", "metadata")
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def structural_errors(
    schema: Mapping[str, Any], path: str = "spec.validation.openAPIV3Schema"
) -> list[FieldError]:
    """Everything the server refuses in a CRD version's schema, with field paths under `path`
    (`spec.versions[0].schema.openAPIV3Schema` for apiextensions.k8s.io/v1)."""
    errors: list[FieldError] = []
    if schema.get("nullable") is True:
        errors.append(
            FieldError.forbidden(f"{path}.nullable", "nullable cannot be true at the root")
        )
    _generic(schema, path, errors, root=True, meta_reason=None, uncorrelatable=None)
    structural: list[FieldError] = []
    _invariants(schema, path, "root", structural)
    _completeness(schema, schema, path, path, structural)
    errors.extend(structural)
    if not structural:
        _defaults(schema, path, errors, root=True)
    return errors


def _child(path: str, name: str) -> str:
    return f"{path}.{name}"


def _prop(path: str, key: str) -> str:
    return f"{path}.properties[{key}]"


def _type(node: Mapping[str, Any]) -> str:
    t = node.get("type")
    return t if isinstance(t, str) else ""


def _properties(node: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    props = node.get("properties")
    if not isinstance(props, Mapping):
        return {}
    return {k: v for k, v in props.items() if isinstance(v, Mapping)}


def _items(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    items = node.get("items")
    return items if isinstance(items, Mapping) else None


def _additional(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    additional = node.get("additionalProperties")
    return additional if isinstance(additional, Mapping) else None


# -- generic OpenAPI rules --------------------------------------------------------------------


def _generic(
    node: Mapping[str, Any],
    path: str,
    errors: list[FieldError],
    *,
    root: bool = False,
    meta_reason: str | None,
    uncorrelatable: str | None,
    inside_meta: bool = False,
) -> None:
    t = node.get("type")
    if isinstance(t, str) and t and t not in _TYPES:
        if t == "null":
            errors.append(
                FieldError.forbidden(
                    _child(path, "type"),
                    "type cannot be set to null, use nullable as an alternative",
                )
            )
        else:
            errors.append(FieldError.not_supported(_child(path, "type"), t, _TYPES))
    if "default" in node and meta_reason is not None:
        errors.append(
            FieldError.forbidden(_child(path, "default"), f"must not be set {meta_reason}")
        )
    for key, detail in _UNSUPPORTED:
        if node.get(key) not in (None, "", {}):
            errors.append(FieldError.forbidden(_child(path, key), detail))
    if isinstance(node.get("items"), list):
        errors.append(
            FieldError.forbidden(
                _child(path, "items"), "items must be a schema object and not an array"
            )
        )
    if inside_meta and node.get("x-kubernetes-embedded-resource") is True:
        errors.append(
            FieldError.forbidden(
                _child(path, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            )
        )
    if node.get("uniqueItems") is True:
        errors.append(
            FieldError.forbidden(
                _child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = _properties(node)
    additional = node.get("additionalProperties")
    if (
        additional is not None
        and props
        and (additional is False or isinstance(additional, Mapping))
    ):
        errors.append(
            FieldError.forbidden(
                _child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if isinstance(additional, Mapping):
        _generic(
            additional,
            _child(path, "additionalProperties"),
            errors,
            meta_reason=(
                "inside additionalProperties applying to object metadata"
                if inside_meta
                else meta_reason
            ),
            uncorrelatable=uncorrelatable,
            inside_meta=inside_meta,
        )
    embedded = node.get("x-kubernetes-embedded-resource") is True
    for key, sub in props.items():
        sub_meta, sub_inside = meta_reason, inside_meta
        if (root or embedded) and key in _META_FIELDS:
            sub_inside = True
            if root:
                sub_meta = f"in top-level {key}"
        _generic(
            sub,
            _prop(path, key),
            errors,
            meta_reason=sub_meta,
            uncorrelatable=uncorrelatable,
            inside_meta=sub_inside,
        )
    not_ = node.get("not")
    if isinstance(not_, Mapping):
        _generic(
            not_,
            _child(path, "not"),
            errors,
            meta_reason=meta_reason,
            uncorrelatable=uncorrelatable,
        )
    for junctor in _JUNCTORS:
        subs = node.get(junctor)
        if isinstance(subs, list):
            for i, sub in enumerate(subs):
                if isinstance(sub, Mapping):
                    _generic(
                        sub,
                        f"{path}.{junctor}[{i}]",
                        errors,
                        meta_reason=meta_reason,
                        uncorrelatable=uncorrelatable,
                    )
    items = _items(node)
    if items is not None:
        list_type = node.get("x-kubernetes-list-type")
        items_path = _child(path, "items")
        _generic(
            items,
            items_path,
            errors,
            meta_reason=meta_reason,
            uncorrelatable=uncorrelatable if list_type == "map" else uncorrelatable or items_path,
            inside_meta=inside_meta,
        )
    if node.get("x-kubernetes-preserve-unknown-fields") is False:
        errors.append(
            FieldError.invalid(
                _child(path, "x-kubernetes-preserve-unknown-fields"),
                False,
                "must be true or undefined",
            )
        )
    _map_and_list_types(node, path, errors)
    pattern = node.get("pattern")
    # Python's `re` has no Unicode classes (`\p{L}`); such patterns are not judged here.
    if (
        isinstance(pattern, str)
        and pattern
        and "\\p" not in pattern
        and celrules.compile_go_regex(pattern) is None
    ):
        errors.append(
            FieldError.invalid(
                _child(path, "pattern"),
                pattern,
                "must be a valid regular expression, but isn't",
            )
        )
    _validation_rules(node, path, errors, uncorrelatable)


def _type_required(
    errors: list[FieldError], path: str, actual: str, expected: str, condition: str
) -> None:
    detail = f"must be {expected} if {condition}"
    if actual:
        errors.append(FieldError.invalid(_child(path, "type"), actual, detail))
    else:
        errors.append(FieldError.required(_child(path, "type"), detail))


def _map_and_list_types(node: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    t = _type(node)
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None:
        if t != "object":
            _type_required(errors, path, t, "object", "x-kubernetes-map-type is specified")
        if map_type not in ("atomic", "granular"):
            errors.append(
                FieldError.not_supported(
                    _child(path, "x-kubernetes-map-type"), map_type, ("atomic", "granular")
                )
            )
    list_type = node.get("x-kubernetes-list-type")
    items = _items(node)
    if list_type is not None:
        if t != "array":
            _type_required(errors, path, t, "array", "x-kubernetes-list-type is specified")
        elif list_type == "set" and items is not None:
            item_type = _type(items)
            if item_type == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
                errors.append(
                    FieldError.invalid(
                        f"{path}.items.x-kubernetes-list-type",
                        items.get("x-kubernetes-list-type"),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
            if item_type == "object" and items.get("x-kubernetes-map-type") != "atomic":
                errors.append(
                    FieldError.invalid(
                        f"{path}.items.x-kubernetes-map-type",
                        shown_value(items.get("x-kubernetes-map-type")),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
        if list_type not in ("atomic", "set", "map"):
            errors.append(
                FieldError.not_supported(
                    _child(path, "x-kubernetes-list-type"), list_type, ("atomic", "set", "map")
                )
            )
    keys = node.get("x-kubernetes-list-map-keys")
    keys = [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
    if keys:
        if list_type is None:
            errors.append(
                FieldError.required(
                    _child(path, "x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
        elif list_type != "map":
            errors.append(
                FieldError.invalid(
                    _child(path, "x-kubernetes-list-type"),
                    list_type,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type != "map":
        return
    if not keys:
        errors.append(
            FieldError.required(
                _child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    if items is None:
        errors.append(
            FieldError.required(
                _child(path, "items"), "must have a schema if x-kubernetes-list-type is map"
            )
        )
        return
    if _type(items) != "object":
        errors.append(
            FieldError.invalid(
                f"{path}.items.type",
                _type(items),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return
    item_props = _properties(items)
    required = set(items.get("required") or ())
    shown = GoValue("[]string{" + ", ".join(f'"{k}"' for k in keys) + "}")
    seen: set[str] = set()
    for key in keys:
        prop = item_props.get(key)
        if prop is None:
            errors.append(
                FieldError.invalid(
                    _child(path, "x-kubernetes-list-map-keys"),
                    shown,
                    "entries must all be names of item properties",
                )
            )
        else:
            if _type(prop) in ("array", "object"):
                errors.append(
                    FieldError.invalid(
                        f"{_prop(_child(path, 'items'), key)}.type",
                        _type(prop),
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
            if "default" not in prop and key not in required:
                errors.append(
                    FieldError.required(
                        f"{_prop(_child(path, 'items'), key)}.default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a "
                        "default or be a required property",
                    )
                )
        if key in seen:
            errors.append(
                FieldError.invalid(
                    _child(path, "x-kubernetes-list-map-keys"),
                    shown,
                    "must not contain duplicate entries",
                )
            )
        seen.add(key)


def _rule_value(spec: Mapping[str, Any]) -> GoValue:
    """A validation rule as the server prints it (Go's `%#v` of apiextensions.ValidationRule)."""

    def q(key: str) -> str:
        value = spec.get(key)
        text = value if isinstance(value, str) else ""
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    reason = "(nil)" if spec.get("reason") is None else "(0xc000000000)"
    optional = "(nil)" if spec.get("optionalOldSelf") is None else "(0xc000000000)"
    return GoValue(
        f"apiextensions.ValidationRule{{Rule:{q('rule')}, Message:{q('message')}, "
        f"MessageExpression:{q('messageExpression')}, "
        f"Reason:(*apiextensions.FieldValueErrorReason){reason}, FieldPath:{q('fieldPath')}, "
        f"OptionalOldSelf:(*bool){optional}}}"
    )


def _text(spec: Mapping[str, Any], key: str) -> str:
    value = spec.get(key)
    return value if isinstance(value, str) else ""


def _validation_rules(
    node: Mapping[str, Any], path: str, errors: list[FieldError], uncorrelatable: str | None
) -> None:
    rules = node.get("x-kubernetes-validations")
    if not isinstance(rules, list):
        return
    for i, spec in enumerate(rules):
        if not isinstance(spec, Mapping):
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        rule = _text(spec, "rule")
        message = _text(spec, "message")
        msg_expr = _text(spec, "messageExpression")
        if not rule.strip():
            errors.append(FieldError.required(f"{at}.rule", "rule is not specified"))
        elif message and not message.strip():
            errors.append(
                FieldError.invalid(
                    f"{at}.message", message, "message must be non-empty if specified"
                )
            )
        elif "\n" in message.strip():
            errors.append(
                FieldError.invalid(f"{at}.message", message, "message must not contain line breaks")
            )
        elif "\n" in rule.strip() and not message.strip() and not msg_expr.strip():
            errors.append(
                FieldError.required(
                    f"{at}.message", "message must be specified if rule contains line breaks"
                )
            )
        if msg_expr and not msg_expr.strip():
            errors.append(
                FieldError.required(
                    f"{at}.messageExpression", "messageExpression must be non-empty if specified"
                )
            )
        reason = spec.get("reason")
        if reason is not None and reason not in celrules.REASONS:
            errors.append(FieldError.not_supported(f"{at}.reason", reason, celrules.REASONS))
        field_path = spec.get("fieldPath")
        if isinstance(field_path, str) and field_path:
            if not field_path.strip():
                errors.append(
                    FieldError.invalid(
                        f"{at}.fieldPath", field_path, "fieldPath must be non-empty if specified"
                    )
                )
            elif "\n" in field_path:
                errors.append(
                    FieldError.invalid(
                        f"{at}.fieldPath", field_path, "fieldPath must not contain line breaks"
                    )
                )
            elif not _field_path_valid(node, field_path):
                errors.append(
                    FieldError.invalid(
                        f"{at}.fieldPath", field_path, "fieldPath must be a valid path"
                    )
                )
        if not rule.strip():
            continue
        problem = celrules.compile_rule(rule)
        if problem is not None:
            errors.append(FieldError.invalid(f"{at}.rule", _rule_value(spec), problem))
            continue
        if msg_expr.strip():
            msg_problem = celrules.compile_rule(msg_expr)
            if msg_problem is not None:
                errors.append(
                    FieldError.invalid(
                        f"{at}.messageExpression",
                        _rule_value(spec),
                        f"messageExpression {msg_problem}",
                    )
                )
        compiled = celrules.rule_of(spec)
        if compiled.is_transition and uncorrelatable is not None:
            errors.append(
                FieldError.invalid(
                    f"{at}.rule",
                    rule,
                    f"oldSelf cannot be used on the uncorrelatable portion of the schema within "
                    f"{uncorrelatable}",
                )
            )
        if spec.get("optionalOldSelf") is True and not compiled.is_transition:
            errors.append(
                FieldError.invalid(
                    f"{at}.optionalOldSelf",
                    bool(spec.get("optionalOldSelf")),
                    "may not be set if rule does not use oldSelf",
                )
            )


_FIELD_PATH_RE = re.compile(r"^(?:\.[A-Za-z_][\w-]*|\[\s*'(?:[^'\\]|\\.)*'\s*\]|\[\s*\d+\s*\])+\Z")


def _field_path_valid(node: Mapping[str, Any], field_path: str) -> bool:
    """Whether a rule's fieldPath names a field the schema declares (lists by index, maps by
    key)."""
    if not _FIELD_PATH_RE.match(field_path.strip()):
        return False
    normalized = celrules.normalize_field_path(field_path)
    current: Mapping[str, Any] | None = node
    for part in normalized.replace("[", ".[").split("."):
        if not part or current is None:
            continue
        if part.startswith("["):
            key = part[1:-1]
            if _type(current) == "array":
                current = _items(current) if key.isdigit() else None
            elif key in _properties(current):
                current = _properties(current)[key]
            else:
                current = _additional(current)
        else:
            props = _properties(current)
            current = props.get(part) if part in props else _additional(current)
        if current is None:
            return False
    return current is not None


# -- structural-schema rules -------------------------------------------------------------------


def _is_int_or_string_any_of(node: Mapping[str, Any]) -> bool:
    return (
        node.get("x-kubernetes-int-or-string") is True
        and node.get("anyOf") == _INT_OR_STRING_ANY_OF
    )


def _is_int_or_string_all_of(node: Mapping[str, Any]) -> bool:
    all_of = node.get("allOf")
    return (
        node.get("x-kubernetes-int-or-string") is True
        and isinstance(all_of, list)
        and bool(all_of)
        and isinstance(all_of[0], Mapping)
        and all_of[0].get("anyOf") == _INT_OR_STRING_ANY_OF
    )


def _invariants(node: Mapping[str, Any], path: str, level: str, errors: list[FieldError]) -> None:
    t = _type(node)
    items = _items(node)
    if t == "array" and items is None:
        errors.append(FieldError.required(_child(path, "items"), "must be specified"))
    if items is not None:
        _invariants(items, _child(path, "items"), "item", errors)
    props = _properties(node)
    for key, sub in props.items():
        _invariants(sub, _prop(path, key), "field", errors)
    if "additionalProperties" in node and node.get("additionalProperties") is not False:
        if level == "root":
            errors.append(
                FieldError.forbidden(
                    _child(path, "additionalProperties"), "must not be used at the root"
                )
            )
        additional = _additional(node)
        if additional is not None:
            _invariants(additional, _child(path, "additionalProperties"), "field", errors)
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = node.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        errors.append(
            FieldError.invalid(
                _child(path, "x-kubernetes-preserve-unknown-fields"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        errors.append(
            FieldError.invalid(
                _child(path, "x-kubernetes-embedded-resource"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    _junctors(node, path, errors, _is_int_or_string_any_of(node), _is_int_or_string_all_of(node))
    if embedded and t != "object":
        _type_required(errors, path, t, "object", "x-kubernetes-embedded-resource is true")
    elif not t and not int_or_string and not preserve:
        where = {"root": "at the root", "item": "for specified array items"}.get(
            level, "for specified object fields"
        )
        errors.append(FieldError.required(_child(path, "type"), f"must not be empty {where}"))
    if embedded and "additionalProperties" in node:
        errors.append(
            FieldError.forbidden(
                _child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == "root" and t and t != "object":
        errors.append(FieldError.invalid(_child(path, "type"), t, "must be object at the root"))
    check_meta = level == "root" or embedded
    if check_meta:
        for key in ("kind", "apiVersion"):
            if key in props and _type(props[key]) != "string":
                errors.append(
                    FieldError.invalid(
                        f"{_prop(path, key)}.type", _type(props[key]), "must be string"
                    )
                )
        if "metadata" in props and _type(props["metadata"]) != "object":
            errors.append(
                FieldError.invalid(
                    f"{_prop(path, 'metadata')}.type", _type(props["metadata"]), "must be object"
                )
            )
    if (
        level == "root"
        and "metadata" in props
        and not _metadata_restricts_names_only(props["metadata"])
    ):
        errors.append(
            FieldError.forbidden(
                _prop(path, "metadata"),
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )
        )
    if embedded and not preserve and not props:
        errors.append(
            FieldError.required(
                _child(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )


_METADATA_ALLOWED = frozenset({"type", "properties", "description", "default", "nullable"})


def _metadata_restricts_names_only(meta: Mapping[str, Any]) -> bool:
    if any(key not in _METADATA_ALLOWED for key in meta):
        return False
    if meta.get("nullable") is True:
        return False
    return set(_properties(meta)) <= {"name", "generateName"}


# What a logical junctor may not say, as (keyword, when it counts as said, detail).
_NESTED_FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("type", "nonempty", "must be empty to be structural"),
    ("additionalProperties", "present", "must be undefined to be structural"),
    ("default", "present", "must be undefined to be structural"),
    ("title", "nonempty", "must be empty to be structural"),
    ("description", "nonempty", "must be empty to be structural"),
    ("nullable", "true", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "present", "must be undefined to be structural"),
    ("x-kubernetes-embedded-resource", "true", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "true", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "nonempty", "must be empty to be structural"),
    ("x-kubernetes-list-type", "present", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "present", "must be undefined to be structural"),
    ("x-kubernetes-validations", "nonempty", "must be empty to be structural"),
)


def _said(node: Mapping[str, Any], key: str, how: str) -> bool:
    value = node.get(key)
    if how == "present":
        return key in node and value is not None
    if how == "true":
        return value is True
    return bool(value)


def _junctors(
    node: Mapping[str, Any],
    path: str,
    errors: list[FieldError],
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
) -> None:
    """Checks of what allOf/anyOf/oneOf/not contain (value validations only)."""
    any_of = node.get("anyOf")
    if isinstance(any_of, list) and not skip_any_of:
        for i, sub in enumerate(any_of):
            if isinstance(sub, Mapping):
                _nested(sub, f"{path}.anyOf[{i}]", errors, False)
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        for i, sub in enumerate(all_of):
            if isinstance(sub, Mapping):
                _nested(sub, f"{path}.allOf[{i}]", errors, skip_first_all_of_any_of and i == 0)
    one_of = node.get("oneOf")
    if isinstance(one_of, list):
        for i, sub in enumerate(one_of):
            if isinstance(sub, Mapping):
                _nested(sub, f"{path}.oneOf[{i}]", errors, False)
    not_ = node.get("not")
    if isinstance(not_, Mapping):
        _nested(not_, _child(path, "not"), errors, False)


def _nested(
    node: Mapping[str, Any], path: str, errors: list[FieldError], skip_any_of: bool
) -> None:
    _junctors(node, path, errors, skip_any_of, False)
    items = _items(node)
    if items is not None:
        _nested(items, _child(path, "items"), errors, False)
    props = _properties(node)
    for key, sub in props.items():
        _nested(sub, _prop(path, key), errors, False)
    for key, how, detail in _NESTED_FORBIDDEN:
        if _said(node, key, how):
            errors.append(FieldError.forbidden(_child(path, key), detail))
    if "metadata" in props:
        errors.append(
            FieldError.forbidden(
                _prop(path, "metadata"), "must not be specified in a nested context"
            )
        )


def _completeness(
    node: Mapping[str, Any],
    structural: Mapping[str, Any] | None,
    s_path: str,
    v_path: str,
    errors: list[FieldError],
) -> None:
    """Every field a junctor mentions must also be specified outside of it."""
    for junctor in _JUNCTORS:
        subs = node.get(junctor)
        if isinstance(subs, list):
            for i, sub in enumerate(subs):
                if isinstance(sub, Mapping):
                    _nested_completeness(
                        sub, structural, s_path, f"{v_path}.{junctor}[{i}]", errors
                    )
    not_ = node.get("not")
    if isinstance(not_, Mapping):
        _nested_completeness(not_, structural, s_path, _child(v_path, "not"), errors)
    if structural is node:
        items = _items(node)
        if items is not None:
            _completeness(items, items, _child(s_path, "items"), _child(v_path, "items"), errors)
        for key, sub in _properties(node).items():
            _completeness(sub, sub, _prop(s_path, key), _prop(v_path, key), errors)
        additional = _additional(node)
        if additional is not None:
            path = _child(s_path, "additionalProperties")
            _completeness(additional, additional, path, path, errors)


def _nested_completeness(
    nested: Mapping[str, Any],
    structural: Mapping[str, Any] | None,
    s_path: str,
    v_path: str,
    errors: list[FieldError],
) -> None:
    if structural is None:
        errors.append(FieldError.required(s_path, f"because it is defined in {v_path}"))
        return
    _completeness(nested, structural, s_path, v_path, errors)
    items = _items(nested)
    if items is not None:
        _nested_completeness(
            items, _items(structural), _child(s_path, "items"), _child(v_path, "items"), errors
        )
    s_props = _properties(structural)
    for key, sub in _properties(nested).items():
        if key not in s_props:
            errors.append(
                FieldError.required(
                    _prop(s_path, key), f"because it is defined in {_prop(v_path, key)}"
                )
            )
        else:
            _nested_completeness(sub, s_props[key], _prop(s_path, key), _prop(v_path, key), errors)


# -- defaults ----------------------------------------------------------------------------------


def _defaults(
    node: Mapping[str, Any], path: str, errors: list[FieldError], *, root: bool = False
) -> None:
    """Each default must already be pruned, be valid for its schema and pass its rules."""
    if "default" in node and not root:
        default = node["default"]
        compiled = Node(node)
        at = _child(path, "default")
        pruned = copy.deepcopy(default)
        prune_value(pruned, compiled, resource_root=compiled.embedded)
        if pruned != default:
            errors.append(
                FieldError.invalid(at, shown_value(default), "must not have unknown fields")
            )
        else:
            problems = embedded_errors(compiled, default, at)
            if not problems:
                problems = validate_against(compiled, default, at)
            if not problems:
                problems = rule_errors(compiled, default, default, at)
            errors.extend(problems)
    embedded = node.get("x-kubernetes-embedded-resource") is True
    for key, sub in _properties(node).items():
        if (root or embedded) and key in _META_FIELDS:
            continue  # defaults there are refused (root) or checked with the object meta rules
        _defaults(sub, _prop(path, key), errors)
    items = _items(node)
    if items is not None:
        _defaults(items, _child(path, "items"), errors)
    additional = _additional(node)
    if additional is not None:
        _defaults(additional, _child(path, "additionalProperties"), errors)
