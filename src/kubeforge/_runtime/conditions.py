"""Status conditions (metav1.Condition lists) with apimachinery's `meta.SetStatusCondition` rules.

The functions take the list itself (`obj.status.conditions` or `obj["status"]["conditions"]`)
whose items are either dicts (JSON names) or `Condition` models; a condition to set may be
either form and is stored in the form the list already uses. lastTransitionTime changes
only when the status does: a dict gets an RFC 3339 string with seconds (`...Z`), a model an
aware datetime.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime
from typing import Any, TypeAlias

from kubeforge._api.machinery.timestamps import format_time, now, parse_time
from kubeforge._api.meta import Condition

__all__ = [
    "ConditionLike",
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
]

ConditionLike: TypeAlias = Condition | MutableMapping[str, Any]

# JSON name -> Condition attribute, for the fields that take part in a change.
_FIELDS = (
    ("status", "status"),
    ("reason", "reason"),
    ("message", "message"),
    ("observedGeneration", "observed_generation"),
    ("lastTransitionTime", "last_transition_time"),
)
_ATTR = dict(_FIELDS)


def _format_time(value: Any) -> Any:
    """A datetime as metav1.Time text; anything else (text already) as it is."""
    return format_time(value) if isinstance(value, datetime) else value


def _parse_time(value: Any) -> datetime | None:
    """Text as the datetime a model holds; None and datetimes as they are."""
    if value is None or isinstance(value, datetime):
        return value
    return parse_time(str(value))


def _fields(condition: ConditionLike) -> dict[str, Any]:
    """The condition's values by JSON name, with Go's zero values for absent ones."""
    if isinstance(condition, Mapping):
        get = condition.get
        values = {json: get(json) for json, _ in _FIELDS}
        values["type"] = get("type")
    else:
        values = {json: getattr(condition, attr, None) for json, attr in _FIELDS}
        values["type"] = condition.type
    for key in ("reason", "message"):
        values[key] = values[key] or ""
    values["observedGeneration"] = values["observedGeneration"] or 0
    return values


def _put(condition: ConditionLike, field: str, value: Any) -> None:
    if isinstance(condition, MutableMapping):
        if field == "lastTransitionTime":
            value = _format_time(value)
        if field == "observedGeneration" and not value:
            condition.pop(field, None)
        else:
            condition[field] = value
    else:
        attr = _ATTR[field]
        if field == "lastTransitionTime":
            value = _parse_time(value)
        elif field == "observedGeneration" and not value:
            value = None
        setattr(condition, attr, value)


def _same_form(conditions: list[Any], condition: ConditionLike) -> ConditionLike:
    """A fresh copy of `condition` in the form the list uses (its own form when empty)."""
    as_dict = isinstance(conditions[0], Mapping) if conditions else isinstance(condition, Mapping)
    if as_dict:
        if isinstance(condition, Mapping):
            copy = dict(condition)
            if "lastTransitionTime" in copy:
                copy["lastTransitionTime"] = _format_time(copy["lastTransitionTime"])
            return copy
        return condition.to_dict()  # lastTransitionTime as metav1.Time text
    if isinstance(condition, Mapping):
        # Absent strings read as empty, as Go's zero values do.
        return Condition.from_dict({"reason": "", "message": "", **condition})
    return condition.model_copy()


def set_status_condition(conditions: list[Any], condition: ConditionLike) -> bool:
    """Add the condition, or update the one of its type; returns whether anything changed.

    A new condition without lastTransitionTime gets the current time. An existing one takes
    the new reason, message and observedGeneration; its lastTransitionTime moves (to the
    given time, else now) only when the status changes.
    """
    new = _fields(condition)
    existing = find_status_condition(conditions, new["type"])
    if existing is None:
        added = _same_form(conditions, condition)
        if not new["lastTransitionTime"]:
            _put(added, "lastTransitionTime", now())
        conditions.append(added)
        return True
    old = _fields(existing)
    changed = False
    if old["status"] != new["status"]:
        _put(existing, "status", new["status"])
        _put(existing, "lastTransitionTime", new["lastTransitionTime"] or now())
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if old[field] != new[field]:
            _put(existing, field, new[field])
            changed = True
    return changed


def _type_of(condition: Any) -> Any:
    return condition.get("type") if isinstance(condition, Mapping) else condition.type


def _status_of(condition: Any) -> Any:
    return condition.get("status") if isinstance(condition, Mapping) else condition.status


def find_status_condition(conditions: list[Any] | None, condition_type: str) -> Any:
    """The condition of the given type (the list's own item, not a copy), or None."""
    for condition in conditions or ():
        if _type_of(condition) == condition_type:
            return condition
    return None


def remove_status_condition(conditions: list[Any], condition_type: str) -> bool:
    """Remove the condition of the given type; returns whether there was one."""
    kept = [c for c in conditions if _type_of(c) != condition_type]
    if len(kept) == len(conditions):
        return False
    conditions[:] = kept
    return True


def is_status_condition_present_and_equal(
    conditions: list[Any] | None, condition_type: str, status: str
) -> bool:
    """Whether the condition of the given type exists with the given status."""
    condition = find_status_condition(conditions, condition_type)
    return condition is not None and _status_of(condition) == status


def is_status_condition_true(conditions: list[Any] | None, condition_type: str) -> bool:
    """Whether the condition of the given type exists and is "True"."""
    return is_status_condition_present_and_equal(conditions, condition_type, "True")


def is_status_condition_false(conditions: list[Any] | None, condition_type: str) -> bool:
    """Whether the condition of the given type exists and is "False"."""
    return is_status_condition_present_and_equal(conditions, condition_type, "False")
