"""Label and field selectors: parsing the query-string grammar and matching objects.

Structured selectors (metav1.LabelSelector in specs, node selector requirements, plain label
maps) are matched directly by `label_selector_matches`, `requirement_matches` and
`label_set_matches`, without converting them first: controllers match every pod they see.
`selector_converts` says whether a structured selector is one the server can convert.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.names import is_qualified_name, is_valid_label_value

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "field_value",
    "label_selector_matches",
    "label_set_matches",
    "requirement_matches",
    "selector_converts",
    "selector_from_dict",
]


class SelectorError(ValueError):
    """A selector that does not parse or names something invalid."""


_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_PREFIX = r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)"
_KEY_RE = re.compile(rf"^({_PREFIX}/)?{_NAME}\Z")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


def validate_label_key(key: str) -> str | None:
    """Why `key` is not a valid label key, or None."""
    if not key:
        return "name part must be non-empty"
    prefix, _, name = key.rpartition("/")
    if prefix and len(prefix) > 253:
        return "prefix part must be no more than 253 characters"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _KEY_RE.match(key):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return None


def validate_label_value(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _VALUE_RE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return None


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector: `key <operator> values`."""

    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        if op in ("!=", "notin"):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except (TypeError, ValueError):
            return False
        return have > want if op == ">" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return f"!{self.key}"
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        return f"{self.key}{op}{self.values[0]}"


