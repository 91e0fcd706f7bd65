"""Building typed objects: constructors take the Python field names and refuse unknown ones;
reading keeps what the class does not declare; Hypothesis builds them by field name."""

from __future__ import annotations

import inspect
from typing import Annotated

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import Field, ValidationError

import kubeforge
import kubeforge.markers
from kubeforge.models import Container, CronJobSpec, JobTemplateSpec, Pod, PodSpec
from kubeforge.models.meta_v1 import ServerAddressByClientCIDR
from kubeforge.testing import objects


class TabSpec(kubeforge.Model):
    schedule: str
    starting_deadline_seconds: int | None = None
    suspend: bool = False


class TabStatus(kubeforge.Model):
    conditions: Annotated[list[kubeforge.Condition], kubeforge.markers.ListMapKeys("type")] = Field(
        default_factory=list
    )


@kubeforge.resource(group="arguments.example.com", version="v1")
class Tab(kubeforge.Resource[TabSpec, TabStatus]):
    """A scheduled thing."""


def test_a_misspelt_keyword_is_refused_by_name() -> None:
    with pytest.raises(ValidationError) as refused:
        TabSpec(schedule="* * * * *", suspnd=True)  # type: ignore[call-arg]
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [
        (("suspnd",), "extra_forbidden")
    ]
    with pytest.raises(ValidationError, match="suspnd"):
        CronJobSpec(schedule="@daily", job_template=JobTemplateSpec(), suspnd=True)  # type: ignore[call-arg]


def test_a_misspelt_key_of_a_nested_dict_is_refused() -> None:
    with pytest.raises(ValidationError) as refused:
        Pod(spec={"containers": [{"name": "c", "imag": "nginx"}]})  # type: ignore[arg-type]
    assert [e["loc"] for e in refused.value.errors()] == [("spec", "containers", 0, "imag")]


def test_a_misspelt_attribute_is_refused_and_a_read_unknown_field_can_change() -> None:
    spec = TabSpec(schedule="@daily")
    spec.suspend = True
    with pytest.raises(AttributeError, match="suspnd"):
        spec.suspnd = True  # type: ignore[attr-defined]
    read = TabSpec.from_dict({"schedule": "@daily", "timeZone": "UTC"})
    read.timeZone = "Europe/Paris"  # type: ignore[attr-defined]
    assert read.to_dict()["timeZone"] == "Europe/Paris"


def test_python_names_and_json_names_build_the_same_object() -> None:
    by_name = TabSpec(schedule="@daily", starting_deadline_seconds=5)
    by_alias = TabSpec(schedule="@daily", startingDeadlineSeconds=5)  # type: ignore[call-arg]
    validated = TabSpec.model_validate({"schedule": "@daily", "starting_deadline_seconds": 5})
    assert by_name == by_alias == validated == TabSpec.from_dict(by_name.to_dict())
    # A name the alias generator would not give back (clientCIDR) is a Python name too.
    address = ServerAddressByClientCIDR(client_cidr="0.0.0.0/0", server_address="a:6443")
    assert address.to_dict()["clientCIDR"] == "0.0.0.0/0"
    assert ServerAddressByClientCIDR.model_validate(
        {"client_cidr": "0.0.0.0/0", "server_address": "a:6443"}
    ) == ServerAddressByClientCIDR.from_dict(address.to_dict())


def test_reading_keeps_fields_the_class_does_not_declare() -> None:
    stored = {
        "apiVersion": "arguments.example.com/v1",
        "kind": "Tab",
        "metadata": {"name": "t"},
        "spec": {"schedule": "@daily", "suspend": False, "timeZone": "UTC"},
        "newerTopLevel": {"x": 1},
    }
    tab = Tab.from_dict(stored)
    assert tab.spec.model_extra == {"timeZone": "UTC"}
    assert tab.to_dict() == stored
    pod = Pod.from_dict({"spec": {"containers": [{"name": "c", "futureField": True}]}})
    assert pod.spec is not None and pod.spec.containers[0].model_extra == {"futureField": True}


def test_signatures_name_python_fields_and_take_no_other_keywords() -> None:
    # Built-in models build their validators on first use; the signature is right before.
    signature = inspect.signature(PodSpec)
    assert "containers" in signature.parameters
    assert "service_account_name" in signature.parameters
    assert signature.parameters["containers"].default is inspect.Parameter.empty
    assert all(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values())
    assert list(inspect.signature(TabSpec).parameters) == [
        "schedule",
        "starting_deadline_seconds",
        "suspend",
    ]
    assert "client_cidr" in inspect.signature(ServerAddressByClientCIDR).parameters


@settings(max_examples=25, deadline=None)
@given(st.builds(TabSpec, starting_deadline_seconds=st.just(7)), st.builds(Container))
def test_hypothesis_builds_models_by_python_field_name(spec: TabSpec, container: Container) -> None:
    assert spec.starting_deadline_seconds == 7
    assert not spec.model_extra
    assert isinstance(container.name, str)  # the required field is filled in


@settings(max_examples=25, deadline=None)
@given(st.from_type(TabStatus))
def test_hypothesis_leaves_a_default_factory_to_the_model(status: TabStatus) -> None:
    assert isinstance(status.conditions, list)


@settings(max_examples=25, deadline=None)
@given(objects(Tab, spec=st.builds(TabSpec, schedule=st.just("@daily"))))
def test_objects_without_a_status_strategy_build_the_status_model(tab: Tab) -> None:
    assert tab.spec.schedule == "@daily"
    assert tab.status is None or tab.status.conditions == []
    assert Tab.validate_data(tab.to_dict()) == []
