"""Perturbations as strings: every action reads back as it was written, and a malformed
one is refused saying what the action takes."""

from __future__ import annotations

import pytest

from kubeforge._testing.explore.points import Perturbation


@pytest.mark.parametrize(
    "text",
    [
        "crash@widget:create:ConfigMap/w-*#1",
        "error@widget:update_status:Widget/w#2",
        "delete@widget:create:Record/<ns>.w#1",
        "stale@janitor:Widget/w#1",
        "coalesce@Pod/w#4",
        "revert@Widget/w",
        "advance@at:At/hello#1",
        "crash@at:patch:Pod/other-namespace/hello#3",
    ],
)
def test_a_perturbation_reads_back_as_written(text: str) -> None:
    assert str(Perturbation.parse(text)) == text


def test_the_parts_of_a_write_point() -> None:
    found = Perturbation.parse("crash@widget:update_status:Widget/w#2")
    assert (found.action, found.controller, found.verb, found.object, found.number) == (
        "crash",
        "widget",
        "update_status",
        "Widget/w",
        2,
    )
    assert found.kind == "Widget"
    assert found.point == "widget:update_status:Widget/w#2"
    assert found.describe() == (
        "the manager crashed right after widget's 2nd update_status of Widget/w, and a new "
        "one started"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("explode@Widget/w", "the action one of crash, error"),
        ("crash@widget:create:ConfigMap/w", "crash@ takes controller:verb:Kind/name#n"),
        ("crash@widget:ConfigMap/w#1", "crash@ takes controller:verb:Kind/name#n"),
        ("stale@widget:Widget/w#0", "stale@ takes controller:Kind/name#version"),
        ("coalesce@w#1", "coalesce@ takes Kind/name#version"),
        ("revert", "<action>@<where>"),
    ],
)
def test_a_malformed_perturbation_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("*", r"\*")):
        Perturbation.parse(text)
