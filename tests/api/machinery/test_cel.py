"""CEL rules: compilation, the Kubernetes function libraries, evaluation and error reporting."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._api.machinery.cel import (
    compile_go_regex,
    compile_rule,
    normalize_field_path,
    rule_of,
    run_rules,
)
from kubeforge._api.machinery.fielderror import FieldErrorType


def _eval(rule: str, value: Any, old: Any = None, has_old: bool = False) -> list[str]:
    compiled = rule_of({"rule": rule})
    errors = run_rules([compiled], value, old, has_old, "spec.x", "object", compiled.functions)
    return [str(e) for e in errors]


def _holds(rule: str, value: Any = None) -> bool:
    errors = _eval(rule, value)
    assert all("failed rule" in e for e in errors), errors
    return not errors


# -- compiling --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        "self.a > 0",
        "has(self.a) && self.a.startsWith('x')",
        "self.items.all(i, i.name.lowerAscii() == i.name)",
        "self.map(k, v, k).size() == 2",
        "self == oldSelf",
        "oldSelf.hasValue()",
        "type(self) == map && math.greatest(1, 2) == 2",
        "sets.contains(self.a, ['x'])",
        "quantity(self.mem).isLessThan(quantity('1Gi'))",
        "self.filter(x, x > 1).exists_one(y, y == 2)",
    ],
)
def test_rules_that_compile(rule: str) -> None:
    assert compile_rule(rule) is None


def test_syntax_error_wording() -> None:
    assert compile_rule("self.a >") == (
        "compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' "
        "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
        "NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a >\n | ........^"
    )


def test_undeclared_variable() -> None:
    assert compile_rule("self.a > 0 && other > 1") == (
        "compilation failed: ERROR: <input>:1:15: undeclared reference to 'other' "
        "(in container '')\n | self.a > 0 && other > 1\n | ..............^"
    )


def test_undeclared_function() -> None:
    message = compile_rule("self.name.shout() == 'X'")
    assert message is not None
    assert "undeclared reference to 'shout'" in message


def test_rule_of_is_cached_and_records_transition() -> None:
    a = rule_of({"rule": "self == oldSelf"})
    assert a is rule_of({"rule": "self == oldSelf"})
    assert a.is_transition
    assert not rule_of({"rule": "self > 1"}).is_transition


# -- the function libraries -------------------------------------------------------------------

LIBRARY_CASES = [
    # strings
    ("self.lowerAscii() == 'hello world'", "Hello World"),
    ("self.upperAscii() == 'ABC'", "abc"),
    ("self.trim() == 'x'", "  x \t"),
    ("self.split(',') == ['a', 'b', 'c']", "a,b,c"),
    ("self.split(',').join('-') == 'a-b-c'", "a,b,c"),
    ("self.replace('a', 'o') == 'foo'", "faa"),
    ("self.indexOf('l') == 2 && self.lastIndexOf('l') == 3", "hello"),
    ("self.substring(1, 3) == 'el'", "hello"),
    ("self.charAt(1) == 'e'", "hello"),
    ("self.matches('^[a-z]+$')", "hello"),
    ("self.startsWith('he') && self.endsWith('lo') && self.contains('ell')", "hello"),
    # lists
    ("self.isSorted()", [1, 2, 2, 5]),
    ("!self.isSorted()", [3, 1]),
    ("self.sum() == 10", [1, 2, 3, 4]),
    ("self.min() == 1 && self.max() == 4", [3, 1, 4]),
    ("self.indexOf(2) == 1 && self.lastIndexOf(2) == 3", [1, 2, 3, 2]),
    ("self.indexOf(9) == -1", [1]),
    ("['b', 'a'].isSorted() == false", None),
    ("self.all(x, x > 0) && self.exists(x, x == 2) && self.exists_one(x, x == 3)", [1, 2, 3]),
    ("self.map(x, x * 2) == [2, 4]", [1, 2]),
    ("self.filter(x, x % 2 == 0) == [2]", [1, 2, 3]),
    ("size(self) < 5", [1, 2]),
    ("sets.contains(self, [1]) && sets.intersects(self, [2, 9])", [1, 2]),
    # maps
    ("self.all(k, self[k] > 0) && 'a' in self", {"a": 1, "b": 2}),
    ("has(self.a) && !has(self.z)", {"a": 1}),
    # regex
    ("self.find('[0-9]+') == '123'", "abc123def456"),
    ("self.findAll('[0-9]+') == ['123', '456']", "abc123def456"),
    ("self.findAll('[0-9]+', 1) == ['123']", "abc123def456"),
    ("self.find('x') == ''", "abc"),
    # urls
    ("isURL(self) && url(self).getScheme() == 'https'", "https://example.com:8443/a/b?x=1"),
    ("url(self).getHost() == 'example.com:8443'", "https://example.com:8443/a/b?x=1"),
    (
        "url(self).getHostname() == 'example.com' && url(self).getPort() == '8443'",
        "https://example.com:8443/",
    ),
    ("url(self).getEscapedPath() == '/a/b'", "https://example.com/a/b?x=1"),
    ("url(self).getQuery()['x'] == ['1', '2']", "https://example.com/?x=1&x=2"),
    ("!isURL(self)", "not a url"),
    # ips and cidrs
    ("isIP(self) && ip(self).family() == 4", "10.1.2.3"),
    ("ip(self).family() == 6 && ip(self).isLoopback()", "::1"),
    ("!isIP(self)", "10.1.2"),
    ("ip.isCanonical(self)", "2001:db8::1"),
    ("!ip.isCanonical(self)", "2001:DB8::1"),
    ("ip(self).isUnspecified()", "0.0.0.0"),
    ("ip(self).isLinkLocalUnicast()", "169.254.1.1"),
    ("ip(self).isLinkLocalMulticast()", "224.0.0.5"),
    ("ip(self).isGlobalUnicast()", "8.8.8.8"),
    ("isCIDR(self) && cidr(self).containsIP('10.1.2.3')", "10.0.0.0/8"),
    (
        "cidr(self).containsCIDR('10.1.0.0/16') && !cidr(self).containsCIDR('11.0.0.0/16')",
        "10.0.0.0/8",
    ),
    ("cidr(self).prefixLength() == 24 && cidr(self).ip() == '192.168.0.7'", "192.168.0.7/24"),
    ("cidr(self).masked() == cidr('192.168.0.0/24')", "192.168.0.7/24"),
    ("!isCIDR(self)", "10.0.0.0"),
    # quantities
    ("isQuantity(self) && quantity(self) == quantity('1024Mi')", "1Gi"),
    ("quantity(self).isLessThan(quantity('1Gi'))", "500Mi"),
    ("quantity(self).isGreaterThan(quantity('100m'))", "0.5"),
    ("quantity(self).compareTo(quantity('1k')) == 0", "1000"),
    ("quantity(self).asInteger() == 1500", "1.5k"),
    ("quantity(self).add(quantity('500m')).asApproximateFloat() == 2.0", "1.5"),
    ("quantity(self).sub(1).sign() == -1", "500m"),
    ("quantity(self).isInteger() && !quantity('1.5').isInteger()", "2"),
    ("!isQuantity(self)", "12 parsecs"),
    # timestamps and durations (values converted from date-time/duration fields)
    (
        "duration('1h') > duration('30m') "
        "&& timestamp('2024-01-01T00:00:00Z').getFullYear() == 2024",
        None,
    ),
    # optional values
    ("optional.of(1).hasValue() && !optional.none().hasValue()", None),
]


@pytest.mark.parametrize(("rule", "value"), LIBRARY_CASES)
def test_library(rule: str, value: Any) -> None:
    assert compile_rule(rule) is None
    assert _eval(rule, value) == []


def test_library_errors_are_evaluation_errors() -> None:
    assert _eval("quantity(self).isLessThan(quantity('1Gi'))", "lots") == [
        'spec.x: Invalid value: "object": quantities must match the regular expression: lots '
        "evaluating rule: quantity(self).isLessThan(quantity('1Gi'))"
    ]
    (err,) = _eval("[].max() > 0", None)
    assert "max called on empty list" in err


# -- evaluation -------------------------------------------------------------------------------


def test_passing_and_failing() -> None:
    assert _eval("self.a > 0", {"a": 1}) == []
    assert _eval("self.a > 0", {"a": 0}) == [
        'spec.x: Invalid value: "object": failed rule: self.a > 0'
    ]


def test_rule_text_is_trimmed_in_messages() -> None:
    assert _eval("  self.a > 0\n", {"a": 0}) == [
        'spec.x: Invalid value: "object": failed rule: self.a > 0'
    ]


@pytest.mark.parametrize(
    ("rule", "value", "detail"),
    [
        ("self.b > 0", {"a": 1}, "no such key: b evaluating rule: self.b > 0"),
        ("self[3] == 1", [1], "index out of bounds: 3 evaluating rule: self[3] == 1"),
        ("self / 0 == 1", 4, "division by zero evaluating rule: self / 0 == 1"),
        (
            "self + 1 > 0",
            "text",
            "'no such overload': call arguments did not match a supported operator, function or "
            "macro signature for rule: self + 1 > 0",
        ),
        ("self", 1, "rule did not evaluate to a bool evaluating rule: self"),
    ],
)
def test_runtime_errors(rule: str, value: Any, detail: str) -> None:
    assert _eval(rule, value) == [f'spec.x: Invalid value: "object": {detail}']


def test_runtime_error_names_the_message_when_given() -> None:
    compiled = rule_of({"rule": "self.b > 0", "message": "b must be positive"})
    (err,) = run_rules([compiled], {}, None, False, "spec", "object", compiled.functions)
    assert err.detail == "no such key: b evaluating rule: b must be positive"


def test_transition_rules_need_an_old_value() -> None:
    assert _eval("self == oldSelf", 1) == []
    assert _eval("self == oldSelf", 1, old=1, has_old=True) == []
    assert _eval("self == oldSelf", 1, old=2, has_old=True) == [
        'spec.x: Invalid value: "object": failed rule: self == oldSelf'
    ]


def test_optional_old_self_and_plain_rules_share_a_context() -> None:
    optional = rule_of(
        {"rule": "oldSelf.orValue(0) <= self", "optionalOldSelf": True, "message": "shrank"}
    )
    plain = rule_of({"rule": "self == oldSelf", "message": "changed"})
    functions = {**optional.functions, **plain.functions}
    both = [optional, plain, optional]
    assert [e.detail for e in run_rules(both, 5, 6, True, "p", "integer", functions)] == [
        "shrank",
        "changed",
        "shrank",
    ]
    assert run_rules(both, 5, None, False, "p", "integer", functions) == []


def test_message_expression_and_its_fallbacks() -> None:
    def detail(message_expression: str, **extra: Any) -> str:
        rule = rule_of({"rule": "self > 10", "messageExpression": message_expression, **extra})
        (err,) = run_rules([rule], 3, None, False, "spec.n", "integer", rule.functions)
        return err.detail

    assert detail("'got ' + string(self)") == "got 3"
    assert detail("self.missing", message="fallback") == "fallback"
    assert detail("'   '") == "failed rule: self > 10"
    assert detail("1") == "messageExpression should evaluate to a string"
    assert detail("'a\\nb'") == "messageExpression should not contain line breaks"


@pytest.mark.parametrize(
    ("reason", "kind", "text"),
    [
        (None, FieldErrorType.INVALID, 'spec.x.y: Invalid value: "object": failed rule: false'),
        (
            "FieldValueInvalid",
            FieldErrorType.INVALID,
            'spec.x.y: Invalid value: "object": failed rule: false',
        ),
        (
            "FieldValueForbidden",
            FieldErrorType.FORBIDDEN,
            "spec.x.y: Forbidden: failed rule: false",
        ),
        (
            "FieldValueRequired",
            FieldErrorType.REQUIRED,
            "spec.x.y: Required value: failed rule: false",
        ),
        ("FieldValueDuplicate", FieldErrorType.DUPLICATE, 'spec.x.y: Duplicate value: "object"'),
    ],
)
def test_reasons_and_field_path(reason: str | None, kind: FieldErrorType, text: str) -> None:
    spec: dict[str, Any] = {"rule": "false", "fieldPath": ".y"}
    if reason:
        spec["reason"] = reason
    rule = rule_of(spec)
    (err,) = run_rules([rule], {}, None, False, "spec.x", "object", rule.functions)
    assert err.type is kind
    assert str(err) == text


def test_root_errors_have_a_nil_path() -> None:
    rule = rule_of({"rule": "false"})
    (err,) = run_rules([rule], {}, None, False, "", "object", rule.functions)
    assert str(err) == '<nil>: Invalid value: "object": failed rule: false'
    rule = rule_of({"rule": "false", "fieldPath": ".spec.a"})
    (err,) = run_rules([rule], {}, None, False, "", "object", rule.functions)
    assert err.field == "spec.a"


def test_a_rule_that_does_not_compile_reports_it() -> None:
    rule = rule_of({"rule": "self >"})
    (err,) = run_rules([rule], 1, None, False, "spec.x", "integer", rule.functions)
    assert err.detail.startswith("rule compile error: compilation failed: ERROR: <input>:1:7:")


@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        (".a", "a"),
        (".a.b", "a.b"),
        (".a['b.c']", "a[b.c]"),
        (".list[0].name", "list[0].name"),
        ("['x']", "[x]"),
        ("", ""),
    ],
)
def test_normalize_field_path(path: str, normalized: str) -> None:
    assert normalize_field_path(path) == normalized


# -- the RE2 dialect --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^abc$", "abc", True),
        ("^abc$", "abc\n", False),
        ("abc\\z", "xabc", True),
        ("^[[:digit:]]+$", "123", True),
        ("^[[:upper:][:digit:]]+$", "A1", True),
        ("^[]a]+$", "]a", True),
        ("a$|^b", "cab", False),
    ],
)
def test_go_regex(pattern: str, text: str, found: bool) -> None:
    compiled = compile_go_regex(pattern)
    assert compiled is not None
    assert (compiled.search(text) is not None) is found


def test_go_regex_invalid() -> None:
    assert compile_go_regex("(unclosed") is None
