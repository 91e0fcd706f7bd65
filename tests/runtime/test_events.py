"""The event recorder writes events.k8s.io/v1 Events and folds repeats into a series."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeforge._client.client import Client
from kubeforge._client.config import load_kubeconfig
from kubeforge._runtime.events import EVENT_KIND, EventRecorder, object_reference
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
async def api(server: APIServer, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(server.write_kubeconfig(tmp_path / "kc"))) as kube:
        yield kube


async def config_map(api: Client, name: str, namespace: str = "default") -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    created: dict[str, Any] = await api.create(obj, namespace=namespace)
    return created


async def events_in(api: Client, namespace: str = "default") -> list[dict[str, Any]]:
    return (await api.list(EVENT_KIND, namespace=namespace)).items


async def test_an_event_is_written_with_every_field(api: Client) -> None:
    target = await config_map(api, "settings")
    recorder = EventRecorder(api, controller="example.com/settings-controller", instance="pod-1")
    stored = await recorder.event(target, "Normal", "Synced", "settings applied", action="Sync")

    name = stored["metadata"]["name"]
    assert re.fullmatch(r"settings\.[0-9a-f]+", name)
    assert stored["metadata"]["namespace"] == "default"
    assert MICRO_TIME.match(stored["eventTime"])
    assert stored["regarding"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "settings",
        "namespace": "default",
        "uid": target["metadata"]["uid"],
        "resourceVersion": target["metadata"]["resourceVersion"],
    }
    assert stored["reason"] == "Synced"
    assert stored["note"] == "settings applied"
    assert stored["type"] == "Normal"
    assert stored["action"] == "Sync"
    assert stored["reportingController"] == "example.com/settings-controller"
    assert stored["reportingInstance"] == "pod-1"
    assert "series" not in stored
    assert [e["metadata"]["name"] for e in await events_in(api)] == [name]


async def test_repeats_become_a_series_and_a_new_reason_a_new_event(api: Client) -> None:
    target = await config_map(api, "app")
    recorder = EventRecorder(api, controller="app-controller")
    first = await recorder.event(target, "Warning", "Failed", "could not pull")
    second = await recorder.event(target, "Warning", "Failed", "could not pull")
    assert second["metadata"]["name"] == first["metadata"]["name"]
    assert second["series"]["count"] == 2
    third = await recorder.event(target, "Warning", "Failed", "could not pull")
    assert third["series"]["count"] == 3
    assert MICRO_TIME.match(third["series"]["lastObservedTime"])

    stored = await events_in(api)
    assert len(stored) == 1
    assert stored[0]["series"]["count"] == 3
    assert stored[0]["action"] == "Failed"  # an empty action takes the reason

    await recorder.event(target, "Warning", "Retrying", "could not pull")
    await recorder.event(target, "Warning", "Failed", "a different note")
    stored = await events_in(api)
    assert sorted((e["reason"], e["note"]) for e in stored) == [
        ("Failed", "a different note"),
        ("Failed", "could not pull"),
        ("Retrying", "could not pull"),
    ]


async def test_a_deleted_event_is_written_again(api: Client) -> None:
    target = await config_map(api, "flaky")
    recorder = EventRecorder(api, controller="flaky-controller")
    first = await recorder.event(target, "Normal", "Tick", "tock")
    await api.delete(EVENT_KIND, first["metadata"]["name"], namespace="default")
    again = await recorder.event(target, "Normal", "Tick", "tock")
    assert again["metadata"]["name"] != first["metadata"]["name"]
    assert "series" not in again
    assert len(await events_in(api)) == 1


async def test_cluster_scoped_objects_get_events_in_default(api: Client) -> None:
    node_ns = await api.get("v1/Namespace", "default")
    recorder = EventRecorder(api, controller="ns-controller")
    stored = await recorder.event(node_ns, "Normal", "Seen", "x" * 2000)
    assert stored["metadata"]["namespace"] == "default"
    assert "namespace" not in stored["regarding"]
    assert len(stored["note"].encode()) == 1024


async def test_related_objects_and_the_default_instance(api: Client) -> None:
    target = await config_map(api, "a")
    other = await config_map(api, "b")
    recorder = EventRecorder(api, controller="pair")
    assert recorder.instance.startswith("pair-")
    stored = await recorder.event(target, "Normal", "Paired", "with b", related=other)
    assert stored["related"] == object_reference(other)
    # Same event but about another related object: not folded.
    await recorder.event(target, "Normal", "Paired", "with b")
    assert len(await events_in(api)) == 2


async def test_bad_events_raise_from_event_but_not_from_record(api: Client) -> None:
    target = await config_map(api, "strict")
    recorder = EventRecorder(api, controller="strict")
    with pytest.raises(ValueError, match="Normal or Warning"):
        await recorder.event(target, "Info", "Why", "no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reason"):
        await recorder.event(target, "Normal", "", "no")
    recorder.record(target, "Info", "Why", "no")  # type: ignore[arg-type]
    recorder.record({"kind": "Nothing"}, "Normal", "Why", "no")
    recorder.record(target, "Normal", "Background", "written later")
    recorder.record(target, "Normal", "Background", "written later")
    await recorder.flush()
    stored = await events_in(api)
    assert len(stored) == 1
    assert stored[0]["reason"] == "Background"
    assert stored[0]["series"]["count"] == 2


async def test_other_namespaces_and_kubectl(api: Client, kubectl: Kubectl) -> None:
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    target = await config_map(api, "cfg", namespace="team")
    recorder = EventRecorder(api, controller="cfg-controller")
    for _ in range(3):
        await recorder.event(target, "Warning", "BadConfig", "key missing from cfg")
    assert await events_in(api) == []
    [stored] = await events_in(api, "team")
    assert stored["series"]["count"] == 3

    listed = await kubectl.run("get", "events", "-n", "team")
    assert "BadConfig" in listed.out
    assert "key missing from cfg" in listed.out
    assert "configmap/cfg" in listed.out
    core = await api.get("v1/Event", stored["metadata"]["name"], namespace="team")
    assert core["reason"] == "BadConfig"
    assert core["message"] == "key missing from cfg"
    assert core["involvedObject"]["name"] == "cfg"
    assert core["reportingComponent"] == "cfg-controller"


async def test_series_expire_after_six_minutes_and_the_cache_is_bounded(api: Client) -> None:
    target = await config_map(api, "clocked")
    now = [1000.0]
    recorder = EventRecorder(api, controller="clocked", cache_size=2, clock=lambda: now[0])
    first = await recorder.event(target, "Normal", "A", "a")
    now[0] += 359
    assert (await recorder.event(target, "Normal", "A", "a"))["series"]["count"] == 2
    now[0] += 359  # six minutes counts from the last occurrence
    assert (await recorder.event(target, "Normal", "A", "a"))["series"]["count"] == 3
    now[0] += 361
    fresh = await recorder.event(target, "Normal", "A", "a")
    assert fresh["metadata"]["name"] != first["metadata"]["name"]
    assert "series" not in fresh

    # With room for two series, a third pushes out the least recently seen.
    await recorder.event(target, "Normal", "B", "b")
    await recorder.event(target, "Normal", "A", "a")
    await recorder.event(target, "Normal", "C", "c")
    assert (await recorder.event(target, "Normal", "A", "a"))["series"]["count"] == 3
    assert "series" not in await recorder.event(target, "Normal", "B", "b")
    assert len(await events_in(api)) == 5


async def test_recorded_similar_events_are_combined_and_an_objects_events_rate_limited(
    api: Client,
) -> None:
    # As a ReplicaSet controller creating pods: one object, one reason, a note per pod.
    target = await config_map(api, "replicas")
    now = [1000.0]
    recorder = EventRecorder(api, controller="replicaset-controller", clock=lambda: now[0])
    for i in range(40):
        recorder.record(target, "Normal", "SuccessfulCreate", f"Created pod: web-{i}")
    await recorder.flush()
    stored = sorted(await events_in(api), key=lambda e: e["metadata"]["name"])
    # Nine events as they are, then one aggregate that counts the similar ones in its series,
    # until the object's budget of 25 is spent: the rest are dropped.
    assert [e["note"] for e in stored[:9]] == [f"Created pod: web-{i}" for i in range(9)]
    aggregate = stored[9]
    assert aggregate["note"] == "(combined from similar events): Created pod: web-9"
    assert aggregate["reason"] == "SuccessfulCreate"
    assert aggregate["series"]["count"] == 25 - 9
    assert len(stored) == 10

    # One more event is allowed every five minutes; the aggregate counts it.
    now[0] += 300
    recorder.record(target, "Normal", "SuccessfulCreate", "Created pod: web-40")
    await recorder.flush()
    again = await api.get(EVENT_KIND, aggregate["metadata"]["name"], namespace="default")
    assert again["series"]["count"] == 25 - 9 + 1
    assert len(await events_in(api)) == 10


async def test_event_writes_at_once_and_an_uncorrelated_recorder_records_everything(
    api: Client,
) -> None:
    target = await config_map(api, "scheduled")
    recorder = EventRecorder(api, controller="default-scheduler", correlate=False)
    for i in range(30):
        recorder.record(target, "Warning", "FailedScheduling", f"attempt {i}")
    await recorder.flush()
    assert len(await events_in(api)) == 30
    correlated = EventRecorder(api, controller="other")
    for i in range(30):
        await correlated.event(target, "Normal", "Direct", f"note {i}")
    assert len(await events_in(api)) == 60


@pytest.mark.parametrize(
    "obj",
    [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "uid": "u", "resourceVersion": "7"},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": ""}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "labels": {}}},
    ],
)
def test_a_plain_objects_reference_is_the_one_get_reference_makes(obj: dict[str, Any]) -> None:
    from kubeforge._runtime.ownership import get_reference

    assert object_reference(obj) == get_reference(obj).to_dict()


def test_a_reference_needs_a_name() -> None:
    with pytest.raises(ValueError, match="without a name"):
        object_reference({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "d"}})
