"""Status conditions follow apimachinery's SetStatusCondition rules, for dicts and models."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from kubeforge._api.meta import Condition
from kubeforge._runtime.conditions import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
EARLIER = "2020-01-02T03:04:05Z"


def ready(status: str = "True", **extra: Any) -> dict[str, Any]:
    return {"type": "Ready", "status": status, "reason": "Done", "message": "all good", **extra}


def test_adding_stamps_the_transition_time_in_seconds() -> None:
    conditions: list[Any] = []
    assert set_status_condition(conditions, ready())
    assert len(conditions) == 1
    assert SECONDS.match(conditions[0]["lastTransitionTime"])
    assert conditions[0]["reason"] == "Done"


def test_adding_keeps_a_given_transition_time_and_copies_the_condition() -> None:
    conditions: list[Any] = []
    given = ready(lastTransitionTime=EARLIER)
    assert set_status_condition(conditions, given)
    assert conditions[0]["lastTransitionTime"] == EARLIER
    conditions[0]["reason"] = "Changed"
    assert given["reason"] == "Done"


def test_same_values_are_no_change() -> None:
    conditions = [ready(lastTransitionTime=EARLIER, observedGeneration=2)]
    assert not set_status_condition(conditions, ready(observedGeneration=2))
    assert conditions[0]["lastTransitionTime"] == EARLIER


def test_reason_message_and_generation_update_without_a_transition() -> None:
    conditions = [ready(lastTransitionTime=EARLIER)]
    changed = set_status_condition(
        conditions, ready(reason="Again", message="still fine", observedGeneration=3)
    )
    assert changed
    assert conditions[0]["reason"] == "Again"
    assert conditions[0]["message"] == "still fine"
    assert conditions[0]["observedGeneration"] == 3
    assert conditions[0]["lastTransitionTime"] == EARLIER


def test_a_status_change_moves_the_transition_time() -> None:
    conditions = [ready(lastTransitionTime=EARLIER)]
    assert set_status_condition(conditions, ready("False"))
    assert conditions[0]["status"] == "False"
    assert conditions[0]["lastTransitionTime"] != EARLIER
    assert SECONDS.match(conditions[0]["lastTransitionTime"])
    # A given time wins over now.
    assert set_status_condition(conditions, ready("True", lastTransitionTime=EARLIER))
    assert conditions[0]["lastTransitionTime"] == EARLIER


def test_a_zero_generation_clears_the_field() -> None:
    conditions = [ready(lastTransitionTime=EARLIER, observedGeneration=4)]
    assert set_status_condition(conditions, ready())
    assert "observedGeneration" not in conditions[0]


def test_models_get_aware_datetimes() -> None:
    conditions: list[Any] = []
    assert set_status_condition(
        conditions, Condition(type="Ready", status="True", reason="Up", message="")
    )
    stamped = conditions[0]
    assert isinstance(stamped, Condition)
    assert stamped.last_transition_time is not None
    assert stamped.last_transition_time.tzinfo is not None
    assert stamped.last_transition_time.microsecond == 0
    first = stamped.last_transition_time

    assert not set_status_condition(
        conditions, Condition(type="Ready", status="True", reason="Up", message="")
    )
    assert set_status_condition(
        conditions,
        Condition(type="Ready", status="True", reason="Up", message="", observed_generation=7),
    )
    assert stamped.observed_generation == 7
    assert stamped.last_transition_time == first

    then = datetime(2021, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert set_status_condition(
        conditions, {"type": "Ready", "status": "False", "lastTransitionTime": then.isoformat()}
    )
    assert stamped.status == "False"
    assert stamped.last_transition_time == then
    assert stamped.reason == ""


def test_a_model_goes_into_a_dict_list_as_a_dict_and_back() -> None:
    dicts: list[Any] = [ready(lastTransitionTime=EARLIER)]
    then = datetime(2022, 1, 1, tzinfo=UTC)
    synced = Condition(
        type="Synced", status="False", reason="Waiting", message="", last_transition_time=then
    )
    set_status_condition(dicts, synced)
    assert dicts[1] == {
        "type": "Synced",
        "status": "False",
        "reason": "Waiting",
        "message": "",
        "lastTransitionTime": "2022-01-01T00:00:00Z",
    }

    models: list[Any] = [Condition(type="Ready", status="True", reason="Up", message="")]
    set_status_condition(models, ready("False", lastTransitionTime=EARLIER))
    set_status_condition(models, {"type": "Synced", "status": "Unknown"})
    assert all(isinstance(c, Condition) for c in models)
    assert models[1].status == "Unknown"
    assert models[1].last_transition_time is not None


def test_find_remove_and_predicates() -> None:
    conditions: list[Any] = [ready(), {"type": "Degraded", "status": "False"}]
    assert find_status_condition(conditions, "Ready") is conditions[0]
    assert find_status_condition(conditions, "Missing") is None
    assert find_status_condition(None, "Ready") is None
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_false(conditions, "Ready")
    assert is_status_condition_false(conditions, "Degraded")
    assert not is_status_condition_true(conditions, "Missing")
    assert not is_status_condition_false(conditions, "Missing")
    assert is_status_condition_present_and_equal(conditions, "Degraded", "False")
    assert not is_status_condition_present_and_equal(conditions, "Degraded", "True")

    assert remove_status_condition(conditions, "Ready")
    assert not remove_status_condition(conditions, "Ready")
    assert [c["type"] for c in conditions] == ["Degraded"]

    models = [Condition(type="Ready", status="True", reason="Up", message="")]
    assert is_status_condition_true(models, "Ready")
    assert remove_status_condition(models, "Ready")
    assert models == []