_TOKEN_RE = re.compile(r"\s*(\(|\)|,|!=|==|=|>|<|!|[^\s(),!=<>]+)")


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse `a=b,c!=d,e in (f,g),!h,i` (the full label selector grammar)."""
        tokens: list[str] = list(_TOKEN_RE.findall(text))
        rest = _TOKEN_RE.sub("", text).strip()
        if rest:
            raise SelectorError(f"unable to parse requirement: found '{rest}'")
        reqs: list[Requirement] = []
        i = 0

        def take() -> str | None:
            nonlocal i
            if i < len(tokens):
                i += 1
                return tokens[i - 1]
            return None

        def peek() -> str | None:
            return tokens[i] if i < len(tokens) else None

        while i < len(tokens):
            tok = take()
            if tok == "!":
                key = take()
                if key is None or key in "(),!=<>":
                    raise SelectorError("unable to parse requirement: expected a key after '!'")
                reqs.append(_requirement(key, "!", ()))
            elif tok is None or tok in "(),=<>" or tok in ("==", "!="):
                raise SelectorError(
                    f"unable to parse requirement: found '{tok}', expected: identifier"
                )
            else:
                key = tok
                nxt = peek()
                if nxt is None or nxt == ",":
                    reqs.append(_requirement(key, "exists", ()))
                elif nxt in ("=", "==", "!=", ">", "<"):
                    take()
                    value = peek()
                    if value is None or value == ",":
                        value = ""
                    else:
                        take()
                        if value in "()!=<>":
                            raise SelectorError(
                                f"unable to parse requirement: found '{value}', "
                                "expected: identifier"
                            )
                    op = "=" if nxt == "==" else nxt
                    reqs.append(_requirement(key, op, (value,)))
                elif nxt in ("in", "notin"):
                    take()
                    if take() != "(":
                        raise SelectorError(
                            f"unable to parse requirement: found '{peek()}', expected: '('"
                        )
                    values: list[str] = []
                    while True:
                        tok = take()
                        if tok is None:
                            raise SelectorError("unable to parse requirement: expected ')'")
                        if tok == ")":
                            break
                        if tok == ",":
                            continue
                        values.append(tok)
                    reqs.append(_requirement(key, nxt, tuple(values)))
                else:
                    raise SelectorError(
                        f"unable to parse requirement: found '{nxt}', expected: "
                        "in, notin, =, ==, !=, gt, lt"
                    )
            sep = take()
            if sep not in (None, ","):
                raise SelectorError(f"unable to parse requirement: found '{sep}', expected: ','")
        return cls(tuple(reqs))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether `labels` satisfy every requirement; anything but a mapping has no labels."""
        if not isinstance(labels, Mapping):
            labels = {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _requirement(key: str, op: str, values: tuple[str, ...]) -> Requirement:
    problem = validate_label_key(key)
    if problem:
        raise SelectorError(f'unable to parse requirement: invalid label key "{key}": {problem}')
    if op in (">", "<"):
        try:
            int(values[0])
        except ValueError:
            raise SelectorError(
                f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                f"an integer: {values[0]}"
            ) from None
    else:
        for v in values:
            problem = validate_label_value(v)
            if problem:
                raise SelectorError(
                    f'unable to parse requirement: invalid label value: "{v}": at key: '
                    f'"{key}": {problem}'
                )
    if op in ("in", "notin") and not values:
        raise SelectorError(
            "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty"
        )
    return Requirement(key, op, values)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a structured LabelSelector (matchLabels, matchExpressions) into a selector.

    A missing selector matches nothing in Kubernetes; callers decide what None means, this
    returns the empty (match-all) selector for an empty mapping.
    """
    if not selector:
        return LabelSelector()
    reqs = [
        _requirement(k, "=", (str(v),))
        for k, v in sorted((selector.get("matchLabels") or {}).items())
    ]
    for expr in selector.get("matchExpressions") or []:
        op = _OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        reqs.append(_requirement(expr["key"], op, tuple(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


def _requirement_converts(expr: Any) -> bool:
    if not isinstance(expr, Mapping):
        return False
    op = expr.get("operator")
    values = as_list(expr.get("values"))
    key = as_str(expr.get("key"))
    if op in ("In", "NotIn"):
        if not values:
            return False
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return False
    else:
        return False
    if is_qualified_name(key):
        return False
    return all(isinstance(v, str) and not is_valid_label_value(v) for v in values)


# Unlike selector_from_dict, refuses non-string values and values on Exists, as the server does.
def selector_converts(selector: Any) -> bool:
    """Whether a structured LabelSelector converts to a selector (the server says "invalid
    label selector" otherwise); a null one does, selecting nothing."""
    if selector is None:
        return True
    if not isinstance(selector, Mapping):
        return False
    for key, value in as_dict(selector.get("matchLabels")).items():
        if is_qualified_name(key) or not isinstance(value, str) or is_valid_label_value(value):
            return False
    return all(_requirement_converts(e) for e in as_list(selector.get("matchExpressions")))


def label_set_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether `labels` carry every key and value of the plain label map `selector`
    (labels.SelectorFromSet: Service selectors, nodeSelector); an empty map selects all."""
    return all(labels.get(key) == value for key, value in selector.items())


def requirement_matches(
    requirement: Any, labels: Mapping[str, Any], *, numeric: bool = False
) -> bool:
    """Whether `labels` satisfy one structured requirement (`key`, `operator`, `values`):
    In, NotIn, Exists, DoesNotExist, and with `numeric` also the Gt and Lt (one integer
    value) of node selector requirements. Anything else selects nothing, as a selector
    that does not convert."""
    if not isinstance(requirement, Mapping):
        return False
    key = requirement.get("key")
    if not isinstance(key, str):
        key = ""
    operator = requirement.get("operator")
    values = requirement.get("values")
    if not isinstance(values, list):
        values = ()
    have = labels.get(key)
    if operator == "In":
        return have is not None and have in values
    if operator == "NotIn":
        return have is None or have not in values
    if operator == "Exists":
        return have is not None
    if operator == "DoesNotExist":
        return have is None
    if numeric and operator in ("Gt", "Lt") and have is not None and len(values) == 1:
        try:
            number, bound = int(have), int(values[0])
        except (TypeError, ValueError):
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def label_selector_matches(selector: Any, labels: Mapping[str, Any] | None) -> bool:
    """Whether a structured metav1.LabelSelector (matchLabels, matchExpressions) selects
    `labels`. A null (absent) selector selects nothing; an empty one selects everything."""
    if not isinstance(selector, Mapping):
        return False
    if not isinstance(labels, Mapping):
        labels = {}
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, Mapping) and not label_set_matches(match_labels, labels):
        return False
    expressions = selector.get("matchExpressions")
    if not isinstance(expressions, list):
        return True
    return all(requirement_matches(e, labels) for e in expressions)


def field_value(obj: Mapping[str, Any], path: str) -> str | None:
    """The string form of a dotted field path's value, as field selectors compare it."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
        if node is None:
            return None
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, list):
        # status.podIPs and similar: compare against the first entry's ip.
        if node and isinstance(node[0], Mapping):
            first = node[0].get("ip")
            return None if first is None else str(first)
        return None
    if isinstance(node, Mapping):
        return None
    return str(node)


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: a conjunction of `field=value` / `field!=value` terms."""

    terms: tuple[tuple[str, str, str], ...] = ()  # (field, "=" or "!=", value)

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        terms: list[tuple[str, str, str]] = []
        for part in _split_unescaped(text, ","):
            if not part.strip():
                continue
            for op in ("!=", "==", "="):
                idx = _find_unescaped(part, op)
                if idx >= 0:
                    field = part[:idx].strip()
                    value = _unescape(part[idx + len(op) :])
                    terms.append((field, "!=" if op == "!=" else "=", value))
                    break
            else:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        return cls(tuple(terms))

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def fields(self) -> list[str]:
        return [t[0] for t in self.terms]

    def exact(self, field: str) -> str | None:
        """The value a term requires `field` to equal, if any (used to narrow lookups)."""
        for f, op, value in self.terms:
            if f == field and op == "=":
                return value
        return None

    def matches(
        self, obj: Mapping[str, Any], getter: Callable[[Mapping[str, Any], str], str | None]
    ) -> bool:
        for field, op, value in self.terms:
            have = getter(obj, field)
            if have is None:
                have = ""
            if (have == value) != (op == "="):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{v}" for f, op, v in self.terms)


def _split_unescaped(text: str, sep: str) -> Sequence[str]:
    parts, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _find_unescaped(text: str, needle: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(needle, i):
            return i
        i += 1
    return -1


def _unescape(text: str) -> str:
    out, escaped = [], False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)
