"""Custom resources against their CRD's structural schema: validation, pruning and defaulting.

Validation follows the apiextensions server step by step, with its error types, field paths
and wording: OpenAPI value validation (kube-openapi semantics, messages such as
`spec.replicas in body must be of type integer: "string"`), then embedded-resource checks,
then `x-kubernetes-list-type` set/map uniqueness, then the CEL rules
(`x-kubernetes-validations`) unless an earlier error blocks them. Schemas are compiled once
into `Node` trees (cached per schema object), so the per-request walks stay cheap.
"""

from __future__ import annotations

import base64
import copy
import functools
import ipaddress
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import orjson

from kubeforge.api.machinery import cel as celrules
from kubeforge.api.machinery.fielderror import FieldError, FieldErrorType
from kubeforge.api.machinery.names import (
    GoValue,
    is_dns1035_label,
    is_dns1123_label,
    is_path_segment_name,
    validate_annotations,
    validate_labels,
)
from kubeforge.api.machinery.timestamps import parse_time_or_none

__all__ = [
    "BLOCKING_SKIPPED",
    "Node",
    "apply_defaults",
    "check_format",
    "embedded_errors",
    "go_number",
    "is_blocking",
    "node_of",
    "prune",
    "prune_value",
    "rule_errors",
    "shown_value",
    "validate",
    "validate_against",
    "validate_update",
]

BLOCKING_SKIPPED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
_BLOCKING = frozenset(
    {
        FieldErrorType.NOT_SUPPORTED,
        FieldErrorType.REQUIRED,
        FieldErrorType.TOO_LONG,
        FieldErrorType.TOO_MANY,
        FieldErrorType.TYPE_INVALID,
    }
)
_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_OBJECT_META_FIELDS = frozenset(
    """name generateName namespace selfLink uid resourceVersion generation creationTimestamp
    deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences finalizers
    managedFields""".split()  # noqa: SIM905
)
_NO_DEFAULT: Any = object()
_MAX_JSON_INTEGER = 2**53 - 1


# -- formats ---------------------------------------------------------------------------------

_DATE_RE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIME_RE = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_BASE64_RE = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z"
)
_UUID_RE = {
    "uuid": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid3": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid4": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid5": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z", re.I
    ),
}
# Letters and symbols of any script count as hostname characters, as in the server's pattern.
_HC = "[a-zA-Z0-9$+<=>^`|~\u00a0-\U0010ffff]"
_HCD = "[-a-zA-Z0-9$+<=>^`|~\u00a0-\U0010ffff]"
# The two patterns with Unicode ranges take tens of milliseconds to compile: on first use.
_HOSTNAME_PATTERN = (
    rf"^({_HC}((-?{_HC}{{0,62}})?)|"
    rf"({_HC}(({_HCD}{{0,61}}{_HC})?)(\.)){{1,}}({_HC})(-?{_HC}){{1,62}})\Z"
)
_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-\u0080-\U0010ffff]+"
_QUOTED = r'"(?:[^"\\\r\n]|\\.)*"'
_ADDR = rf"(?:{_ATOM}(?:\.{_ATOM})*|{_QUOTED})@(?:{_ATOM}(?:\.{_ATOM})*|\[[^\[\]\\]*\])"
_WORD = rf"(?:{_ATOM}|{_QUOTED})"
_EMAIL_PATTERN = rf"^\s*(?:{_ADDR}|(?:{_WORD}(?:[\s.]+{_WORD})*\s*)?<{_ADDR}>)\s*\Z"


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_MAC_RE = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2})(?:\1[0-9a-fA-F]{2})*"
    r"|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4})+)\Z"
)
_HEXCOLOR_RE = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR_RE = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)\Z", re.ASCII)
_SSN_RE = re.compile(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}\Z")
_CREDITCARD_RE = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})\Z"
)
_BSON_RE = re.compile(r"^[0-9a-fA-F]{24}\Z")
_GO_DURATION_RE = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_GO_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_SCALA_DURATION_RE = re.compile(r"^\s*(?:[0-9]+\s*[A-Za-z\u00b5]+\s*)+\Z")
_SCALA_PART_RE = re.compile(r"([0-9]+)\s*([A-Za-z\u00b5]+)")
_SCALA_UNITS = (
    (("ns", "nano"), 1),
    (("us", "\u00b5s", "micro"), 1_000),
    (("ms", "milli"), 1_000_000),
    (("s", "sec"), 1_000_000_000),
    (("m", "min"), 60_000_000_000),
    (("h", "hr", "hour"), 3_600_000_000_000),
    (("d", "day"), 86_400_000_000_000),
    (("w", "wk", "week"), 604_800_000_000_000),
)


def _is_date(text: str) -> bool:
    m = _DATE_RE.match(text)
    if m is None:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME_RE.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _go_duration(text: str) -> int | None:
    """Nanoseconds of a Go duration (`1h30m`, `-1.5s`), or None."""
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        return None
    total = Decimal(0)
    while rest:
        m = _GO_DURATION_RE.match(rest)
        if m is None or m.end() == 0:
            return None
        whole, frac, unit = m.groups()
        if not whole and not frac:
            return None
        if unit not in _GO_UNITS:
            return None
        total += (Decimal(whole or "0") + Decimal(f"0.{frac or '0'}")) * _GO_UNITS[unit]
        rest = rest[m.end() :]
    if total > 2**63 - 1:
        return None
    return int(-total if negative else total)


