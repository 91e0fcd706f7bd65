"""Names, qualified names, labels and object metadata rules, worded as the API server words them.

Pure: every function takes plain values (dicts from JSON) and returns messages or FieldErrors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from kubeforge._api.machinery.access import as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_quote, go_string_slice
from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = [
    "ANNOTATIONS_MAX_BYTES",
    "STANDARD_FINALIZERS",
    "immutable",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_path_segment_name",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_port_name",
    "regex_error",
    "validate_annotations",
    "validate_builtin_finalizers",
    "validate_finalizers",
    "validate_label_selector",
    "validate_labels",
    "validate_name",
    "validate_object_meta",
    "validate_object_meta_update",
    "validate_owner_references",
]

ANNOTATIONS_MAX_BYTES = 256 * 1024
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = rf"{_LABEL_FMT}(\.{_LABEL_FMT})*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_LABEL_VALUE_FMT = f"({_QUALIFIED_FMT})?"

_LABEL_RE = re.compile(rf"^{_LABEL_FMT}\Z")
_SUBDOMAIN_RE = re.compile(rf"^{_SUBDOMAIN_FMT}\Z")
_DNS1035_RE = re.compile(rf"^{_DNS1035_FMT}\Z")
_QUALIFIED_RE = re.compile(rf"^{_QUALIFIED_FMT}\Z")
_CONFIG_KEY_RE = re.compile(rf"^{_CONFIG_KEY_FMT}\Z")
_LABEL_VALUE_RE = re.compile(rf"^{_LABEL_VALUE_FMT}\Z")
_PORT_NAME_CHARSET_RE = re.compile(r"^[-a-z0-9]+\Z")
_PORT_NAME_LETTER_RE = re.compile(r"[a-z]")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Compose a regex failure message exactly like the server (note the doubled space)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


_LABEL_MSG = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _LABEL_FMT,
    "my-name",
    "123-abc",
)
_SUBDOMAIN_MSG = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _SUBDOMAIN_FMT,
    "example.com",
)
_DNS1035_MSG = regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character",
    _DNS1035_FMT,
    "my-name",
    "abc-123",
)
_QUALIFIED_MSG = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    _QUALIFIED_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
_LABEL_VALUE_MSG = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)
_CONFIG_KEY_MSG = regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    _CONFIG_KEY_FMT,
    "key.name",
    "KEY_NAME",
    "key-name",
)


@functools.lru_cache(maxsize=8192)
def is_dns1123_label(value: str) -> tuple[str, ...]:
    """Problems with `value` as an RFC 1123 label (namespaces, container names)."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_RE.match(value):
        # A valid subdomain that is no label can only be wrong for its dots.
        errs.append("must not contain dots" if _SUBDOMAIN_RE.match(value) else _LABEL_MSG)
    return tuple(errs)


@functools.lru_cache(maxsize=8192)
def is_dns1123_subdomain(value: str) -> tuple[str, ...]:
    """Problems with `value` as an RFC 1123 subdomain (most object names)."""
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _SUBDOMAIN_RE.match(value):
        errs.append(_SUBDOMAIN_MSG)
    return tuple(errs)


