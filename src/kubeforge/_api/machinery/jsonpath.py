"""The JSONPath dialect Kubernetes uses for printer columns, scale paths and `-o jsonpath`.

Supported: `.a.b` (dots inside a name escaped as `\\.`), `['a.b']` / `["a.b"]`, `.*`, `[n]`,
`[-n]`, `[start:end:step]`, `[*]`, unions `[0,2]` / `['a','b']`, recursive descent `..name`,
filters `[?(@.type=="Ready")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` and existence
`[?(@.x)]`, an optional leading `$` or `@` and optional surrounding `{}`. Text templating
(`range`, literal text between expressions) is not supported.

Evaluation follows the Kubernetes evaluator with missing keys allowed: a key that is absent,
an index out of range or a step applied to the wrong kind of value yields no result rather
than an error. Two deliberate differences make it more forgiving: a bracketed quoted key is
one literal key (Kubernetes splits it on dots), and filters compare integers with floats.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "JSONPath",
    "JSONPathError",
    "compile_path",
    "get_simple",
    "set_path",
]


class JSONPathError(ValueError):
    """A JSONPath expression that does not parse, or a path misused (e.g. not simple)."""


# A step maps the current list of values to the next one.
Step = Callable[[list[Any]], list[Any]]

_SLICE_RE: Final = re.compile(r"(-?\d*)(?::(-?\d*))?(?::(-?\d*))?")
_NUMBER_RE: Final = re.compile(r"[+-]?\d+(?:\.\d*)?|[+-]?\.\d+")
_FILTER_RE: Final = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)")
_OPERATORS: Final = frozenset({"==", "!=", "<", ">", "<=", ">="})
_TERMINATORS: Final = frozenset(".[],$@{} \t")


# ---------------------------------------------------------------------------------------------
# Steps


def _field(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            if isinstance(v, dict) and name in v:
                out.append(v[name])
        return out

    return step


def _wildcard(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v.values())
        elif isinstance(v, list):
            out.extend(v)
    return out


def _slice(start: int | None, end: int | None, stride: int | None, single: bool) -> Step:
    """`[start:end:stride]`; `single` marks `[n]`, whose end is derived from its start."""

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if not isinstance(v, list):
                continue
            n = len(v)
            lo = 0 if start is None else start
            if lo < 0:
                lo += n
            if single:
                hi = lo + 1
            else:
                hi = n if end is None else end
                if hi < 0:
                    hi += n
            if lo == hi:
                continue
            # Kubernetes rejects out-of-range bounds instead of clamping them.
            if not (0 <= lo < n) or not (0 <= hi <= n) or lo > hi:
                continue
            out.extend(v[lo:hi:stride] if stride else v[lo:hi])
        return out

    return step


def _descendants(values: list[Any]) -> list[Any]:
    """Every container at or below each value, parents before children."""
    out: list[Any] = []
    stack: list[Any] = list(reversed(values))
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v:
                out.append(v)
                stack.extend(reversed(list(v.values())))
        elif isinstance(v, list) and v:
            out.append(v)
            stack.extend(reversed(v))
    return out


def _union(branches: list[list[Step]]) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for branch in branches:
            out.extend(_run(branch, values))
        return out

    return step


# Filter operands: a path relative to the element, or a literal.
@dataclass(frozen=True, slots=True)
class _Literal:
    value: Any


def _operand_values(operand: list[Step] | _Literal, element: Any) -> list[Any]:
    if isinstance(operand, _Literal):
        return [operand.value]
    return _run(operand, [element])


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _compare(op: str, left: Any, right: Any) -> bool:
    kind = _kind(left)
    if kind is None or kind != _kind(right):
        return False
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if kind == "bool":
        return False  # ordering booleans is an error in Kubernetes; never a match here
    if op == "<":
        return bool(left < right)
    if op == ">":
        return bool(left > right)
    if op == "<=":
        return bool(left <= right)
    return bool(left >= right)


def _filter(left: list[Step], op: str | None, right: list[Step] | _Literal | None) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if not isinstance(v, list):
                continue
            for element in v:
                lefts = _run(left, [element])
                if op is None:
                    if lefts:
                        out.append(element)
                    continue
                assert right is not None
                rights = _operand_values(right, element)
                # Kubernetes compares exactly one value with one value.
                if len(lefts) == 1 and len(rights) == 1 and _compare(op, lefts[0], rights[0]):
                    out.append(element)
        return out

    return step


def _run(steps: list[Step], values: list[Any]) -> list[Any]:
    for step in steps:
        if not values:
            return values
        values = step(values)
    return values


# ---------------------------------------------------------------------------------------------
# Parsing


class _Parser:
    """A small recursive-descent parser producing a list of steps."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        # Field names of a path made only of plain field steps (the fast path), else None.
        self.fields: list[str] | None = []

    def fail(self, why: str) -> JSONPathError:
        return JSONPathError(f"invalid JSONPath {self.text!r}: {why}")

    def parse_path(self) -> list[Step]:
        text = self.text
        steps: list[Step] = []
        n = len(text)
        while self.pos < n and text[self.pos] in " \t":
            self.pos += 1
        if self.pos < n and text[self.pos] in "$@":
            self.pos += 1
        while self.pos < n:
            c = text[self.pos]
            if c in " \t":
                self.pos += 1
            elif text.startswith("..", self.pos):
                if steps and steps[-1] is _descendants:
                    raise self.fail("invalid multiple recursive descent")
                self.pos += 2
                self.fields = None
                steps.append(_descendants)
                if self.pos < n and (text[self.pos].isalnum() or text[self.pos] in "_*"):
                    self.pos -= 1  # parse what follows as a `.name` step
                elif self.pos >= n or text[self.pos] != "[":
                    raise self.fail("recursive descent must be followed by a name or [")
            elif c == ".":
                self.pos += 1
                name = self.read_name()
                if name == "*":
                    self.fields = None
                    steps.append(_wildcard)
                elif name:
                    if self.fields is not None:
                        self.fields.append(name)
                    steps.append(_field(name))
                # `.` alone names the current value: no step.
            elif c == "[":
                self.fields = None
                steps.append(self.parse_bracket())
            else:
                raise self.fail(f"unexpected character {c!r} at offset {self.pos}")
        return steps

    def read_name(self) -> str:
        text, start, chars = self.text, self.pos, []
        n = len(text)
        while self.pos < n:
            c = text[self.pos]
            if c == "\\" and self.pos + 1 < n:
                chars.append(text[self.pos + 1])
                self.pos += 2
                continue
            if c in _TERMINATORS or c in "()=!<>":
                break
            chars.append(c)
            self.pos += 1
        if self.pos == start:
            return ""
        return "".join(chars)

    def find_close(self, closer: str) -> int:
        """Index of `closer` at the current nesting level, skipping quoted strings."""
        text, i = self.text, self.pos
        quote = ""
        while i < len(text):
            c = text[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif text.startswith(closer, i):
                return i
            i += 1
        raise self.fail(f"missing {closer!r}")

    def parse_bracket(self) -> Step:
        if self.text.startswith("[?(", self.pos):
            self.pos += 3
            end = self.find_close(")]")
            body = self.text[self.pos : end]
            self.pos = end + 2
            return self.parse_filter(body)
        self.pos += 1
        end = self.find_close("]")
        body = self.text[self.pos : end].strip()
        self.pos = end + 1
        parts = _split_top_level(body)
        if len(parts) > 1:
            return _union([[self.parse_selector(p.strip())] for p in parts])
        return self.parse_selector(body)

    def parse_selector(self, body: str) -> Step:
        if body == "*":
            return _slice(None, None, None, single=False)
        if len(body) >= 2 and body[0] == body[-1] and body[0] in "'\"":
            return _field(self.unquote(body))
        m = _SLICE_RE.fullmatch(body)
        if m is None or body == "":
            raise self.fail(f"invalid array index {body!r}")
        start, end, stride = m.groups()
        if end is None and stride is None:
            if start == "" or start == "-":
                raise self.fail(f"invalid array index {body!r}")
            return _slice(int(start), None, None, single=True)
        try:
            lo = int(start) if start not in ("", None) else None
            hi = int(end) if end not in ("", None) else None
            st = int(stride) if stride not in ("", None) else None
        except ValueError:
            raise self.fail(f"array index {body!r} is not a number") from None
        if st is not None and st <= 0:
            raise self.fail("step must be > 0")
        return _slice(lo, hi, st, single=False)

    def unquote(self, quoted: str) -> str:
        quote, body = quoted[0], quoted[1:-1]
        if "\\" not in body:
            if quote in body:
                raise self.fail(f"unescaped quote in {quoted!r}")
            return body
        out, i = [], 0
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}
        while i < len(body):
            c = body[i]
            if c == "\\" and i + 1 < len(body):
                nxt = body[i + 1]
                if nxt not in escapes:
                    raise self.fail(f"invalid escape \\{nxt} in {quoted!r}")
                out.append(escapes[nxt])
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)

    def parse_filter(self, body: str) -> Step:
        m = _FILTER_RE.fullmatch(body.strip())
        if m is None:
            return _filter(self.sub_path(body), None, None)
        left, op, right = m.group(1).strip(), m.group(2), m.group(3).strip()
        if op not in _OPERATORS:
            raise self.fail(f"unrecognized filter operator {op!r}")
        return _filter(self.sub_path(left), op, self.operand(right))

    def sub_path(self, text: str) -> list[Step]:
        text = text.strip()
        if not text or text[0] not in "$@.[":
            raise self.fail(f"filter operand {text!r} must be a path starting with @")
        return _Parser(text).parse_all()

    def operand(self, text: str) -> list[Step] | _Literal:
        if not text:
            raise self.fail("missing filter operand")
        if text[0] in "'\"":
            if len(text) < 2 or text[-1] != text[0]:
                raise self.fail(f"unterminated string {text!r}")
            return _Literal(self.unquote(text))
        if text in ("true", "false"):
            return _Literal(text == "true")
        if _NUMBER_RE.fullmatch(text):
            return _Literal(float(text) if "." in text else int(text))
        return self.sub_path(text)

    def parse_all(self) -> list[Step]:
        steps = self.parse_path()
        if self.pos != len(self.text):
            raise self.fail(f"unexpected character at offset {self.pos}")
        return steps


