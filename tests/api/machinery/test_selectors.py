"""Label and field selector grammar and matching."""

from __future__ import annotations

import pytest

from kubeforge._api.machinery.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
    label_selector_matches,
    label_set_matches,
    requirement_matches,
    selector_from_dict,
    validate_label_key,
)


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a in (b, c)", {"a": "c"}, True),
        ("a in (b,c)", {"a": "d"}, False),
        ("a notin (b,c)", {}, True),
        ("a notin (b,c)", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("a", {}, False),
        ("!a", {}, True),
        ("!a", {"a": "x"}, False),
        ("n>3", {"n": "4"}, True),
        ("n>3", {"n": "3"}, False),
        ("n<3", {"n": "2"}, True),
        ("n<3", {}, False),
        ("a=b,c!=d,e in (f,g),!h", {"a": "b", "e": "g"}, True),
        ("a=b,c!=d,e in (f,g),!h", {"a": "b", "e": "g", "h": "1"}, False),
        ("example.com/app=web", {"example.com/app": "web"}, True),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selector_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.parse(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["a=b=c", "=b", "a in b", "a in ()", "a>b", "-a=b", "a b", "a=(b"])
def test_bad_label_selectors_are_errors(bad: str) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.parse(bad)


def test_label_selector_round_trips_to_text() -> None:
    text = "a=b,c!=d,e in (f,g),!h,i"
    assert str(LabelSelector.parse(text)) == text


def test_structured_selector() -> None:
    sel = selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches({"app": "web", "tier": "b"})
    assert not sel.matches({"app": "web", "tier": "b", "legacy": "y"})
    assert str(sel) == "app=web,tier in (a,b),!legacy"


def test_field_selectors() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"hostNetwork": False},
        "status": {"phase": "Running"},
    }
    sel = FieldSelector.parse("metadata.name=p,status.phase!=Pending")
    assert sel.matches(pod, field_value)
    assert not FieldSelector.parse("status.phase==Pending").matches(pod, field_value)
    assert FieldSelector.parse("spec.hostNetwork=false").matches(pod, field_value)
    assert FieldSelector.parse("spec.nodeName=").matches(pod, field_value)
    assert FieldSelector.parse("metadata.name=p").exact("metadata.name") == "p"


def test_field_selector_escapes() -> None:
    sel = FieldSelector.parse(r"metadata.name=a\,b\=c")
    assert sel.terms == (("metadata.name", "=", "a,b=c"),)


def test_field_selector_without_operator_is_an_error() -> None:
    with pytest.raises(SelectorError):
        FieldSelector.parse("metadata.name")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        # Anything but a map of labels has no labels (a substring is not a label).
        ("oo", "oops", False),
        ("!oo", "oops", True),
        ("a!=b", ["a"], True),
        ("a in (b)", {"a": ["b"]}, False),
        ("a>1", {"a": {"x": 1}}, False),
        ("a<1", {"a": None}, False),
    ],
)
def test_matching_malformed_labels_never_fails(
    selector: str, labels: object, expected: bool
) -> None:
    assert LabelSelector.parse(selector).matches(labels) is expected  # type: ignore[arg-type]


def test_structured_label_selector_matching() -> None:
    labels = {"app": "x", "tier": "web"}
    assert label_selector_matches({"matchLabels": {"app": "x"}}, labels)
    assert not label_selector_matches(None, labels)
    assert label_selector_matches({}, labels)
    exprs = [
        {"key": "tier", "operator": "In", "values": ["web", "db"]},
        {"key": "gone", "operator": "DoesNotExist"},
        {"key": "app", "operator": "NotIn", "values": ["y"]},
        {"key": "app", "operator": "Exists"},
    ]
    assert label_selector_matches({"matchExpressions": exprs}, labels)
    assert not label_selector_matches(
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]}, labels
    )


def test_node_selector_requirements_compare_numbers_and_fields() -> None:
    labels = {"cores": "8", "zone": "a"}
    assert requirement_matches(
        {"key": "cores", "operator": "Gt", "values": ["4"]}, labels, numeric=True
    )
    assert not requirement_matches(
        {"key": "cores", "operator": "Lt", "values": ["4"]}, labels, numeric=True
    )
    assert not requirement_matches(
        {"key": "zone", "operator": "Gt", "values": ["4"]}, labels, numeric=True
    )
    # Gt and Lt are not label selector operators; an unknown operator selects nothing.
    assert not requirement_matches({"key": "cores", "operator": "Gt", "values": ["4"]}, labels)
    assert not label_selector_matches(
        {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}, labels
    )
    assert label_set_matches({"zone": "a"}, labels)
    assert label_set_matches({}, labels)
    assert not label_set_matches({"zone": "b"}, labels)


def test_a_trailing_newline_makes_a_label_key_or_value_invalid() -> None:
    assert validate_label_key("ab\n") and not validate_label_key("ab")