@functools.lru_cache(maxsize=8192)
def is_dns1035_label(value: str) -> tuple[str, ...]:
    """Problems with `value` as an RFC 1035 label (service names, CRD plural names)."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1035_RE.match(value):
        errs.append(_DNS1035_MSG)
    return tuple(errs)


def is_path_segment_name(value: str, prefix: bool = False) -> list[str]:
    """Problems with `value` as one URL path segment (the rule every name obeys)."""
    if not prefix and value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


@functools.lru_cache(maxsize=8192)
def is_qualified_name(value: str) -> tuple[str, ...]:
    """Problems with `value` as `[prefix/]name` (annotation keys, finalizers, label keys)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return (
            "a qualified name "
            + _QUALIFIED_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QUALIFIED_RE.match(name):
        errs.append("name part " + _QUALIFIED_MSG)
    return tuple(errs)


@functools.lru_cache(maxsize=8192)
def is_valid_label_value(value: str) -> tuple[str, ...]:
    """Problems with `value` as a label value (empty, or a short qualified name)."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_LABEL_VALUE_MSG)
    return tuple(errs)


def is_config_map_key(value: str) -> list[str]:
    """Problems with `value` as a ConfigMap or Secret data key."""
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _CONFIG_KEY_RE.match(value):
        errs.append(_CONFIG_KEY_MSG)
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_name(value: str) -> list[str]:
    """Problems with `value` as a named port (IANA_SVC_NAME)."""
    errs = []
    if len(value) > 15:
        errs.append(_max_len(15))
    if not _PORT_NAME_CHARSET_RE.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER_RE.search(value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _mask_trailing_dash(name: str) -> str:
    # A generateName gets random characters appended, so a trailing dash is fine; the
    # server swaps it (and, faithfully, the character before it) for a letter.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_name(name: str, rule: str, prefix: bool = False) -> Sequence[str]:
    """Problems with an object name under `rule`: subdomain, label, dns1035 or path.

    `prefix` is for generateName, which the server completes with random characters.
    """
    if rule == "path":
        return is_path_segment_name(name, prefix)
    if prefix:
        name = _mask_trailing_dash(name)
    if rule == "subdomain":
        return is_dns1123_subdomain(name)
    if rule == "label":
        return is_dns1123_label(name)
    if rule == "dns1035":
        return is_dns1035_label(name)
    raise ValueError(f"unknown name rule {rule!r}")


def immutable(path: str, value: Any) -> FieldError:
    """The `field is immutable` error for `path`."""
    return FieldError.invalid(path, value, "field is immutable")


# -- labels, annotations, selectors ---------------------------------------------------------


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Label keys must be qualified names and values short label values."""
    if not isinstance(labels, Mapping):
        return []
    errs: list[FieldError] = []
    for key, value in labels.items():
        # Checks are cached and nearly always pass: build errors only when one fails.
        messages = is_qualified_name(key)
        if messages:
            errs.extend(FieldError.invalid(path, key, m) for m in messages)
        if isinstance(value, str):
            messages = is_valid_label_value(value)
            if messages:
                errs.extend(FieldError.invalid(path, value, m) for m in messages)
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """Annotation keys are qualified names (any case); all together at most 256 KiB."""
    if not isinstance(annotations, Mapping):
        return []
    errs = []
    total = 0
    for key, value in annotations.items():
        for msg in is_qualified_name(key.lower()):
            errs.append(FieldError.invalid(path, key, msg))
        total += len(key.encode()) + (len(value.encode()) if isinstance(value, str) else 0)
    if total > ANNOTATIONS_MAX_BYTES:
        errs.append(FieldError.too_long(path, ANNOTATIONS_MAX_BYTES))
    return errs


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """A structured LabelSelector: valid labels, known operators, values as operators need."""
    if not isinstance(selector, Mapping):
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    exprs = selector.get("matchExpressions")
    for i, expr in enumerate(exprs if isinstance(exprs, list) else ()):
        if not isinstance(expr, Mapping):
            continue
        at = f"{path}.matchExpressions[{i}]"
        op = expr.get("operator")
        op = op if isinstance(op, str) else ""
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    FieldError.required(
                        f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    FieldError.forbidden(
                        f"{at}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(FieldError.invalid(f"{at}.operator", op, "not a valid selector operator"))
        key = expr.get("key")
        key = key if isinstance(key, str) else ""
        errs.extend(FieldError.invalid(f"{at}.key", key, m) for m in is_qualified_name(key))
        for j, value in enumerate(values if isinstance(values, list) else ()):
            if isinstance(value, str):
                errs.extend(
                    FieldError.invalid(f"{at}.values[{j}]", value, m)
                    for m in is_valid_label_value(value)
                )
    return errs


# -- finalizers and owner references --------------------------------------------------------


def validate_finalizers(finalizers: Any, path: str, strict: bool = False) -> list[FieldError]:
    """Finalizers are qualified names, and orphan excludes foregroundDeletion; `strict` adds
    the built-in kinds' rule (see validate_builtin_finalizers)."""
    if not isinstance(finalizers, list):
        return []
    errs: list[FieldError] = []
    for name in finalizers:
        if isinstance(name, str):
            errs.extend(FieldError.invalid(path, name, m) for m in is_qualified_name(name))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            FieldError.invalid(
                path,
                go_string_slice(finalizers),
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )
    if strict:
        errs.extend(validate_builtin_finalizers(finalizers, path))
    return errs


def validate_builtin_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    """Built-in kinds also refuse bare finalizer names other than the standard `kubernetes`,
    `orphan` and `foregroundDeletion` (names that are not qualified at all are reported by
    validate_finalizers)."""
    if not isinstance(finalizers, list):
        return []
    errs = []
    for name in finalizers:
        if (
            isinstance(name, str)
            and "/" not in name
            and name not in STANDARD_FINALIZERS
            and not is_qualified_name(name)
        ):
            errs.append(
                FieldError.invalid(
                    path,
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return errs


def _api_version_has_version(api_version: Any) -> bool:
    # `group/version` or `version`; more slashes do not parse, so no version at all.
    if not isinstance(api_version, str) or not api_version:
        return False
    parts = api_version.split("/")
    return len(parts) <= 2 and bool(parts[-1])


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    """Each reference names apiVersion, kind, name and uid; at most one is the controller.

    The paths carry no index, as the server reports them."""
    if not isinstance(refs, list):
        return []
    errs = []
    controller = ""
    for ref in refs:
        if not isinstance(ref, Mapping):
            continue
        api_version = ref.get("apiVersion") or ""
        kind = ref.get("kind") or ""
        name = ref.get("name") or ""
        if not _api_version_has_version(api_version):
            errs.append(
                FieldError.invalid(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        if not kind:
            errs.append(FieldError.invalid(f"{path}.kind", kind, "kind must not be empty"))
        if not name:
            errs.append(FieldError.invalid(f"{path}.name", name, "name must not be empty"))
        if not ref.get("uid"):
            errs.append(
                FieldError.invalid(f"{path}.uid", ref.get("uid") or "", "uid must not be empty")
            )
        if api_version == "v1" and kind == "Event":
            errs.append(
                FieldError.invalid(
                    path,
                    _owner_reference_value(ref),
                    "/v1, Kind=Event is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{kind}/{name}"
            if controller:
                errs.append(
                    FieldError.invalid(
                        path,
                        GoValue(
                            "[]v1.OwnerReference{"
                            + ", ".join(
                                _owner_reference_value(r).text
                                for r in refs
                                if isinstance(r, Mapping)
                            )
                            + "}"
                        ),
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {current}",
                    )
                )
            else:
                controller = current
    return errs


def _go_bool_pointer(value: Any) -> str:
    if value is None:
        return "(*bool)(nil)"
    return f"(*bool)({'true' if value else 'false'})"


def _owner_reference_value(ref: Mapping[str, Any]) -> GoValue:
    # Go prints pointers as addresses; the pointed-to flag is more useful and stable.
    return GoValue(
        "v1.OwnerReference{"
        f"APIVersion:{go_quote(ref.get('apiVersion') or '')}, "
        f"Kind:{go_quote(ref.get('kind') or '')}, "
        f"Name:{go_quote(ref.get('name') or '')}, UID:{go_quote(ref.get('uid') or '')}, "
        f"Controller:{_go_bool_pointer(ref.get('controller'))}, "
        f"BlockOwnerDeletion:{_go_bool_pointer(ref.get('blockOwnerDeletion'))}}}"
    )


# -- ObjectMeta -----------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def validate_object_meta(
    meta: Mapping[str, Any],
    namespaced: bool,
    name_rule: str,
    is_create: bool,
    *,
    strict_finalizers: bool = False,
) -> list[FieldError]:
    """Validate `metadata` of an object being created (`is_create`) or updated.

    On update the name, generateName and namespace are not re-checked (they are immutable);
    `strict_finalizers` applies the built-in kinds' finalizer rule (see validate_finalizers).
    """
    errs: list[FieldError] = []
    if is_create:
        # Values of the wrong JSON type are left to schema validation (a decode error).
        generate = as_str(meta.get("generateName"))
        name = as_str(meta.get("name"))
        if generate:
            errs.extend(
                FieldError.invalid("metadata.generateName", generate, m)
                for m in validate_name(generate, name_rule, prefix=True)
            )
        if not name:
            if not generate:
                errs.append(
                    FieldError.required("metadata.name", "name or generateName is required")
                )
        else:
            messages = validate_name(name, name_rule)
            if messages:
                errs.extend(FieldError.invalid("metadata.name", name, m) for m in messages)
        namespace = as_str(meta.get("namespace"))
        if namespaced:
            if not namespace:
                errs.append(FieldError.required("metadata.namespace"))
            else:
                messages = is_dns1123_label(namespace)
                if messages:
                    errs.extend(
                        FieldError.invalid("metadata.namespace", namespace, m) for m in messages
                    )
        elif namespace:
            errs.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        errs.append(
            FieldError.invalid(
                "metadata.generation", generation, "must be greater than or equal to 0"
            )
        )
    # Absent maps and lists (the usual case) need no call.
    labels = meta.get("labels")
    if labels:
        errs.extend(validate_labels(labels, "metadata.labels"))
    annotations = meta.get("annotations")
    if annotations:
        errs.extend(validate_annotations(annotations, "metadata.annotations"))
    refs = meta.get("ownerReferences")
    if refs:
        errs.extend(validate_owner_references(refs, "metadata.ownerReferences"))
    finalizers = meta.get("finalizers")
    if finalizers:
        errs.extend(validate_finalizers(finalizers, "metadata.finalizers", strict_finalizers))
    return errs


_IMMUTABLE_META = ("name", "namespace", "uid")
_IMMUTABLE_TIMES = ("creationTimestamp", "deletionTimestamp")


def _go_time(value: Any) -> Any:
    """A metav1.Time as Go's field errors print it (its String(), in UTC)."""
    moment = parse_time_or_none(value)
    if moment is None:
        return value
    return GoValue(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC"))


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Metadata transitions (ValidateObjectMetaAccessorUpdate): name, namespace, uid, the
    creation time and the deletion state are fixed; a deleting object gains no finalizers.
    Field-by-field rules live in validate_object_meta(..., is_create=False)."""
    errs = []
    for key in _IMMUTABLE_META:
        have, had = new.get(key) or "", old.get(key) or ""
        if have != had:
            errs.append(immutable(f"metadata.{key}", have))
    for key in _IMMUTABLE_TIMES:
        have, had = new.get(key) or None, old.get(key) or None
        if have != had:
            errs.append(immutable(f"metadata.{key}", _go_time(have)))
    grace = new.get("deletionGracePeriodSeconds")
    if grace != old.get("deletionGracePeriodSeconds"):
        errs.append(immutable("metadata.deletionGracePeriodSeconds", grace))
    if old.get("deletionTimestamp"):
        before = set(_strings(old.get("finalizers")))
        added = sorted({f for f in _strings(new.get("finalizers")) if f not in before})
        if added:
            errs.append(
                FieldError.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {go_string_slice(added)}",
                )
            )
    return errs
