"""The official `kubernetes` Python client against the embedded server, unchanged."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s, config as k8s_config, watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.support.crds import widget, widget_crd


@pytest.fixture
def api_client(kubeconfig: Path) -> Iterator[k8s.ApiClient]:
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


async def test_crud_through_typed_apis(api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)

    def scenario() -> None:
        body = k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name="cm", labels={"a": "b"}), data={"k": "v"}
        )
        created = core.create_namespaced_config_map("default", body)
        assert created.metadata.uid and created.metadata.resource_version
        got = core.read_namespaced_config_map("cm", "default")
        assert got.data == {"k": "v"}
        assert got.metadata.creation_timestamp is not None
        listed = core.list_namespaced_config_map("default", label_selector="a=b")
        assert [i.metadata.name for i in listed.items] == ["cm"]
        patched = core.patch_namespaced_config_map("cm", "default", {"data": {"k": "w"}})
        assert patched.data == {"k": "w"}
        got.data = {"k": "x"}
        with pytest.raises(ApiException) as stale:
            core.replace_namespaced_config_map("cm", "default", got)
        assert stale.value.status == 409
        core.delete_namespaced_config_map("cm", "default")
        with pytest.raises(ApiException) as missing:
            core.read_namespaced_config_map("cm", "default")
        assert missing.value.status == 404

    await asyncio.to_thread(scenario)


async def test_deployments_and_status(api_client: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(api_client)

    def scenario() -> None:
        container = k8s.V1Container(name="web", image="nginx")
        template = k8s.V1PodTemplateSpec(
            metadata=k8s.V1ObjectMeta(labels={"app": "web"}),
            spec=k8s.V1PodSpec(containers=[container]),
        )
        spec = k8s.V1DeploymentSpec(
            replicas=2, selector=k8s.V1LabelSelector(match_labels={"app": "web"}), template=template
        )
        deploy = k8s.V1Deployment(metadata=k8s.V1ObjectMeta(name="web"), spec=spec)
        created = apps.create_namespaced_deployment("default", deploy)
        assert created.metadata.generation == 1
        assert created.spec.strategy.type == "RollingUpdate"  # server-side default
        status = {"status": {"replicas": 2, "readyReplicas": 2, "observedGeneration": 1}}
        updated = apps.patch_namespaced_deployment_status("web", "default", status)
        assert updated.status.ready_replicas == 2
        assert updated.metadata.generation == 1
        scale = apps.read_namespaced_deployment_scale("web", "default")
        assert scale.spec.replicas == 2

    await asyncio.to_thread(scenario)


async def test_watch_stream(api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)
    seen: list[tuple[str, str]] = []
    ready = threading.Event()

    def watch() -> None:
        w = k8s_watch.Watch()
        initial = core.list_namespaced_config_map("default")
        ready.set()
        for event in w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=initial.metadata.resource_version,
            timeout_seconds=10,
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                w.stop()

    def act() -> None:
        ready.wait(10)
        core.create_namespaced_config_map("default", {"metadata": {"name": "w1"}})
        core.patch_namespaced_config_map("w1", "default", {"data": {"a": "1"}})
        core.delete_namespaced_config_map("w1", "default")

    await asyncio.gather(asyncio.to_thread(watch), asyncio.to_thread(act))
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def test_custom_objects_and_dynamic_client(api_client: k8s.ApiClient) -> None:
    ext = k8s.ApiextensionsV1Api(api_client)
    custom = k8s.CustomObjectsApi(api_client)

    def scenario() -> None:
        ext.create_custom_resource_definition(widget_crd())
        created: dict[str, Any] = custom.create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", widget("w1")
        )
        assert created["spec"] == {"size": 3, "color": "red"}
        patched = custom.patch_namespaced_custom_object_status(
            "example.com", "v1", "default", "widgets", "w1", {"status": {"phase": "Ready"}}
        )
        assert patched["status"]["phase"] == "Ready"
        with pytest.raises(ApiException) as invalid:
            custom.create_namespaced_custom_object(
                "example.com", "v1", "default", "widgets", widget("w2", size=99)
            )
        assert invalid.value.status == 422
        from kubernetes.dynamic import DynamicClient

        dyn = DynamicClient(api_client)
        widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
        assert [i.metadata.name for i in widgets.get(namespace="default").items] == ["w1"]

    await asyncio.to_thread(scenario)
