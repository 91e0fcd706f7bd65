"""Which tests an exploration explores: those that run the project's controllers (the
`manager` fixture), less those whose `kubeforge_explore` marker says False; the marker's
`skip` leaves perturbations out."""

from __future__ import annotations

import pytest

from kubeforge._testing.explore.session import explorable, skipped_actions

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_with_the_manager(manager):
    pass

def test_with_the_environment_only(testenv):
    pass

@pytest.mark.kubeforge_explore(False, reason="measures its own timing")
def test_left_alone(manager):
    pass

@pytest.mark.kubeforge_explore(skip=["crash", "error"], reason="counts events")
def test_without_crashes(manager):
    pass
"""


def test_the_tests_explored_and_what_they_skip(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    items = {item.name: item for item in pytester.getitems(TESTS)}
    assert {name for name, item in items.items() if explorable(item)} == {
        "test_with_the_manager",
        "test_without_crashes",
    }
    assert skipped_actions(items["test_without_crashes"]) == ("crash", "error")
    assert skipped_actions(items["test_with_the_manager"]) == ()