def _duration_nanos(text: str) -> int | None:
    """Nanoseconds of a `duration` format string (Go syntax, or `3 days`-style), or None."""
    nanos = _go_duration(text)
    if nanos is not None:
        return nanos
    if not _SCALA_DURATION_RE.match(text):
        return None
    total, matched = 0, False
    for number, unit in _SCALA_PART_RE.findall(text):
        unit = unit.strip().lower()
        for variants, factor in _SCALA_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or unit == variant:
                    matched = True
                    total += int(number) * factor
    return total if matched else None


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_cidr(text: str) -> bool:
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit():
        return False
    ip = _parse_ip(addr)
    return ip is not None and int(bits) <= (32 if ip.version == 4 and "." in addr else 128)


def _is_mac(text: str) -> bool:
    m = _MAC_RE.match(text)
    if m is None:
        return False
    octets = len(text.replace(":", "").replace("-", "").replace(".", "")) // 2
    return octets in (6, 8, 20)


_HOST_OK = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:[]%"
)
_ESCAPE_RE = re.compile(r"%(?![0-9a-fA-F]{2})")


def _is_request_uri(text: str) -> bool:
    """What Go's url.ParseRequestURI accepts: an absolute URI or an absolute path."""
    if not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return False
    if text == "*":
        return True
    scheme, rest = "", text
    for i, c in enumerate(text):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                break
            continue
        if c == ":":
            if i == 0:
                return False
            scheme, rest = text[:i], text[i + 1 :]
        break
    rest = rest.partition("?")[0]
    if not rest.startswith("/"):
        return bool(scheme)
    if rest.startswith("//") and scheme:
        authority, _, rest = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if any(c not in _HOST_OK and ord(c) < 0x80 for c in host) or _ESCAPE_RE.search(host):
            return False
        if not host.startswith("["):
            _, colon, port = host.rpartition(":")
            if colon and port and not port.isdigit():
                return False
    return _ESCAPE_RE.search(rest) is None


def _is_isbn10(text: str) -> bool:
    digits = re.sub(r"[\s-]+", "", text)
    if not re.match(r"^(?:[0-9]{9}X|[0-9]{10})\Z", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _is_isbn13(text: str) -> bool:
    digits = re.sub(r"[\s-]+", "", text)
    if not re.match(r"^[0-9]{13}\Z", digits):
        return False
    total = sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(digits))
    return total % 10 == 0


def _is_credit_card(text: str) -> bool:
    digits = re.sub(r"[^0-9]+", "", text)
    if not _CREDITCARD_RE.match(digits):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_ipv4(text: str) -> bool:
    return _parse_ip(text) is not None and "." in text


def _is_ipv6(text: str) -> bool:
    return _parse_ip(text) is not None and ":" in text


def _is_email(text: str) -> bool:
    return _compiled(_EMAIL_PATTERN).match(text) is not None


def _is_hostname(text: str) -> bool:
    if not _compiled(_HOSTNAME_PATTERN).match(text) or len(text.encode()) > 255:
        return False
    return all(len(part.encode()) <= 63 for part in text.split("."))


def _matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: rx.match(s) is not None


def _is_duration(text: str) -> bool:
    return _duration_nanos(text) is not None


# Formats the server validates, by name with dashes removed; any other format is ignored.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: _BSON_RE.match(s) is not None,
    "uri": _is_request_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": _is_mac,
    **{name: _matcher(rx) for name, rx in _UUID_RE.items()},
    "isbn": lambda s: _is_isbn10(s) or _is_isbn13(s),
    "isbn10": _is_isbn10,
    "isbn13": _is_isbn13,
    "creditcard": _is_credit_card,
    "ssn": lambda s: len(s) == 11 and _SSN_RE.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR_RE.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR_RE.match(s) is not None,
    "byte": lambda s: _BASE64_RE.match(s) is not None,
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_date_time,
}


def check_format(fmt: str, value: str) -> bool | None:
    """Whether `value` is valid in string format `fmt`; None for a format the server ignores."""
    check = _FORMATS.get(fmt.replace("-", ""))
    return None if check is None else check(value)


# -- numbers as Go prints them ----------------------------------------------------------------


def go_number(value: float | int) -> str:
    """A number the way Go's `%v` prints it (`16`, `1.5`, `1e+21`, `1e-05`)."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exp)  # decimal exponent of the first digit, plus one
    prefix = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        e = point - 1
        return f"{prefix}{mantissa}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def _quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _go_repr(value: Any) -> str:
    """Go's `%#v` of a JSON value held in an `interface{}`."""
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_quote(str(k))}:{_go_repr(value[k])}" for k in sorted(value))
        return f"map[string]interface {{}}{{{inner}}}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_repr(v) for v in value) + "}"
    return str(value)


def shown_value(value: Any) -> Any:
    """A bad value as the server shows it: scalars plainly, maps and lists as Go literals,
    null as the string "null"."""
    if value is None:
        return "null"
    if isinstance(value, Mapping | list):
        return GoValue(_go_repr(value))
    return value


# -- compiled schemas ------------------------------------------------------------------------

_CEL_NUMBER, _CEL_TIMESTAMP, _CEL_DURATION, _CEL_BYTES = 1, 2, 3, 4


