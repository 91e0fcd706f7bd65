"""CEL rules of CRD schemas (`x-kubernetes-validations`), evaluated the way the API server does.

Rules are compiled once (cached by their text) with the `common-expression-language` package.
`self` is the value at the rule's node and `oldSelf` its previous value: rules that mention
`oldSelf` are transition rules and run only on updates where an old value exists at that path,
or always with `optionalOldSelf: true` (then `oldSelf` is an optional: `oldSelf.hasValue()`,
`oldSelf.value()`, `oldSelf.orValue(x)`).

Supported beyond the CEL standard library (the Kubernetes CEL libraries, as plain functions
that also work in receiver style, `self.name.lowerAscii()`):

* strings: `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`,
  `split`, `substring`, `trim`, `join`, `reverse`, `strings.quote`;
* lists: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`, `slice`, `flatten`,
  `distinct`, `sort`, `first`, `last`, `lists.range`; sets: `sets.contains`,
  `sets.equivalent`, `sets.intersects`; `math.*`; `base64.encode`/`base64.decode`;
* regex: `find`, `findAll` (RE2 syntax, translated to Python `re`);
* `url`/`isURL` with `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`,
  `getQuery`; `ip`/`isIP`/`ip.isCanonical` with `family`, `isUnspecified`, `isLoopback`,
  `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`; `cidr`/`isCIDR` with
  `containsIP`, `containsCIDR`, `ip`, `masked`, `prefixLength`;
* `quantity`/`isQuantity` with `sign`, `isInteger`, `asInteger`, `asApproximateFloat`,
  `add`, `sub`, `compareTo`, `isGreaterThan`, `isLessThan`.

URLs, IPs, CIDRs and quantities are carried as canonical strings (the engine only passes
plain values to Python functions), so `quantity("1Gi") == quantity("1024Mi")` holds.

Not supported: static type checking against the schema (a rule naming an unknown field
compiles and fails when evaluated), the `?.`/`[?` optional syntax, `strings.format`,
`semver`, the `format.*` library, cost budgets; `size()` of a string counts UTF-8 bytes.
Compilation does check syntax, unknown variables and unknown functions.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubeforge._api.machinery.fielderror import FieldError, FieldErrorType
from kubeforge._api.machinery.quantity import parse_quantity

__all__ = [
    "FUNCTIONS",
    "REASONS",
    "Expression",
    "Rule",
    "compile_expression",
    "compile_go_regex",
    "compile_rule",
    "normalize_field_path",
    "rule_of",
    "run_rules",
    "runtime_error_text",
]

# The engine logs every exception a Python function raises; for rules those are ordinary
# evaluation errors that are reported as field errors instead.
logging.getLogger("cel").setLevel(logging.CRITICAL)

REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")


# -- the RE2 dialect --------------------------------------------------------------------------

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_regex_cache: dict[str, re.Pattern[str] | None] = {}


def _translate_re2(pattern: str) -> str:
    """Rewrite the RE2 constructs Python reads differently: `$` and `\\z` (end of text only),
    POSIX classes inside brackets, and `(?P<name>` stays as is."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append("\\Z" if nxt == "z" and not in_class else c + nxt)
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2 : end] if end > 0 else ""
                negated = name.startswith("^")
                chars = _POSIX_CLASSES.get(name.lstrip("^"))
                if chars is not None and not negated:
                    out.append(chars)
                    i = end + 2
                    continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading `]` is literal in RE2
                out.append("\\]")
                i += 1
            continue
        out.append("(?!\\n)\\Z" if c == "$" else c)
        i += 1
    return "".join(out)


def compile_go_regex(pattern: str) -> re.Pattern[str] | None:
    """Compile an RE2 (Go) regular expression for Python `re`; None when it cannot be read."""
    try:
        return _regex_cache[pattern]
    except KeyError:
        pass
    try:
        compiled: re.Pattern[str] | None = re.compile(_translate_re2(pattern))
    except (re.error, OverflowError, RecursionError):
        compiled = None
    if len(_regex_cache) > 4096:
        _regex_cache.clear()
    _regex_cache[pattern] = compiled
    return compiled


# The CEL engine is imported on first use: importing it costs more than the rest of
# kubeforge._api together, and most programs that load this module never run a rule.
_cel: ModuleType | None = None
_cel_stdlib: ModuleType | None = None


