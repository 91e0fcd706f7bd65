"""What the validation of several API groups shares: the validators' types, common field
checks, how values are shown in messages, and the rules every controller's selector and pod
template follow."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.access import as_dict, as_int, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_label_selector, go_string_map
from kubeforge._api.machinery.names import immutable
from kubeforge._api.machinery.selectors import label_selector_matches

__all__ = [
    "NEGATIVE",
    "CreateValidator",
    "Errors",
    "Obj",
    "UpdateValidator",
    "each",
    "go_json",
    "go_str",
    "nonnegative",
    "selector_immutable",
    "selector_is_empty",
    "semantic_equal",
    "template_mismatch",
    "validate_replicas",
    "validate_template_restart_always",
    "validate_template_selected",
]

Obj = dict[str, Any]
Errors = list[FieldError]
CreateValidator = Callable[[Obj], Errors]
UpdateValidator = Callable[[Obj, Obj], Errors]

NEGATIVE = "must be greater than or equal to 0"
_SELECTOR_MISMATCH = "`selector` does not match template `labels`"


# -- field checks ----------------------------------------------------------------------------


def nonnegative(path: str, value: Any) -> Errors:
    """An error when `value` is a negative number."""
    number = as_int(value)
    if number is not None and number < 0:
        return [FieldError.invalid(path, number, NEGATIVE)]
    return []


def each(messages: Iterable[str], path: str, value: Any) -> Errors:
    """One Invalid error at `path` for each message."""
    return [FieldError.invalid(path, value, m) for m in messages]


# -- comparing and showing values ------------------------------------------------------------


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        items = ((k, _normalized(v)) for k, v in value.items())
        return {k: v for k, v in items if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Equality as the server compares API objects: absent, null and empty are all alike."""
    if a == b:
        return True
    a, b = _normalized(a), _normalized(b)
    return (None if a in ({}, []) else a) == (None if b in ({}, []) else b)


def go_json(value: Any) -> GoValue:
    """A composite value the server would print as a long Go literal, shown compactly."""
    return GoValue(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


def go_str(value: Any) -> str:
    """A string quoted, as a Go literal shows it."""
    return orjson.dumps(as_str(value)).decode()


# -- controllers' selectors and pod templates ------------------------------------------------


def selector_is_empty(selector: Any) -> bool:
    """An empty (non-null) selector selects everything; a null one selects nothing."""
    return (
        isinstance(selector, Mapping)
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )


def _template_labels(spec: Obj) -> Any:
    return as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")


def template_mismatch(spec: Obj) -> FieldError:
    """The error for a pod template whose labels the controller's selector does not match."""
    labels = _template_labels(spec)
    return FieldError.invalid(
        "spec.template.metadata.labels",
        go_string_map(labels if isinstance(labels, Mapping) else None),
        _SELECTOR_MISMATCH,
    )


def validate_template_selected(spec: Obj) -> Errors:
    """A controller's selector (one that converts) selects its pod template's labels: an
    empty selector selects everything, a null one nothing."""
    selector = spec.get("selector")
    if selector_is_empty(selector) or label_selector_matches(selector, _template_labels(spec)):
        return []
    return [template_mismatch(spec)]


def validate_template_restart_always(spec: Obj, kind: str) -> Errors:
    """The pods of long-running controllers restart always and have no deadline."""
    template_spec = as_dict(as_dict(spec.get("template")).get("spec"))
    errs: Errors = []
    restart = as_str(template_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(
            FieldError.not_supported("spec.template.spec.restartPolicy", restart, ("Always",))
        )
    if template_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            FieldError.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errs


def validate_replicas(spec: Obj) -> Errors:
    """Non-negative `replicas` and `minReadySeconds`."""
    return nonnegative("spec.replicas", spec.get("replicas")) + nonnegative(
        "spec.minReadySeconds", spec.get("minReadySeconds")
    )


def selector_immutable(obj: Obj, old: Obj) -> Errors:
    """A controller's `spec.selector` cannot change once created."""
    selector = as_dict(obj.get("spec")).get("selector")
    old_selector = as_dict(old.get("spec")).get("selector")
    if not semantic_equal(selector, old_selector):
        value = go_label_selector(selector if isinstance(selector, Mapping) else None)
        return [immutable("spec.selector", value)]
    return []