class Node:
    """One schema node, compiled for the walks below. Build with `node_of(schema)`."""

    __slots__ = (
        "additional",
        "additional_allows",
        "all_of",
        "any_of",
        "cel_functions",
        "cel_kind",
        "deep_cel_convert",
        "deep_ext",
        "deep_rules",
        "default",
        "embedded",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "fmt",
        "fmt_check",
        "int_or_string",
        "items",
        "list_type",
        "map_keys",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_re",
        "preserve_unknown",
        "properties",
        "raw",
        "required",
        "rules",
        "type",
        "type_label",
        "types",
        "unique_items",
        "value_checks",
    )

    def __init__(self, raw: Mapping[str, Any], root: bool = False) -> None:
        self.raw = raw
        t = raw.get("type")
        nullable = bool(raw.get("nullable"))
        if isinstance(t, list):  # tolerate `["string", "null"]` from generic JSON schemas
            nullable = nullable or "null" in t
            kinds = [k for k in t if k != "null"]
            t = kinds[0] if len(kinds) == 1 else None
        self.type: str = t if isinstance(t, str) else ""
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string"))
        self.types: tuple[str, ...] = (
            ("integer", "string") if self.int_or_string else ((self.type,) if self.type else ())
        )
        self.type_label = ",".join(self.types)
        self.nullable = nullable
        fmt = raw.get("format")
        self.fmt: str = fmt if isinstance(fmt, str) and fmt.replace("-", "") in _FORMATS else ""
        self.fmt_check = _FORMATS.get(self.fmt.replace("-", "")) if self.fmt else None
        enum = raw.get("enum")
        self.enum: list[Any] | None = list(enum) if isinstance(enum, list) and enum else None
        self.maximum = _num(raw.get("maximum"))
        self.minimum = _num(raw.get("minimum"))
        self.exclusive_maximum = raw.get("exclusiveMaximum") is True
        self.exclusive_minimum = raw.get("exclusiveMinimum") is True
        self.multiple_of = _num(raw.get("multipleOf"))
        self.max_length = _int(raw.get("maxLength"))
        self.min_length = _int(raw.get("minLength"))
        pattern = raw.get("pattern")
        self.pattern: str = pattern if isinstance(pattern, str) and pattern else ""
        self.pattern_re = celrules.compile_go_regex(self.pattern) if self.pattern else None
        self.max_items = _int(raw.get("maxItems"))
        self.min_items = _int(raw.get("minItems"))
        self.unique_items = raw.get("uniqueItems") is True
        self.max_properties = _int(raw.get("maxProperties"))
        self.min_properties = _int(raw.get("minProperties"))
        required = raw.get("required")
        self.required: tuple[str, ...] = (
            tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()
        )
        props = raw.get("properties")
        self.properties: dict[str, Node] | None = None
        if isinstance(props, Mapping):
            self.properties = {k: Node(v) for k, v in props.items() if isinstance(v, Mapping)}
            if root and "metadata" in self.properties:
                # Only name and generateName of the root metadata belong to the schema.
                self.properties["metadata"] = _root_metadata(props["metadata"])
        additional = raw.get("additionalProperties")
        self.additional: Node | None = Node(additional) if isinstance(additional, Mapping) else None
        self.additional_allows: bool | None = (
            True
            if self.additional is not None
            else additional
            if isinstance(additional, bool)
            else None
        )
        items = raw.get("items")
        self.items: Node | None = Node(items) if isinstance(items, Mapping) else None
        self.all_of = _nodes(raw.get("allOf"))
        self.any_of = _nodes(raw.get("anyOf"))
        self.one_of = _nodes(raw.get("oneOf"))
        not_ = raw.get("not")
        self.not_: Node | None = Node(not_) if isinstance(not_, Mapping) else None
        self.preserve_unknown = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = raw.get("x-kubernetes-embedded-resource") is True
        list_type = raw.get("x-kubernetes-list-type")
        self.list_type: str = list_type if isinstance(list_type, str) else ""
        keys = raw.get("x-kubernetes-list-map-keys")
        self.map_keys: tuple[str, ...] = (
            tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        )
        self.default: Any = raw.get("default", _NO_DEFAULT)
        rules = raw.get("x-kubernetes-validations")
        self.rules: tuple[celrules.Rule, ...] = (
            tuple(celrules.rule_of(r) for r in rules if isinstance(r, Mapping))
            if isinstance(rules, list)
            else ()
        )
        functions: dict[str, Callable[..., Any]] = {}
        for rule in self.rules:
            functions.update(rule.functions)
        self.cel_functions = functions
        self.cel_kind = (
            _CEL_NUMBER
            if self.type == "number"
            else {
                "date-time": _CEL_TIMESTAMP,
                "datetime": _CEL_TIMESTAMP,
                "duration": _CEL_DURATION,
                "byte": _CEL_BYTES,
            }.get(self.fmt, 0)
            if self.type == "string"
            else 0
        )
        self.value_checks = bool(
            self.fmt_check
            or self.enum is not None
            or self.maximum is not None
            or self.minimum is not None
            or self.multiple_of is not None
            or self.max_length is not None
            or self.min_length is not None
            or self.pattern
            or self.all_of
            or self.any_of
            or self.one_of
            or self.not_ is not None
        )
        children = [*(self.properties or {}).values()]
        if self.additional is not None:
            children.append(self.additional)
        if self.items is not None:
            children.append(self.items)
        self.deep_ext: bool = (
            self.embedded or self.list_type in ("set", "map") or any(c.deep_ext for c in children)
        )
        self.deep_rules: bool = bool(self.rules) or any(c.deep_rules for c in children)
        self.deep_cel_convert: bool = bool(self.cel_kind) or any(
            c.deep_cel_convert for c in children
        )

    def child(self, key: str) -> Node | None:
        """The schema of object field `key` (a property, else additionalProperties)."""
        props = self.properties
        if props is not None:
            node = props.get(key)
            if node is not None:
                return node
        return self.additional