def _engine() -> ModuleType:
    global _cel
    if _cel is None:
        import cel

        _cel = cel
    return _cel


def _stdlib() -> ModuleType:
    global _cel_stdlib
    if _cel_stdlib is None:
        from cel import stdlib

        _cel_stdlib = stdlib
    return _cel_stdlib


# -- the Kubernetes CEL libraries ---------------------------------------------------------------


class _CelError(Exception):
    """An evaluation error raised by a library function (surfaces as the rule's error)."""


def _index_of(target: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(target, str):
        return int(_stdlib().index_of(target, item, 0 if offset is None else offset))
    if isinstance(target, list):
        for i, x in enumerate(target):
            if _cel_equal(x, item):
                return i
        return -1
    raise _CelError("no such overload")


def _last_index_of(target: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(target, str):
        return int(_stdlib().last_index_of(target, item, offset))
    if isinstance(target, list):
        for i in range(len(target) - 1, -1, -1):
            if _cel_equal(target[i], item):
                return i
        return -1
    raise _CelError("no such overload")


def _cel_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _is_sorted(items: list[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def _min(*args: Any) -> Any:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not items:
        raise _CelError("min called on empty list")
    return min(items)


def _max(*args: Any) -> Any:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not items:
        raise _CelError("max called on empty list")
    return max(items)


def _regex(pattern: str) -> re.Pattern[str]:
    compiled = compile_go_regex(pattern)
    if compiled is None:
        raise _CelError(f"invalid regex: {pattern}")
    return compiled


def _find(text: str, pattern: str) -> str:
    m = _regex(pattern).search(text)
    return m.group(0) if m else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


# URLs, kept as the string they were parsed from.


def _parse_url(text: str) -> Any:
    if not isinstance(text, str) or not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return None
    parts = urlsplit(text)
    if not parts.scheme and not text.startswith("/"):
        return None
    return parts


def _url(text: str) -> str:
    if _parse_url(text) is None:
        raise _CelError(f"URL parse error during conversion from string: {text}")
    return text


def _is_url(text: str) -> bool:
    return _parse_url(text) is not None


def _url_parts(text: str) -> Any:
    parts = _parse_url(text)
    if parts is None:
        raise _CelError("no such overload")
    return parts


def _get_scheme(text: str) -> str:
    return str(_url_parts(text).scheme)


def _get_host(text: str) -> str:
    return str(_url_parts(text).netloc.rpartition("@")[2])


def _get_hostname(text: str) -> str:
    return str(_url_parts(text).hostname or "")


def _get_port(text: str) -> str:
    host = _get_host(text)
    if host.endswith("]") or ":" not in host:
        return ""
    return host.rpartition(":")[2]


def _get_escaped_path(text: str) -> str:
    return str(_url_parts(text).path)


def _get_query(text: str) -> dict[str, list[str]]:
    return parse_qs(_url_parts(text).query, keep_blank_values=True)


# IPs and CIDRs, kept as canonical strings ("10.0.0.1", "10.0.0.1/8").


def _parse_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(text, str) and "%" not in text and "/" not in text:
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            pass
        else:
            if not (isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped):
                return addr
    raise _CelError(f"IP Address {text!r} parse error during conversion from string")


def _parse_cidr(text: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    if isinstance(text, str) and "/" in text and "%" not in text:
        try:
            return ipaddress.ip_interface(text)
        except ValueError:
            pass
    raise _CelError(f"network address parse error during conversion from string: {text}")


def _ip(text: str) -> str:
    if isinstance(text, str) and "/" in text:  # `cidr(x).ip()`
        return str(_parse_cidr(text).ip)
    return str(_parse_ip(text))


def _is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except _CelError:
        return False
    return True


def _ip_check(name: str) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        return bool(getattr(_parse_ip(text), name))

    return check


def _is_link_local_multicast(text: str) -> bool:
    addr = _parse_ip(text)
    if addr.version == 4:
        return addr in ipaddress.ip_network("224.0.0.0/24")
    return addr in ipaddress.ip_network("ff02::/16")


def _is_global_unicast(text: str) -> bool:
    addr = _parse_ip(text)
    if addr.version == 4 and addr == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (addr.is_unspecified or addr.is_loopback or addr.is_multicast or addr.is_link_local)


def _is_canonical(text: str) -> bool:
    return str(_parse_ip(text)) == text


def _family(text: str) -> int:
    return _parse_ip(text).version


def _cidr(text: str) -> str:
    return str(_parse_cidr(text))


def _is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except _CelError:
        return False
    return True


def _contains_ip(net: str, addr: str) -> bool:
    return _parse_ip(addr) in _parse_cidr(net).network


def _contains_cidr(net: str, other: str) -> bool:
    inner = _parse_cidr(other).network
    outer = _parse_cidr(net).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _masked(net: str) -> str:
    return str(_parse_cidr(net).network)


def _prefix_length(net: str) -> int:
    return int(_parse_cidr(net).network.prefixlen)


# Quantities, kept as their exact value in base units ("1073741824", "0.5").

_INT64_MAX = 2**63 - 1


def _quantity_value(text: Any) -> Decimal:
    if isinstance(text, bool | float):
        raise _CelError("no such overload")
    value = parse_quantity(text)
    if value is None:
        raise _CelError(f"quantities must match the regular expression: {text}")
    return value


def _quantity_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text[:-2] if text.endswith(".0") else text


def _quantity(text: str) -> str:
    return _quantity_text(_quantity_value(text))


def _is_quantity(text: str) -> bool:
    try:
        _quantity_value(text)
    except _CelError:
        return False
    return True


def _q_sign(text: str) -> int:
    value = _quantity_value(text)
    return (value > 0) - (value < 0)


def _q_is_integer(text: str) -> bool:
    value = _quantity_value(text)
    return value == value.to_integral_value() and abs(value) <= _INT64_MAX


def _q_as_integer(text: str) -> int:
    if not _q_is_integer(text):
        raise _CelError("cannot convert value to integer")
    return int(_quantity_value(text))


def _q_as_float(text: str) -> float:
    return float(_quantity_value(text))


def _q_add(a: str, b: Any) -> str:
    return _quantity_text(_quantity_value(a) + _quantity_value(b))


def _q_sub(a: str, b: Any) -> str:
    return _quantity_text(_quantity_value(a) - _quantity_value(b))


def _q_compare(a: str, b: str) -> int:
    x, y = _quantity_value(a), _quantity_value(b)
    return (x > y) - (x < y)


def _q_greater(a: str, b: str) -> bool:
    return _quantity_value(a) > _quantity_value(b)


def _q_less(a: str, b: str) -> bool:
    return _quantity_value(a) < _quantity_value(b)


_KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "isSorted": _is_sorted,
    "min": _min,
    "max": _max,
    "find": _find,
    "findAll": _find_all,
    "url": _url,
    "isURL": _is_url,
    "getScheme": _get_scheme,
    "getHost": _get_host,
    "getHostname": _get_hostname,
    "getPort": _get_port,
    "getEscapedPath": _get_escaped_path,
    "getQuery": _get_query,
    "ip": _ip,
    "isIP": _is_ip,
    "family": _family,
    "ip.isCanonical": _is_canonical,
    "isUnspecified": _ip_check("is_unspecified"),
    "isLoopback": _ip_check("is_loopback"),
    "isLinkLocalMulticast": _is_link_local_multicast,
    "isLinkLocalUnicast": _ip_check("is_link_local"),
    "isGlobalUnicast": _is_global_unicast,
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "masked": _masked,
    "prefixLength": _prefix_length,
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _q_sign,
    "isInteger": _q_is_integer,
    "asInteger": _q_as_integer,
    "asApproximateFloat": _q_as_float,
    "add": _q_add,
    "sub": _q_sub,
    "compareTo": _q_compare,
    "isGreaterThan": _q_greater,
    "isLessThan": _q_less,
}


class _FunctionTable(Mapping[str, Callable[..., Any]]):
    """The CEL standard library with the Kubernetes libraries over it, built on first use."""

    def __init__(self) -> None:
        self._table: dict[str, Callable[..., Any]] | None = None

    def _load(self) -> dict[str, Callable[..., Any]]:
        if self._table is None:
            standard = _stdlib().STDLIB_FUNCTIONS.items()
            table = {k: v for k, v in standard if k not in ("bool", "min", "max")}
            table.update(_KUBERNETES_FUNCTIONS)
            self._table = table
        return self._table

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


FUNCTIONS: Mapping[str, Callable[..., Any]] = _FunctionTable()
"""The library functions rules may call, by CEL name."""

_BUILTINS = frozenset(
    """size has matches startsWith endsWith contains int uint double string bytes bool
    timestamp duration dyn type getFullYear getMonth getDayOfYear getDayOfMonth getDate
    getDayOfWeek getHours getMinutes getSeconds getMilliseconds of none ofNonZeroValue
    hasValue value orValue or all exists exists_one map filter""".split()  # noqa: SIM905
)
_NAMESPACES = frozenset({"math", "strings", "sets", "lists", "base64", "optional", "ip"})
_TYPE_NAMES = frozenset(
    "int uint double bool string bytes list map null_type type timestamp duration".split()  # noqa: SIM905
)


@functools.cache
def _known_functions() -> frozenset[str]:
    return _BUILTINS | {name.rpartition(".")[2] for name in FUNCTIONS}


_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_MACRO_VARS_RE = re.compile(
    r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)


# -- compiling ------------------------------------------------------------------------------


def _caret(source: str, offset: int) -> tuple[int, int, str]:
    """1-based line and column of `offset`, and the snippet cel-go prints under an error."""
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    text = source[line_start : line_end if line_end >= 0 else len(source)]
    line = source.count("\n", 0, offset) + 1
    column = offset - line_start + 1
    return line, column, f"\n | {text}\n | {'.' * (column - 1)}^"


def _undeclared(source: str, name: str, call: bool) -> str:
    tail = r"\s*\(" if call else r"\b"
    m = re.search(rf"(?<![\w]){re.escape(name)}{tail}", source)
    offset = m.start() if m else 0
    line, column, snippet = _caret(source, offset)
    return (
        f"ERROR: <input>:{line}:{column}: undeclared reference to '{name}' (in container '')"
        + snippet
    )


def _parse_error(exc: Exception) -> str:
    text = str(exc)
    at = text.find("ERROR:")
    if at >= 0:
        text = text[at:]
    return "\n".join(
        " " + line if line.startswith("| ") else line for line in text.splitlines()
    ).rstrip()


@dataclass(frozen=True, slots=True)
class _Program:
    program: Any
    uses_old_self: bool
    functions: tuple[str, ...]


_program_cache: dict[tuple[str, frozenset[str], frozenset[str]], _Program | str] = {}
_cache_lock = threading.Lock()


_RULE_VARIABLES = frozenset({"self", "oldSelf"})
_NO_FUNCTIONS: frozenset[str] = frozenset()


def _compile(
    source: str,
    variables: frozenset[str] = _RULE_VARIABLES,
    extra_functions: frozenset[str] = _NO_FUNCTIONS,
) -> _Program | str:
    """The compiled program, or the compile error text (`ERROR: <input>:...`).

    `variables` are the names the expression may read and `extra_functions` the functions its
    environment adds to the libraries (both default to those of schema rules).
    """
    key = (source, variables, extra_functions)
    cached = _program_cache.get(key)
    if cached is not None:
        return cached
    result: _Program | str
    try:
        program = _engine().compile(source)
    except Exception as exc:  # the engine raises ValueError, but be safe with any parse failure
        result = _parse_error(exc)
    else:
        refs = program.references()
        bound = set(variables) | _NAMESPACES | _TYPE_NAMES
        for m in _MACRO_VARS_RE.finditer(source):
            bound.update(g for g in m.groups() if g)
        unknown_vars = [v for v in refs["variables"] if v not in bound]
        unknown_funcs = [
            f
            for f in refs["functions"]
            if _IDENT_RE.match(f) and f not in _known_functions() and f not in extra_functions
        ]
        if unknown_vars:
            result = _undeclared(source, unknown_vars[0], call=False)
        elif unknown_funcs:
            result = _undeclared(source, unknown_funcs[0], call=True)
        else:
            used = _library_names(refs["variables"], refs["functions"])
            used.update(f for f in refs["functions"] if f in extra_functions)
            result = _Program(program, "oldSelf" in refs["variables"], tuple(sorted(used)))
    with _cache_lock:
        if len(_program_cache) > 8192:
            _program_cache.clear()
        _program_cache[key] = result
    return result


def _library_names(variables: Sequence[str], functions: Sequence[str]) -> set[str]:
    names = {f for f in functions if f in FUNCTIONS}
    for ns in _NAMESPACES.intersection(variables):
        names.update(
            n for n in FUNCTIONS if n.startswith(ns + ".") and n[len(ns) + 1 :] in functions
        )
    return names


def compile_rule(rule: str) -> str | None:
    """Why `rule` does not compile (`compilation failed: ERROR: ...`), or None when it does."""
    result = _compile(rule)
    return f"compilation failed: {result}" if isinstance(result, str) else None


@dataclass(frozen=True, slots=True)
class Expression:
    """A compiled expression of an environment other than schema rules (admission
    conditions and policies): evaluate it with its variables bound."""

    source: str
    program: Any
    functions: Mapping[str, Callable[..., Any]]

    def evaluate(
        self,
        activation: Mapping[str, Any],
        bound: Mapping[str, Callable[..., Any]] | None = None,
    ) -> Any:
        """The value of the expression; raises what the engine raises on an evaluation error
        (`runtime_error_text` words it). `bound` replaces library functions for this
        evaluation (functions that need the request they run for)."""
        functions = dict(self.functions)
        if bound:
            functions.update((n, f) for n, f in bound.items() if n in functions)
        return self.program.execute(_engine().Context(dict(activation), functions))


def compile_expression(
    source: str,
    variables: Collection[str],
    extra_functions: Mapping[str, Callable[..., Any]] | None = None,
) -> Expression | str:
    """Compile `source` reading `variables` (plus the libraries and `extra_functions`): the
    expression, or why it does not compile (`compilation failed: ERROR: ...`)."""
    extra = extra_functions or {}
    compiled = _compile(source, frozenset(variables), frozenset(extra))
    if isinstance(compiled, str):
        return f"compilation failed: {compiled}"
    functions = {n: extra[n] if n in extra else FUNCTIONS[n] for n in compiled.functions}
    return Expression(source, compiled.program, functions)


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled `x-kubernetes-validations` entry."""

    rule: str
    program: _Program | None
    error: str | None
    message: str
    message_program: _Program | None
    reason: str | None
    field_path: str
    optional_old_self: bool
    functions: Mapping[str, Callable[..., Any]]

    @property
    def is_transition(self) -> bool:
        """Whether the rule reads `oldSelf` (runs only when an old value exists)."""
        return self.program is not None and self.program.uses_old_self

    @property
    def shown(self) -> str:
        """The rule as quoted in messages: its message when it has one, else its text."""
        return self.message or self.rule.strip()


_FIELD_PATH_RE = re.compile(r"\.([A-Za-z_][\w-]*)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[\s*(\d+)\s*\]")


def normalize_field_path(field_path: str) -> str:
    """`.spec.items['a.b'][0]` -> `spec.items[a.b][0]`, the way the server joins it."""
    parts: list[str] = []
    for m in _FIELD_PATH_RE.finditer(field_path.strip()):
        name, key, index = m.groups()
        if name is not None:
            parts.append(("." if parts else "") + name)
        else:
            parts.append(f"[{key if key is not None else index}]")
    return "".join(parts)


_rule_cache: dict[tuple[Any, ...], Rule] = {}


def rule_of(spec: Mapping[str, Any]) -> Rule:
    """Compile one validation rule entry (cached)."""
    key = (
        spec.get("rule"),
        spec.get("message"),
        spec.get("messageExpression"),
        spec.get("reason"),
        spec.get("fieldPath"),
        bool(spec.get("optionalOldSelf")),
    )
    cached = _rule_cache.get(key)
    if cached is not None:
        return cached
    source = str(spec.get("rule") or "")
    compiled = _compile(source) if source.strip() else None
    program = compiled if isinstance(compiled, _Program) else None
    error = f"compilation failed: {compiled}" if isinstance(compiled, str) else None
    msg_source = str(spec.get("messageExpression") or "")
    msg_compiled = _compile(msg_source) if msg_source.strip() else None
    msg_program = msg_compiled if isinstance(msg_compiled, _Program) else None
    names = set(program.functions if program else ()) | set(
        msg_program.functions if msg_program else ()
    )
    reason = spec.get("reason")
    rule = Rule(
        rule=source,
        program=program,
        error=error,
        message=str(spec.get("message") or "").strip(),
        message_program=msg_program,
        reason=reason if isinstance(reason, str) else None,
        field_path=normalize_field_path(str(spec.get("fieldPath") or "")),
        optional_old_self=bool(spec.get("optionalOldSelf")),
        functions={n: FUNCTIONS[n] for n in names},
    )
    with _cache_lock:
        if len(_rule_cache) > 8192:
            _rule_cache.clear()
        _rule_cache[key] = rule
    return rule


# -- evaluating -----------------------------------------------------------------------------

_PY_FAILURE_RE = re.compile(r"Python function call failed: \w+: (.*)\. Check function", re.S)
_NO_OVERLOAD = ("No such overload", "Unsupported operation", "no such overload")


def _runtime_message(exc: Exception, rule: Rule) -> str:
    text = runtime_error_text(exc)
    if text == "no such overload":
        return (
            "'no such overload': call arguments did not match a supported operator, function "
            f"or macro signature for rule: {rule.shown}"
        )
    return f"{text} evaluating rule: {rule.shown}"


def runtime_error_text(exc: Exception) -> str:
    """An evaluation error in cel-go's words (`no such key: x`, `division by zero`, ...)."""
    text = str(exc)
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else ''}"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, OverflowError):
        return "integer overflow"
    if text.startswith(_NO_OVERLOAD) or "no such overload" in text:
        return "no such overload"
    m = _PY_FAILURE_RE.search(text)
    return m.group(1) if m else text


def _join(path: str, child: str) -> str:
    if not child:
        return path or "<nil>"
    if not path:
        return child
    return f"{path}.{child}"


def _failure(rule: Rule, path: str, type_name: str, detail: str) -> FieldError:
    field = _join(path, rule.field_path)
    reason = rule.reason
    if reason == "FieldValueForbidden":
        return FieldError(FieldErrorType.FORBIDDEN, field, detail)
    if reason == "FieldValueRequired":
        return FieldError(FieldErrorType.REQUIRED, field, detail)
    if reason == "FieldValueDuplicate":
        return FieldError(FieldErrorType.DUPLICATE, field, "", type_name)
    return FieldError(FieldErrorType.INVALID, field, detail, type_name)


def _message(rule: Rule, ctx: Any, path: str, type_name: str) -> str | FieldError:
    """The failure detail: the evaluated messageExpression when it works, else the message."""
    default = rule.message or f"failed rule: {rule.rule.strip()}"
    if rule.message_program is None:
        return default
    try:
        text = rule.message_program.program.execute(ctx)
    except Exception:
        return default
    where = path or "<nil>"
    if not isinstance(text, str):
        return FieldError.invalid(where, type_name, "messageExpression should evaluate to a string")
    if not text.strip():
        return default
    if "\n" in text:
        return FieldError.invalid(
            where, type_name, "messageExpression should not contain line breaks"
        )
    return text.strip()


def run_rules(
    rules: Sequence[Rule],
    value: Any,
    old: Any,
    has_old: bool,
    path: str,
    type_name: str,
    functions: Mapping[str, Callable[..., Any]],
) -> list[FieldError]:
    """Evaluate a node's rules with `self` = value (and `oldSelf` = old when `has_old`).

    `path` is the node's field path ("" at the object root), `type_name` the schema type the
    server shows as the offending value, `functions` the library functions the rules call.
    """
    errors: list[FieldError] = []
    variables: dict[str, Any] = {"self": value}
    if has_old:
        variables["oldSelf"] = old
    cel = _engine()
    ctx = cel.Context(variables, dict(functions))
    optional_set = False
    where = path or "<nil>"
    for rule in rules:
        if rule.error is not None:
            errors.append(FieldError.invalid(where, type_name, f"rule compile error: {rule.error}"))
            continue
        program = rule.program
        if program is None:
            continue
        if program.uses_old_self:
            if rule.optional_old_self:
                ctx.add_variable(
                    "oldSelf", cel.OptionalValue.of(old) if has_old else cel.OptionalValue.none()
                )
                optional_set = True
            elif not has_old:
                continue
            elif optional_set:
                ctx.add_variable("oldSelf", old)
                optional_set = False
        try:
            result = program.program.execute(ctx)
        except Exception as exc:
            errors.append(FieldError.invalid(where, type_name, _runtime_message(exc, rule)))
            continue
        if result is True:
            continue
        if result is not False:
            errors.append(
                FieldError.invalid(
                    where,
                    type_name,
                    f"rule did not evaluate to a bool evaluating rule: {rule.shown}",
                )
            )
            continue
        detail = _message(rule, ctx, path, type_name)
        errors.append(
            detail if isinstance(detail, FieldError) else _failure(rule, path, type_name, detail)
        )
    return errors