def _split_top_level(body: str) -> list[str]:
    """Split a bracket body on commas that are not inside quotes."""
    parts, start, quote = [], 0, ""
    i = 0
    while i < len(body):
        c = body[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == ",":
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts


# ---------------------------------------------------------------------------------------------
# Public API


class JSONPath:
    """A compiled expression; evaluate it with `find` or `first`."""

    __slots__ = ("_fields", "_steps", "expression")

    def __init__(self, expression: str, steps: list[Step], fields: list[str] | None) -> None:
        self.expression = expression
        self._steps = steps
        self._fields = tuple(fields) if fields is not None else None

    @property
    def simple_fields(self) -> tuple[str, ...] | None:
        """The field names when the path is a plain `.a.b.c` chain, else None."""
        return self._fields

    def find(self, obj: Any) -> list[Any]:
        """All values the path selects in `obj`, in document order; [] when nothing matches."""
        fields = self._fields
        if fields is not None:
            node = obj
            for name in fields:
                if not isinstance(node, dict) or name not in node:
                    return []
                node = node[name]
            return [node]
        return _run(self._steps, [obj])

    def first(self, obj: Any) -> Any | None:
        """The first value the path selects, or None."""
        found = self.find(obj)
        return found[0] if found else None

    def __repr__(self) -> str:
        return f"JSONPath({self.expression!r})"


@lru_cache(maxsize=2048)
def compile_path(expression: str) -> JSONPath:
    """Compile (and cache) a JSONPath expression; raises JSONPathError on bad syntax."""
    text = expression.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise JSONPathError(f"invalid JSONPath {expression!r}: unclosed action")
        text = text[1:-1].strip()
    if "{" in text or "}" in text:
        raise JSONPathError(f"invalid JSONPath {expression!r}: text templates are not supported")
    if not text:
        raise JSONPathError("invalid JSONPath: empty expression")
    parser = _Parser(text)
    steps = parser.parse_all()
    return JSONPath(expression, steps, parser.fields)


def _simple(path: str) -> tuple[str, ...]:
    fields = compile_path(path).simple_fields
    if fields is None:
        raise JSONPathError(f"{path!r} is not a simple field path like .spec.replicas")
    return fields


def get_simple(obj: Any, path: str) -> Any | None:
    """The value at a plain field path like `.spec.replicas`, or None when absent."""
    node = obj
    for name in _simple(path):
        if not isinstance(node, dict):
            return None
        node = node.get(name)
    return node


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a plain field path, creating missing (or null) parents as objects.

    Raises JSONPathError when the path is not simple or a parent is not an object.
    """
    fields = _simple(path)
    if not fields:
        raise JSONPathError(f"{path!r} names the whole object; nothing to set")
    node: Any = obj
    for name in fields[:-1]:
        child = node.get(name)
        if child is None:
            child = node[name] = {}
        elif not isinstance(child, dict):
            raise JSONPathError(f"cannot set {path!r}: {name!r} is not an object")
        node = child
    node[fields[-1]] = value