def _num(value: Any) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _nodes(value: Any) -> tuple[Node, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(Node(v) for v in value if isinstance(v, Mapping))


def _root_metadata(raw: Mapping[str, Any]) -> Node:
    props = raw.get("properties")
    kept = (
        {k: v for k, v in (props or {}).items() if k in ("name", "generateName")}
        if isinstance(props, Mapping)
        else {}
    )
    restricted: dict[str, Any] = {k: v for k, v in raw.items() if k in ("type", "nullable")}
    if kept:
        restricted["properties"] = kept
    return Node(restricted)


_cache: OrderedDict[int, tuple[Mapping[str, Any], Node]] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 512


def node_of(schema: Mapping[str, Any]) -> Node:
    """The compiled form of a CRD version's openAPIV3Schema (cached per schema object)."""
    key = id(schema)
    hit = _cache.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = Node(schema, root=True)
    with _cache_lock:
        # Holding the schema keeps its id from being reused while cached.
        _cache[key] = (schema, node)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return node


# -- OpenAPI value validation (kube-openapi semantics) ---------------------------------------


class _Report:
    """Collects errors; `prefix` is the field path validation started at (None: the root)."""

    __slots__ = ("errors", "prefix")

    def __init__(self, prefix: str | None) -> None:
        self.prefix = prefix
        self.errors: list[FieldError] = []

    def field(self, name: str) -> str:
        if name.startswith("."):
            name = name[1:]
        if self.prefix is None:
            return name or "<nil>"
        if not name:
            return self.prefix
        return f"{self.prefix}.{name}"

    def add(self, kind: FieldErrorType, name: str, value: Any, detail: str) -> None:
        self.errors.append(FieldError(kind, self.field(name), detail, value))


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_KIND_NAMES: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    dict: "object",
    list: "array",
}


def _kind(value: Any) -> str:
    name = _KIND_NAMES.get(type(value))
    if name is not None:
        if name == "integer" and not _INT64_MIN <= value <= _INT64_MAX:
            # Unstructured JSON keeps an integer as an int64 only when it fits (sigs.k8s.io/
            # json's PreserveInts); a wider one is read as the float64 it rounds to.
            return "number"
        return name
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return ""


def _json_integer(value: Any) -> bool:
    """Whether a float counts as an integer for `type: integer`: a whole number JSON can
    hold exactly, within +-(2**53 - 1) (kube-openapi's validator, via go-openapi/swag's
    IsFloat64AJSONInteger)."""
    number = float(value)
    return number.is_integer() and abs(number) <= _MAX_JSON_INTEGER


def _type_error(report: _Report, name: str, type_label: str, shown: str) -> None:
    detail = f"{name} in body must be of type {type_label}: {_quote(shown)}"
    report.add(FieldErrorType.TYPE_INVALID, name, shown, detail)


def _check(n: Node, value: Any, name: str, report: _Report) -> None:
    """Validate one value against one node, recursing into objects and arrays."""
    if value is None:
        if n.types and not n.nullable:
            _type_error(report, name, n.type_label, "null")
        if n.enum is not None:
            _enum_error(n, None, name, report)
        return
    kind = _kind(value)
    types = n.types
    if types or n.fmt:
        if n.fmt and kind not in ("string", "array"):
            if not (
                kind in types
                or (kind == "number" and "integer" in types and _json_integer(value))
                or (kind == "integer" and "number" in types)
            ):
                go_fmt = "int64" if kind == "integer" else "float64" if kind == "number" else ""
                _type_error(report, name, n.fmt, go_fmt)
        elif n.fmt and "number" not in types and "integer" not in types:
            pass  # strings and arrays pass the type check of a formatted non-number
        elif kind not in types and not (
            (kind == "number" and "integer" in types and _json_integer(value))
            or (kind == "integer" and "number" in types)
        ):
            _type_error(report, name, n.type_label, kind)
    if n.value_checks:
        if n.all_of or n.any_of or n.one_of or n.not_ is not None:
            _check_junctors(n, value, name, report)
        if kind == "string":
            _check_string(n, value, name, report)
        elif kind in ("integer", "number"):
            _check_number(n, value, kind, name, report)
    if kind == "array":
        _check_array(n, value, name, report)
    if n.enum is not None:
        _check_enum(n, value, name, report)
    if kind == "object":
        _check_object(n, value, name, report)


def _check_string(n: Node, value: str, name: str, report: _Report) -> None:
    if n.max_length is not None and len(value) > n.max_length:
        unit = "byte" if n.max_length == 1 else "bytes"
        report.add(
            FieldErrorType.TOO_LONG, name, value, f"may not be more than {n.max_length} {unit}"
        )
    elif n.min_length is not None and len(value) < n.min_length:
        report.add(
            FieldErrorType.INVALID,
            name,
            value,
            f"{name} in body should be at least {n.min_length} chars long",
        )
    elif n.pattern and n.pattern_re is not None and n.pattern_re.search(value) is None:
        report.add(
            FieldErrorType.INVALID, name, value, f"{name} in body should match '{n.pattern}'"
        )
    if n.fmt_check is not None and not n.fmt_check(value):
        _type_error(report, name, n.fmt, value)


