"""The Watcher's webhooks on a development cluster, driven by kubectl 1.33: pods that name a
Watcher get its container as a sidecar, and Watchers whose ConfigMap cannot exist are refused.

The `manager` fixture serves the project's webhooks on this machine and registers them with
the cluster, so every request below reaches them as it would on a real cluster."""

from __future__ import annotations

import json
from typing import Any

import kubeforge
import pytest
from kubeforge.testing import Kubectl, TestEnv, eventually, metric_value

from tests.test_watcher import IMAGE, config_map, watcher_manifest

INJECT = "watch.kubeforge.dev/inject"
POD_WEBHOOK = "/mutate--v1-pod"


def pod_manifest(name: str, watcher: str | None = None) -> str:
    """A one-container pod, asking for `watcher`'s sidecar when given."""
    metadata: dict[str, Any] = {"name": name}
    if watcher is not None:
        metadata["annotations"] = {INJECT: watcher}
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": {"containers": [{"name": "app", "image": IMAGE}]},
        }
    )


GREETER = {
    "apiVersion": "watch.kubeforge.dev/v1alpha1",
    "kind": "Watcher",
    "metadata": {"name": "greeter"},
    "spec": {
        "container": {
            "name": "greeter",
            "image": IMAGE,
            "command": ["sh", "-c", "echo $greeting; sleep 3600"],
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        },
        "volume": {"name": "scratch", "emptyDir": {}},
        "imagePullSecrets": [{"name": "registry-login"}],
        "configData": {"greeting": "hello"},
    },
}


def calls(manager: kubeforge.Manager, path: str) -> float:
    """Requests the manager's webhook server answered at `path` (with code 200)."""
    return (
        metric_value(manager, "controller_runtime_webhook_requests_total", webhook=path, code="200")
        or 0.0
    )


