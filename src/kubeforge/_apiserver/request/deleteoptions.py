"""DeleteOptions, read as kube-apiserver reads them.

A DELETE's options come from its body when it has one, and from the query string only when
it has none (k8s.io/apiserver/pkg/endpoints/handlers/delete.go): the body is decoded as the
typed DeleteOptions (a field of the wrong JSON type is a 400 with Go's decoder message,
unknown fields are dropped), the query parameters as apimachinery's parameter codec reads
them (integers as strconv.ParseInt, booleans as queryparams.py). Then both are validated
as ValidateDeleteOptions does: orphanDependents with propagationPolicy, an unsupported
propagationPolicy and a dryRun other than `All` are 422.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.gojson import json_kind
from kubeforge._apiserver.request.queryparams import parse_bool

__all__ = ["decode_delete_options", "delete_options_from_query"]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")
_POLICIES = ("Orphan", "Background", "Foreground")
_INVALID = 'DeleteOptions.meta.k8s.io "" is invalid: '

# JSON field -> the Go type of its DeleteOptions struct field.
_FIELDS = {
    "kind": "string",
    "apiVersion": "string",
    "gracePeriodSeconds": "int64",
    "preconditions": "v1.Preconditions",
    "orphanDependents": "bool",
    "propagationPolicy": "v1.DeletionPropagation",
    "dryRun": "[]string",
    "ignoreStoreReadErrorWithClusterBreakingPotential": "bool",
}
_PRECONDITIONS = {"uid": "types.UID", "resourceVersion": "string"}


def _mismatch(value: Any, field: str, go_type: str) -> StatusError:
    what = json_kind(value)
    if what == "number" and go_type == "int64":
        what = f"number {value!r}"
    return StatusError.bad_request(
        f"json: cannot unmarshal {what} into Go struct field DeleteOptions.{field} of type "
        f"{go_type}"
    )


def _decode_field(key: str, value: Any, go_type: str) -> Any:
    if go_type in ("string", "v1.DeletionPropagation", "types.UID"):
        if type(value) is not str:
            raise _mismatch(value, key, go_type)
        return value
    if go_type == "bool":
        if type(value) is not bool:
            raise _mismatch(value, key, go_type)
        return value
    if go_type == "int64":
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise _mismatch(value, key, go_type)
        return value
    if go_type == "[]string":
        if type(value) is not list:
            raise _mismatch(value, key, go_type)
        items = []
        for item in value:
            if item is not None and type(item) is not str:
                raise _mismatch(item, key, "string")
            items.append(item or "")
        return items
    # v1.Preconditions
    if type(value) is not dict:
        raise _mismatch(value, key, go_type)
    out = {}
    for name, item in value.items():
        field_type = _PRECONDITIONS.get(name)
        if field_type is None or item is None:
            continue
        if type(item) is not str:
            raise _mismatch(item, f"{key}.{name}", field_type)
        out[name] = item
    return out


def decode_delete_options(body: Any) -> dict[str, Any]:
    """The DeleteOptions a request body holds (its decoded JSON or YAML), validated."""
    if type(body) is not dict:
        raise StatusError.bad_request(
            f"json: cannot unmarshal {json_kind(body)} into Go value of type v1.DeleteOptions"
        )
    kind = body.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        raise StatusError.bad_request(
            f"the body of a delete request must be DeleteOptions, not {str(kind)[:100]}"
        )
    options: dict[str, Any] = {}
    for key, value in body.items():
        go_type = _FIELDS.get(key)
        if go_type is None or value is None:
            continue  # unknown fields are dropped; null is Go's zero value
        options[key] = _decode_field(key, value, go_type)
    _validate(options)
    return options


def delete_options_from_query(query: Mapping[str, str]) -> dict[str, Any]:
    """The DeleteOptions a query string holds, validated."""
    options: dict[str, Any] = {}
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    text = query.get("gracePeriodSeconds")
    if text is not None:
        value = int(text) if _GO_INT.match(text) else None
        if value is None or not _INT64_MIN <= value <= _INT64_MAX:
            raise StatusError.bad_request(
                f'strconv.ParseInt: parsing "{text[:100]}": '
                + ("invalid syntax" if value is None else "value out of range")
            )
        options["gracePeriodSeconds"] = value
    if "orphanDependents" in query:
        options["orphanDependents"] = parse_bool(query["orphanDependents"])
    if "dryRun" in query:
        options["dryRun"] = [query["dryRun"]]
    _validate(options)
    return options


def _validate(options: dict[str, Any]) -> None:
    """ValidateDeleteOptions (k8s.io/apimachinery/pkg/api/validation)."""
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is not None and policy is not None:
        raise StatusError.unprocessable(
            f'{_INVALID}propagationPolicy: Invalid value: "{policy}": orphanDependents and '
            "deletionPropagation cannot be both set"
        )
    if policy is not None and policy not in _POLICIES:
        raise StatusError.unprocessable(
            f'{_INVALID}propagationPolicy: Unsupported value: "{policy[:100]}": supported '
            'values: "Foreground", "Background", "Orphan", "nil"'
        )
    dry_run = options.get("dryRun")
    if dry_run and any(value != "All" for value in dry_run):
        shown = ", ".join(f'"{v[:100]}"' for v in dry_run[:5])
        raise StatusError.unprocessable(
            f'{_INVALID}dryRun: Unsupported value: []string{{{shown}}}: supported values: "All"'
        )