def _check_number(n: Node, value: float | int, kind: str, name: str, report: _Report) -> None:
    as_int = kind == "integer"
    factor = n.multiple_of
    if factor is not None:
        if as_int and int(factor) != 0:
            f = int(factor)
            if f < 0:
                _bad_factor(report, name, f)
            elif value % f:
                _not_multiple(report, name, go_number(f), value)
        elif factor < 0:
            _bad_factor(report, name, factor)
        else:
            mult = value / factor if factor >= 1 else 1 / factor * value
            if not (mult == mult and abs(mult) <= 2**53 and float(mult).is_integer()):
                _not_multiple(report, name, go_number(float(factor)), value)
    if n.maximum is not None:
        limit: float | int = int(n.maximum) if as_int else float(n.maximum)
        if value > limit or (n.exclusive_maximum and value == limit):
            word = "less than" if n.exclusive_maximum else "less than or equal to"
            report.add(
                FieldErrorType.INVALID,
                name,
                value,
                f"{name} in body should be {word} {go_number(limit)}",
            )
    if n.minimum is not None:
        limit = int(n.minimum) if as_int else float(n.minimum)
        if value < limit or (n.exclusive_minimum and value == limit):
            word = "greater than" if n.exclusive_minimum else "greater than or equal to"
            report.add(
                FieldErrorType.INVALID,
                name,
                value,
                f"{name} in body should be {word} {go_number(limit)}",
            )


def _bad_factor(report: _Report, name: str, factor: float | int) -> None:
    report.add(
        FieldErrorType.INVALID,
        name,
        factor,
        f"factor MultipleOf declared for {name} must be positive: {go_number(factor)}",
    )


def _not_multiple(report: _Report, name: str, factor: str, value: float | int) -> None:
    report.add(
        FieldErrorType.INVALID, name, value, f"{name} in body should be a multiple of {factor}"
    )


def _check_array(n: Node, value: list[Any], name: str, report: _Report) -> None:
    items = n.items
    if items is not None:
        for i, item in enumerate(value):
            _check(items, item, f"{name}[{i}]", report)
    size = len(value)
    if n.min_items is not None and size < n.min_items:
        report.add(
            FieldErrorType.INVALID,
            name,
            size,
            f"{name} in body should have at least {n.min_items} items",
        )
    if n.max_items is not None and size > n.max_items:
        word = "item" if n.max_items == 1 else "items"
        report.add(FieldErrorType.TOO_MANY, name, size, f"must have at most {n.max_items} {word}")
    if n.unique_items:
        seen: list[Any] = []
        for item in value:
            if any(_json_equal(item, s) for s in seen):
                report.add(
                    FieldErrorType.INVALID, name, "", f"{name} in body shouldn't contain duplicates"
                )
                break
            seen.append(item)