async def refused(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    """What kubectl prints when the API server refuses the request (it must)."""
    result = await kubectl.run(*args, stdin=stdin, check=False)
    assert result.code != 0, result.out
    return result.err.strip()


async def test_a_pod_naming_a_watcher_runs_with_its_sidecar(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(json.dumps(GREETER))
    await eventually(lambda: config_map(kubectl, "greeter-config"))

    await kubectl.apply(pod_manifest("web", watcher="greeter"))
    pod = await kubectl.json("get", "pod", "web")
    spec = pod["spec"]
    assert [c["name"] for c in spec["containers"]] == ["app", "greeter"]
    sidecar = spec["containers"][1]
    assert sidecar["image"] == IMAGE
    assert sidecar["envFrom"] == [{"configMapRef": {"name": "greeter-config"}}]
    # (The ServiceAccount admission plugin mounts the API token into every container too.)
    assert sidecar["volumeMounts"][0] == {"name": "scratch", "mountPath": "/scratch"}
    assert {"name": "scratch", "emptyDir": {}} in spec["volumes"]
    assert spec["imagePullSecrets"] == [{"name": "registry-login"}]

    # On the simulated node both containers start: the ConfigMap the sidecar reads exists.
    await kubectl.run("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    header, row = (await kubectl.run("get", "pod", "web")).rows()
    shown = dict(zip(header, row, strict=False))
    assert (shown["READY"], shown["STATUS"]) == ("2/2", "Running")


async def test_a_pod_without_the_annotation_is_untouched_and_not_even_sent(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(json.dumps(GREETER))
    await kubectl.apply(pod_manifest("plain"))
    pod = await kubectl.json("get", "pod", "plain")
    assert [c["name"] for c in pod["spec"]["containers"]] == ["app"]
    assert "imagePullSecrets" not in pod["spec"]
    # The webhook's match condition keeps unannotated pods away from it altogether.
    assert calls(manager, POD_WEBHOOK) == 0


async def test_a_pod_naming_a_missing_watcher_is_refused(
    manager: kubeforge.Manager, kubectl: Kubectl, testenv: TestEnv
) -> None:
    error = await refused(kubectl, "apply", "-f", "-", stdin=pod_manifest("lost", "nobody"))
    assert error == (
        'Error from server (Forbidden): error when creating "STDIN": admission webhook '
        '"mpod.watch.kubeforge.dev" denied the request: the pod asks for the sidecar of '
        f'Watcher "nobody" (annotation {INJECT}), but there is no Watcher "nobody" in '
        f'namespace "{testenv.namespace}"'
    )
    missing = await kubectl.run("get", "pod", "lost", check=False)
    assert 'pods "lost" not found' in missing.err


# It stops the webhook server of the manager it was given, which a crash replaces.
@pytest.mark.kubeforge_explore(skip=["crash"], reason="stops the given manager's webhook server")
async def test_with_the_webhook_down_pods_that_need_it_are_refused(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(json.dumps(GREETER))
    url = manager.webhook_server.url
    await manager.webhook_server.stop()

    # failurePolicy Fail: kube-apiserver's message, naming the webhook and the call.
    error = await refused(kubectl, "apply", "-f", "-", stdin=pod_manifest("web", "greeter"))
    address = url.removeprefix("https://")
    assert error == (
        'Error from server (InternalError): error when creating "STDIN": Internal error '
        'occurred: failed calling webhook "mpod.watch.kubeforge.dev": failed to call webhook: '
        f'Post "{url}{POD_WEBHOOK}?timeout=10s": dial tcp {address}: connect: connection '
        "refused"
    )
    # Pods that do not ask for a sidecar never depend on the webhook.
    await kubectl.apply(pod_manifest("plain"))
    assert (await kubectl.json("get", "pod", "plain"))["metadata"]["name"] == "plain"


# It counts the webhook calls in the metrics of the manager it was given, which a crash
# replaces.
@pytest.mark.kubeforge_explore(skip=["crash"], reason="reads the given manager's metrics")
async def test_server_side_dry_run_calls_the_webhooks_and_stores_nothing(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(json.dumps(GREETER))
    before = calls(manager, POD_WEBHOOK)
    shown = await kubectl.run(
        "apply", "--dry-run=server", "-o", "json", "-f", "-", stdin=pod_manifest("web", "greeter")
    )
    # sideEffects None: the webhook is called and its patch is in the answer...
    assert [c["name"] for c in shown.json()["spec"]["containers"]] == ["app", "greeter"]
    assert calls(manager, POD_WEBHOOK) == before + 1
    # ...but nothing is stored.
    missing = await kubectl.run("get", "pod", "web", check=False)
    assert 'pods "web" not found' in missing.err

    # The validating webhook judges dry runs too.
    clash = watcher_manifest("clash", data={"k": "text"}, binary={"k": "AA=="})
    error = await refused(kubectl, "apply", "--dry-run=server", "-f", "-", stdin=clash)
    assert error.endswith(
        'spec.configBinaryData[k]: Invalid value: "k": duplicate of key present in configData'
    )


async def test_watchers_whose_config_map_cannot_exist_are_refused_with_the_field_path(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    prefix = 'The Watcher "bad" is invalid: '
    clash = await refused(
        kubectl,
        "apply",
        "-f",
        "-",
        stdin=watcher_manifest("bad", data={"k": "text"}, binary={"k": "AA=="}),
    )
    assert clash == prefix + (
        'spec.configBinaryData[k]: Invalid value: "k": duplicate of key present in configData'
    )
    slash = await refused(
        kubectl, "apply", "-f", "-", stdin=watcher_manifest("bad", data={"a/b": "x"})
    )
    assert slash.startswith(
        prefix + 'spec.configData[a/b]: Invalid value: "a/b": a valid config key'
    )
    assert (await kubectl.run("get", "watchers")).rows() == []

    # An update that would break the ConfigMap is refused too, and the Watcher stays as it was.
    await kubectl.apply(watcher_manifest("good", data={"k": "text"}))
    patch = '{"spec": {"configBinaryData": {"k": "AA=="}}}'
    error = await refused(kubectl, "patch", "watcher", "good", "--type=merge", "-p", patch)
    assert error == 'The Watcher "good" is invalid: ' + (
        'spec.configBinaryData[k]: Invalid value: "k": duplicate of key present in configData'
    )
    stored = await kubectl.json("get", "watcher", "good")
    assert "configBinaryData" not in stored["spec"]


async def test_a_container_mounting_a_volume_the_watcher_lacks_is_a_warning(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    container = {
        "name": "watch",
        "image": IMAGE,
        "volumeMounts": [{"name": "elsewhere", "mountPath": "/data"}],
    }
    applied = await kubectl.apply(watcher_manifest("needy", container=container))
    assert applied.err.strip() == (
        'Warning: spec.container.volumeMounts[0].name: volume "elsewhere" is not the '
        "Watcher's spec.volume; pods asking for this Watcher must have it themselves"
    )
    assert (await kubectl.json("get", "watcher", "needy"))["metadata"]["name"] == "needy"