def _json_equal(a: Any, b: Any) -> bool:
    """Deep equality that, like Go's DeepEqual on decoded JSON, keeps bool/int/float apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _enum_matches(value: Any, option: Any) -> bool:
    if _json_equal(value, option):
        return True
    # Go converts numbers between int64 and float64 before comparing (truncating floats).
    if isinstance(value, bool) or isinstance(option, bool):
        return False
    if isinstance(value, int) and isinstance(option, float):
        return float(value) == option
    if isinstance(value, float) and isinstance(option, int):
        return value == value and abs(value) < 2**63 and int(value) == option
    return False


def _check_enum(n: Node, value: Any, name: str, report: _Report) -> None:
    assert n.enum is not None
    if any(_enum_matches(value, option) for option in n.enum):
        return
    _enum_error(n, value, name, report)


def _enum_error(n: Node, value: Any, name: str, report: _Report) -> None:
    assert n.enum is not None
    shown = [
        v if isinstance(v, str) else orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
        for v in n.enum
    ]
    report.errors.append(FieldError.not_supported(report.field(name), shown_value(value), shown))


def _check_object(n: Node, value: Mapping[str, Any], name: str, report: _Report) -> None:
    count = len(value)
    if n.min_properties is not None and count < n.min_properties:
        report.add(
            FieldErrorType.INVALID,
            name,
            n.min_properties,
            f"{name} in body should have at least {n.min_properties} properties",
        )
        return
    if n.max_properties is not None and count > n.max_properties:
        word = "item" if n.max_properties == 1 else "items"
        report.add(
            FieldErrorType.TOO_MANY, name, count, f"must have at most {n.max_properties} {word}"
        )
        return
    props = n.properties
    if n.additional_allows is False:
        for key in value:
            if (props is None or key not in props) and key not in ("$schema", "id"):
                report.add(
                    FieldErrorType.INVALID,
                    name,
                    key,
                    f"{name}.{key} in body is a forbidden property",
                )
    elif n.additional is not None:
        additional = n.additional
        for key, item in value.items():
            if props is None or key not in props:
                _check(additional, item, f"{name}.{key}", report)
    if props:
        for key, child in props.items():
            if key in value:
                _check(child, value[key], f"{name}.{key}" if name else key, report)
    for key in n.required:
        if key not in value:
            report.errors.append(FieldError.required(report.field(f"{name}.{key}")))


def _check_junctors(n: Node, value: Any, name: str, report: _Report) -> None:
    """allOf / anyOf / oneOf / not: their failures are reported at the validation root."""
    where = report.field("") if report.prefix is not None else "<nil>"

    def run(sub: Node) -> list[FieldError]:
        inner = _Report(report.prefix)
        _check(sub, value, name, inner)
        return inner.errors

    if n.any_of:
        best: list[FieldError] | None = None
        for sub in n.any_of:
            errs = run(sub)
            if not errs:
                best = None
                break
            if best is None or len(errs) < len(best):
                best = errs
        else:
            report.errors.append(
                FieldError.invalid(
                    where, "", f"{_quote(name)} must validate at least one schema (anyOf)"
                )
            )
        if best:
            report.errors.extend(best)
    if n.one_of:
        valid, best = 0, None
        for sub in n.one_of:
            errs = run(sub)
            if not errs:
                valid += 1
                best = None
            elif valid == 0 and (best is None or len(errs) < len(best)):
                best = errs
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            report.errors.append(
                FieldError.invalid(
                    where,
                    "",
                    f"{_quote(name)} must validate one and only one schema (oneOf). {extra}",
                )
            )
            if best:
                report.errors.extend(best)
    if n.all_of:
        passed = 0
        for sub in n.all_of:
            errs = run(sub)
            passed += not errs
            report.errors.extend(errs)
        if passed != len(n.all_of):
            extra = ". None validated" if passed == 0 else ""
            report.errors.append(
                FieldError.invalid(
                    where, "", f"{_quote(name)} must validate all the schemas (allOf){extra}"
                )
            )
    if n.not_ is not None and not run(n.not_):
        report.errors.append(
            FieldError.invalid(where, "", f"{_quote(name)} must not validate the schema (not)")
        )


# -- embedded resources and list types --------------------------------------------------------


def _check_extensions(
    n: Node, value: Any, path: str, meta_errs: list[FieldError], list_errs: list[FieldError]
) -> None:
    """Embedded-resource and x-kubernetes-list-type checks (field paths use `[key]`)."""
    if type(value) is dict:
        if n.embedded:
            meta_errs.extend(_embedded_errors(value, path))
        additional = n.additional
        props = n.properties
        for key, item in value.items():
            child = props.get(key) if props is not None else None
            if child is not None:
                if child.deep_ext:
                    _check_extensions(
                        child, item, f"{path}.{key}" if path else key, meta_errs, list_errs
                    )
            elif additional is not None and additional.deep_ext:
                _check_extensions(additional, item, f"{path}[{key}]", meta_errs, list_errs)
    elif type(value) is list:
        if n.list_type == "set":
            list_errs.extend(_set_duplicates(value, path))
        elif n.list_type == "map":
            list_errs.extend(_map_duplicates(n, value, path))
        items = n.items
        if items is not None and items.deep_ext:
            for i, item in enumerate(value):
                _check_extensions(items, item, f"{path}[{i}]", meta_errs, list_errs)


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _embedded_errors(obj: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if "apiVersion" not in obj:
        errs.append(FieldError.required(_join(path, "apiVersion"), "must not be empty"))
    if "kind" not in obj:
        errs.append(FieldError.required(_join(path, "kind"), "must not be empty"))
    for key, value in obj.items():
        where = _join(path, key)
        if key == "apiVersion":
            if not isinstance(value, str):
                errs.append(FieldError.invalid(where, shown_value(value), "must be a string"))
            elif not value:
                errs.append(FieldError.invalid(where, value, "must not be empty"))
            elif value.count("/") > 1 or value.startswith("/") or value.endswith("/"):
                errs.append(
                    FieldError.invalid(where, value, f"unexpected GroupVersion string: {value}")
                )
        elif key == "kind":
            if not isinstance(value, str):
                errs.append(FieldError.invalid(where, shown_value(value), "must be a string"))
            elif not value:
                errs.append(FieldError.invalid(where, value, "must not be empty"))
            else:
                problems = is_dns1035_label(value.lower())
                if problems:
                    errs.append(
                        FieldError.invalid(
                            where,
                            value,
                            "may have mixed case, but should otherwise match: "
                            + ",".join(problems),
                        )
                    )
        elif key == "metadata":
            errs.extend(_embedded_meta_errors(value, where))
    return errs


def _embedded_meta_errors(meta: Any, path: str) -> list[FieldError]:
    if not isinstance(meta, Mapping):
        return [FieldError.invalid(path, shown_value(meta), "must be an object")]
    errs: list[FieldError] = []
    for key, prefix in (("name", False), ("generateName", True)):
        value = meta.get(key)
        if isinstance(value, str) and value:
            errs.extend(
                FieldError.invalid(_join(path, key), value, m)
                for m in is_path_segment_name(value, prefix)
            )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        errs.extend(
            FieldError.invalid(_join(path, "namespace"), namespace, m)
            for m in is_dns1123_label(namespace)
        )
    errs.extend(validate_labels(meta.get("labels"), _join(path, "labels")))
    errs.extend(validate_annotations(meta.get("annotations"), _join(path, "annotations")))
    return errs


def _set_duplicates(items: list[Any], path: str) -> list[FieldError]:
    seen: dict[Any, int] = {}
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        key = _hashable(item)
        times = seen.get(key, 0)
        seen[key] = times + 1
        if times == 1:
            errs.append(FieldError.duplicate(f"{path}[{i}]", shown_value(item)))
    return errs


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value).__name__, value)


def _map_keys(n: Node, item: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The identity of a list-map item: its key values (defaults for missing keys)."""
    shown: dict[str, Any] = {}
    parts = []
    item_schema = n.items
    for k in n.map_keys:
        if k in item:
            v = item[k]
        else:
            child = item_schema.child(k) if item_schema is not None else None
            v = child.default if child is not None else _NO_DEFAULT
            if v is _NO_DEFAULT:
                parts.append(("unspecified",))
                continue
        shown[k] = v
        parts.append(_hashable(v))
    return tuple(parts), shown


def _map_duplicates(n: Node, items: list[Any], path: str) -> list[FieldError]:
    for i, item in enumerate(items):
        if item is not None and not isinstance(item, Mapping):
            return [
                FieldError.invalid(
                    f"{path}[{i}]",
                    shown_value(item),
                    "must be an object for an array of list-type map",
                )
            ]
    if len(items) <= 1 or not n.map_keys:
        return []
    seen: dict[Any, int] = {}
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        if item is None:
            continue
        key, shown = _map_keys(n, item)
        times = seen.get(key, 0)
        seen[key] = times + 1
        if times == 1:
            errs.append(FieldError.duplicate(f"{path}[{i}]", GoValue(_go_repr(shown))))
    return errs


# -- CEL rules --------------------------------------------------------------------------------


def _parse_timestamp(text: str) -> datetime | None:
    if not _is_date_time(text):
        return None
    if text[19:20] == ",":
        # Go's time parsing, which CEL's conversion uses, also takes a comma before a fraction.
        text = f"{text[:19]}.{text[20:]}"
    return parse_time_or_none(text)


def _to_cel(value: Any, n: Node | None) -> Any:
    """A value as its CEL type: numbers as doubles, date-time/duration/byte strings as
    timestamps/durations/bytes. Untouched (no copy) where the schema has no such fields."""
    if n is None or not n.deep_cel_convert or value is None:
        return value
    t = type(value)
    if t is dict:
        return {k: _to_cel(v, n.child(k)) for k, v in value.items()}
    if t is list:
        items = n.items
        return value if items is None else [_to_cel(v, items) for v in value]
    kind = n.cel_kind
    if kind == _CEL_NUMBER and t is int:
        return float(value)
    if t is str:
        if kind == _CEL_TIMESTAMP:
            parsed = _parse_timestamp(value)
            return value if parsed is None else parsed
        if kind == _CEL_DURATION:
            nanos = _duration_nanos(value)
            return value if nanos is None else timedelta(microseconds=nanos // 1000)
        if kind == _CEL_BYTES:
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                return value
    return value


def _cel_root(value: Any, n: Node) -> Any:
    """The root object as rules see it: metadata reduced to name and generateName."""
    if type(value) is dict and "metadata" in value:
        meta = value["metadata"]
        if isinstance(meta, Mapping):
            value = {
                **value,
                "metadata": {k: meta[k] for k in ("name", "generateName") if k in meta},
            }
    return _to_cel(value, n)


def _map_list_index(n: Node, old: Any) -> dict[Any, Any]:
    if n.list_type != "map" or not n.map_keys or type(old) is not list:
        return {}
    index: dict[Any, Any] = {}
    for item in old:
        if isinstance(item, Mapping):
            index.setdefault(_map_keys(n, item)[0], item)
    return index


def _check_rules(
    n: Node,
    value: Any,
    old: Any,
    has_old: bool,
    path: str,
    errors: list[FieldError],
    root: bool = False,
) -> None:
    if value is None:
        return
    if n.rules:
        convert = _cel_root if root else _to_cel
        errors.extend(
            celrules.run_rules(
                n.rules,
                convert(value, n),
                convert(old, n) if has_old else None,
                has_old,
                path,
                n.type,
                n.cel_functions,
            )
        )
    t = type(value)
    if t is dict:
        old_map = old if has_old and type(old) is dict else None
        props = n.properties
        additional = n.additional
        if additional is not None and additional.deep_rules:
            for key, item in value.items():
                if props is None or key not in props:
                    previous = old_map.get(key) if old_map is not None else None
                    _check_rules(
                        additional, item, previous, previous is not None, f"{path}[{key}]", errors
                    )
        if props:
            for key, item in value.items():
                child = props.get(key)
                if child is not None and child.deep_rules:
                    previous = old_map.get(key) if old_map is not None else None
                    _check_rules(
                        child, item, previous, previous is not None, _join(path, key), errors
                    )
    elif t is list:
        items = n.items
        if items is not None and items.deep_rules:
            index = _map_list_index(n, old) if has_old else {}
            for i, item in enumerate(value):
                previous = (
                    index.get(_map_keys(n, item)[0])
                    if index and isinstance(item, Mapping)
                    else None
                )
                _check_rules(items, item, previous, previous is not None, f"{path}[{i}]", errors)


# -- public API -------------------------------------------------------------------------------


def is_blocking(errors: list[FieldError]) -> bool:
    """Whether any error keeps the server from running CEL rules (type, required, enum,
    maxLength/maxItems/maxProperties violations)."""
    return any(e.type in _BLOCKING for e in errors)


def validate_against(n: Node, value: Any, prefix: str | None, name: str = "") -> list[FieldError]:
    """The OpenAPI (value) errors of `value` against a compiled node: field paths start at
    `prefix` (None for an object root) and messages name fields relative to `name`."""
    report = _Report(prefix)
    _check(n, value, name, report)
    return report.errors


def rule_errors(n: Node, value: Any, old: Any, path: str) -> list[FieldError]:
    """The CEL rule errors of `value` under compiled node `n` (`old` enables transition
    rules); `path` is the field path of `value`."""
    errors: list[FieldError] = []
    if n.deep_rules:
        _check_rules(n, value, old, old is not None, path, errors)
    return errors


def embedded_errors(n: Node, value: Any, path: str) -> list[FieldError]:
    """Embedded-resource (apiVersion, kind, metadata) errors of `value` under node `n`."""
    meta_errs: list[FieldError] = []
    if n.deep_ext:
        _check_extensions(n, value, path, meta_errs, [])
    return meta_errs


def prune_value(value: Any, n: Node, resource_root: bool = False) -> list[str]:
    """Prune `value` in place against compiled node `n`; `resource_root` keeps apiVersion,
    kind and metadata as at the root of an object. Returns the dropped paths, sorted."""
    dropped: list[str] = []
    _prune(value, n, "", dropped, root=resource_root)
    dropped.sort()
    return dropped


def validate(
    obj: Any, schema: Mapping[str, Any], *, old: Any = None, path: str = ""
) -> list[FieldError]:
    """Validate a custom resource (or, with `path`, a value inside one) against its schema,
    reporting what the API server reports. `old` enables transition rules on update."""
    n = node_of(schema)
    errors = validate_against(n, obj, None, path)
    if n.deep_ext:
        meta_errs: list[FieldError] = []
        list_errs: list[FieldError] = []
        _check_extensions(n, obj, path, meta_errs, list_errs)
        errors.extend(meta_errs)
        errors.extend(list_errs)
    if n.deep_rules:
        if is_blocking(errors):
            errors.append(FieldError.invalid("<nil>", "null", BLOCKING_SKIPPED))
        else:
            _check_rules(n, obj, old, old is not None, path, errors, root=not path)
    return errors


def validate_update(new: Any, old: Any, schema: Mapping[str, Any]) -> list[FieldError]:
    """Validate an update: the new object, with transition rules comparing to `old`."""
    return validate(new, schema, old=old)


def prune(obj: Any, schema: Mapping[str, Any]) -> list[str]:
    """Drop, in place, every field the structural schema does not allow; returns the dropped
    paths sorted (`spec.foo`, `spec.items[0].bar`), which the server reports as unknown."""
    dropped: list[str] = []
    if type(obj) is dict:
        _prune(obj, node_of(schema), "", dropped, root=True)
    dropped.sort()
    return dropped


def _prune(value: Any, n: Node | None, path: str, dropped: list[str], root: bool = False) -> None:
    if n is not None and n.preserve_unknown:
        _skip_prune(value, n, path, dropped)
        return
    t = type(value)
    if t is dict:
        if n is None:
            dropped.extend(_join(path, k) for k in value)
            value.clear()
            return
        props = n.properties
        embedded = root or n.embedded
        for key in list(value):
            if embedded and key in _META_FIELDS:
                if key == "metadata":
                    # ObjectMeta, at the root as in embedded objects, keeps only its fields.
                    _prune_meta(value[key], _join(path, key), dropped)
                continue
            child = props.get(key) if props is not None else None
            if child is not None:
                _prune(value[key], child, _join(path, key), dropped)
            elif n.additional_allows is not None:
                # additionalProperties: false keeps the field too; validation refuses it.
                _prune(value[key], n.additional, _join(path, key), dropped)
            else:
                dropped.append(_join(path, key))
                del value[key]
    elif t is list:
        items = n.items if n is not None else None
        for i, item in enumerate(value):
            _prune(item, items, f"{path}[{i}]", dropped)


def _skip_prune(value: Any, n: Node | None, path: str, dropped: list[str]) -> None:
    """Under x-kubernetes-preserve-unknown-fields: keep unknown fields, prune known ones."""
    if n is None:
        return
    t = type(value)
    if t is dict:
        props = n.properties
        for key, item in value.items():
            if n.embedded and key in _META_FIELDS:
                continue
            child = props.get(key) if props is not None else None
            if child is not None:
                _prune(item, child, _join(path, key), dropped)
            elif n.additional_allows is not None:
                _prune(item, n.additional, _join(path, key), dropped)
    elif t is list:
        for i, item in enumerate(value):
            _skip_prune(item, n.items, f"{path}[{i}]", dropped)


def _prune_meta(meta: Any, path: str, dropped: list[str]) -> None:
    if type(meta) is not dict:
        return
    for key in list(meta):
        if key not in _OBJECT_META_FIELDS:
            dropped.append(_join(path, key))
            del meta[key]


def apply_defaults(obj: Any, schema: Mapping[str, Any]) -> None:
    """Apply schema defaults in place, and drop `null`s the schema neither allows nor
    defaults (the server prunes those before defaulting)."""
    _default(obj, node_of(schema))


def _default(value: Any, n: Node) -> None:
    t = type(value)
    if t is dict:
        props = n.properties
        additional = n.additional
        for key in [k for k, v in value.items() if v is None]:
            child = props.get(key) if props is not None else None
            if child is None:
                child = additional
            if child is None or child.nullable:
                continue
            if child.default is _NO_DEFAULT:
                del value[key]
            else:
                value[key] = copy.deepcopy(child.default)
        if props:
            for key, child in props.items():
                if child.default is not _NO_DEFAULT and key not in value:
                    value[key] = copy.deepcopy(child.default)
        for key, item in value.items():
            if item is None or type(item) not in (dict, list):
                continue
            child = props.get(key) if props is not None else None
            if child is None:
                child = additional
            if child is not None:
                _default(item, child)
    elif t is list:
        items = n.items
        if items is None:
            return
        for i, item in enumerate(value):
            if item is None and not items.nullable and items.default is not _NO_DEFAULT:
                value[i] = item = copy.deepcopy(items.default)
            if type(item) in (dict, list):
                _default(item, items)
