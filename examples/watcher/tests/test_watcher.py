"""The watcher scenario on a development cluster: kubectl 1.33 applies Watchers and shows the
ConfigMaps the controller keeps in line with them."""

from __future__ import annotations

import json
from typing import Any

import kubeforge
from kubeforge.client import Reader
from kubeforge.events import EventRecorder
from kubeforge.models import ConfigMap
from kubeforge.testing import FlakyReconciler, Kubectl, TestEnv, eventually, metric_value

from api.v1alpha1 import Watcher
from controllers.watcher import WatcherReconciler

IMAGE = "busybox:1.36"


def watcher_manifest(
    name: str,
    *,
    data: dict[str, str] | None = None,
    binary: dict[str, str] | None = None,
    container: dict[str, Any] | None = None,
) -> str:
    """A Watcher as JSON (which `kubectl apply` reads as well as YAML)."""
    spec: dict[str, Any] = {"container": container or {"name": "watch", "image": IMAGE}}
    if data is not None:
        spec["configData"] = data
    if binary is not None:
        spec["configBinaryData"] = binary
    return json.dumps(
        {
            "apiVersion": "watch.kubeforge.dev/v1alpha1",
            "kind": "Watcher",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


async def columns(kubectl: Kubectl, name: str) -> dict[str, str]:
    """The row of `kubectl get watchers NAME`, by column header."""
    header, row = (await kubectl.run("get", "watchers", name)).rows()
    return dict(zip(header, row, strict=False))


async def config_map(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    """`kubectl get configmap NAME -o json`, or None when there is none."""
    result = await kubectl.run("get", "configmap", name, "-o", "json", check=False)
    if result.code != 0:
        assert "NotFound" in result.err, result.err
        return None
    document: dict[str, Any] = result.json()
    return document


async def config_shown(
    kubectl: Kubectl, name: str, data: dict[str, str] | None, binary: dict[str, str] | None
) -> dict[str, Any] | None:
    """The ConfigMap once it holds exactly `data` and `binary` (None until then)."""
    found = await config_map(kubectl, name)
    if found is None or found.get("data") != data or found.get("binaryData") != binary:
        return None
    return found


async def test_the_config_map_holds_the_configuration(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    data = {"greeting": "hello", "settings.ini": "[main]\ninterval = 30\n"}
    binary = {"blob.bin": "AAECAw=="}
    await kubectl.apply(watcher_manifest("app", data=data, binary=binary))

    shown = await eventually(lambda: config_shown(kubectl, "app-config", data, binary))
    watcher = await kubectl.json("get", "watcher", "app")
    (owner,) = shown["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Watcher",
        "app",
        watcher["metadata"]["uid"],
        True,
    )
    assert shown["metadata"]["labels"]["watch.kubeforge.dev/watcher"] == "app"

    # The status names the ConfigMap, and kubectl shows it in its own column.
    await eventually(lambda: _column_is(kubectl, "app", "CONFIGMAP", "app-config"))
    header, row = (await kubectl.run("get", "watchers")).rows()
    assert header == ["NAME", "IMAGE", "CONFIGMAP", "AGE"]
    assert row[:3] == ["app", IMAGE, "app-config"]
    status = (await kubectl.json("get", "watcher", "app"))["status"]
    assert status == {"configMapName": "app-config"}


async def _column_is(kubectl: Kubectl, name: str, column: str, value: str) -> bool:
    return (await columns(kubectl, name)).get(column) == value


async def test_a_watcher_without_configuration_gets_an_empty_config_map(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(watcher_manifest("bare"))
    shown = await eventually(lambda: config_map(kubectl, "bare-config"))
    assert "data" not in shown and "binaryData" not in shown
    await eventually(lambda: _column_is(kubectl, "bare", "CONFIGMAP", "bare-config"))


async def test_spec_changes_reach_the_config_map(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    first = {"keep": "1", "change": "old", "drop": "x"}
    await kubectl.apply(watcher_manifest("app", data=first, binary={"a.bin": "AQ=="}))
    await eventually(lambda: config_shown(kubectl, "app-config", first, {"a.bin": "AQ=="}))

    # A key added, one changed, one removed; the binary data replaced by other keys.
    second = {"keep": "1", "change": "new", "added": "y"}
    await kubectl.apply(watcher_manifest("app", data=second, binary={"b.bin": "Ag=="}))
    await eventually(lambda: config_shown(kubectl, "app-config", second, {"b.bin": "Ag=="}))

    # Dropping all configuration empties the ConfigMap, which stays.
    await kubectl.apply(watcher_manifest("app"))
    empty = await eventually(lambda: config_shown(kubectl, "app-config", None, None))
    assert empty["metadata"]["ownerReferences"][0]["name"] == "app"


async def test_edits_to_the_config_map_are_reverted(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    data = {"greeting": "hello"}
    await kubectl.apply(watcher_manifest("app", data=data, binary={"k.bin": "AA=="}))
    before = await eventually(lambda: config_shown(kubectl, "app-config", data, {"k.bin": "AA=="}))

    # `kubectl edit` with an editor that changes the value in place.
    editing = Kubectl(
        kubectl.kubeconfig,
        binary=kubectl.binary,
        cache_dir=kubectl.cache_dir,
        env={"KUBE_EDITOR": "sed -i s/hello/tampered/"},
    )
    edited = await editing.run("edit", "configmap", "app-config")
    assert "configmap/app-config edited" in edited.out
    await eventually(lambda: config_shown(kubectl, "app-config", data, {"k.bin": "AA=="}))

    # A patch adding a key, dropping the binary data and the owner reference.
    await kubectl.run(
        "patch",
        "configmap",
        "app-config",
        "--type=json",
        "-p",
        json.dumps(
            [
                {"op": "add", "path": "/data/extra", "value": "sneaked in"},
                {"op": "remove", "path": "/binaryData"},
                {"op": "remove", "path": "/metadata/ownerReferences"},
            ]
        ),
    )
    after = await eventually(
        lambda: _owned_and_shown(kubectl, "app-config", data, {"k.bin": "AA=="})
    )
    # Put back in place, not replaced: the same object.
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


async def _owned_and_shown(
    kubectl: Kubectl, name: str, data: dict[str, str] | None, binary: dict[str, str] | None
) -> dict[str, Any] | None:
    found = await config_shown(kubectl, name, data, binary)
    return found if found and found["metadata"].get("ownerReferences") else None


async def test_a_deleted_config_map_is_recreated(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    data = {"greeting": "hello"}
    await kubectl.apply(watcher_manifest("app", data=data))
    before = await eventually(lambda: config_shown(kubectl, "app-config", data, None))

    await kubectl.run("delete", "configmap", "app-config")
    again = await eventually(lambda: _replaced(kubectl, before["metadata"]["uid"]))
    assert again["data"] == data
    assert again["metadata"]["ownerReferences"][0]["name"] == "app"


async def _replaced(kubectl: Kubectl, old_uid: str) -> dict[str, Any] | None:
    found = await config_map(kubectl, "app-config")
    return found if found and found["metadata"]["uid"] != old_uid else None


async def test_deleting_the_watcher_deletes_its_config_map(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(watcher_manifest("app", data={"a": "b"}))
    await eventually(lambda: config_map(kubectl, "app-config"))
    await kubectl.run("delete", "watcher", "app")
    await kubectl.run("wait", "--for=delete", "configmap/app-config", "--timeout=30s")
    assert await config_map(kubectl, "app-config") is None


async def test_a_key_in_both_maps_is_refused_without_endless_retries(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    # The validating webhook keeps such Watchers out; without it (a Watcher stored before the
    # webhook was installed, say) the API server refuses the ConfigMap, retrying cannot help,
    # so the controller reports it as a warning and waits for a new spec.
    def controller_only(manager: kubeforge.Manager) -> None:
        events = manager.event_recorder("watcher-controller")
        reconciler = WatcherReconciler(events, manager.api_reader)
        manager.controller().for_(Watcher).owns(ConfigMap).complete(reconciler)

    async with testenv.run_manager(controller_only, config=kubeforge_manager_config):
        await kubectl.apply(watcher_manifest("clash", data={"k": "text"}, binary={"k": "AA=="}))
        events = await eventually(lambda: _warnings(kubectl, "clash"))
        assert "ConfigMapRefused" in events and "k" in events
        assert await config_map(kubectl, "clash-config") is None

        await kubectl.apply(watcher_manifest("clash", data={"k": "text"}))
        await eventually(lambda: config_shown(kubectl, "clash-config", {"k": "text"}, None))


async def _warnings(kubectl: Kubectl, name: str) -> str:
    result = await kubectl.run("events", "--for", f"watcher/{name}", "--types=Warning", check=False)
    return result.out if "ConfigMapRefused" in result.out else ""


async def test_an_existing_config_map_is_adopted_unless_another_controls_it(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    # A ConfigMap nobody controls is taken over: filled in and owned by the Watcher.
    await kubectl.run("create", "configmap", "mine-config", "--from-literal=stale=value")
    await kubectl.apply(watcher_manifest("mine", data={"fresh": "value"}))
    adopted = await eventually(
        lambda: _owned_and_shown(kubectl, "mine-config", {"fresh": "value"}, None)
    )
    assert adopted["metadata"]["ownerReferences"][0]["kind"] == "Watcher"

    # One controlled by another object is left alone, and the Watcher says why.
    boss = await kubectl.json("create", "configmap", "boss")
    taken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "taken-config",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "boss",
                    "uid": boss["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "data": {"theirs": "value"},
    }
    await kubectl.apply(json.dumps(taken))
    await kubectl.apply(watcher_manifest("taken", data={"mine": "value"}))
    events = await eventually(lambda: _warnings(kubectl, "taken"))
    assert "already owned by another ConfigMap controller boss" in events
    still = await config_map(kubectl, "taken-config")
    assert still is not None and still["data"] == {"theirs": "value"}


async def test_invalid_specs_are_rejected_with_the_field_path(
    testenv: TestEnv, kubectl: Kubectl
) -> None:
    async def refused(manifest: str) -> str:
        result = await kubectl.run("apply", "-f", "-", stdin=manifest, check=False)
        assert result.code != 0
        return result.err.strip()

    prefix = 'The Watcher "bad" is invalid: '
    nameless = await refused(watcher_manifest("bad", container={"image": IMAGE}))
    assert nameless == prefix + "spec.container.name: Required value"

    # A pod's container may leave out its image; a Watcher's may not.
    imageless = await refused(watcher_manifest("bad", container={"name": "watch"}))
    assert imageless == prefix + "spec.container.image: Required value"

    garbled = await refused(watcher_manifest("bad", binary={"blob": "not base64!"}))
    assert garbled == prefix + (
        'spec.configBinaryData.blob: Invalid value: "not base64!": '
        'spec.configBinaryData.blob in body must be of type byte: "not base64!"'
    )

    # None of them got in.
    assert (await kubectl.run("get", "watchers")).rows() == []


class CountingWatcherReconciler(WatcherReconciler):
    """The real reconciler, counting its passes and its writes of existing ConfigMaps."""

    def __init__(self, events: EventRecorder, api_reader: Reader) -> None:
        super().__init__(events, api_reader)
        self.passes = 0
        self.writes = 0

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        result = await super().reconcile(request)
        self.passes += 1
        return result

    async def write_config_map(self, config_map: ConfigMap) -> ConfigMap:
        self.writes += 1
        return await super().write_config_map(config_map)


async def test_a_settled_config_map_is_left_alone(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    counting: CountingWatcherReconciler | None = None

    def setup_counting(manager: kubeforge.Manager) -> None:
        nonlocal counting
        counting = CountingWatcherReconciler(
            manager.event_recorder("watcher-controller"), manager.api_reader
        )
        manager.controller().for_(Watcher).owns(ConfigMap).complete(counting)

    async with testenv.run_manager(setup_counting, config=kubeforge_manager_config):
        data, binary = {"greeting": "hello"}, {"blob.bin": "AAECAw=="}
        await kubectl.apply(watcher_manifest("app", data=data, binary=binary))
        await eventually(lambda: _column_is(kubectl, "app", "CONFIGMAP", "app-config"))
        settled = await eventually(lambda: config_shown(kubectl, "app-config", data, binary))
        assert counting is not None
        passes = counting.passes

        # Something unrelated changes on the Watcher: another pass, and nothing to write.
        await kubectl.run("annotate", "watcher", "app", "example.com/note=unrelated")
        await eventually(lambda: counting is not None and counting.passes > passes)
        assert counting.writes == 0
        now = await config_map(kubectl, "app-config")
        assert now is not None
        assert now["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]


class RacingWatcherReconciler(WatcherReconciler):
    """The real reconciler, except that someone else writes the ConfigMap between its read
    and its first write: that write must conflict, and be retried."""

    def __init__(self, events: EventRecorder, api_reader: Reader, other: kubeforge.Client) -> None:
        super().__init__(events, api_reader)
        self.other = other
        self.raced = False
        self.conflicts = 0

    async def write_config_map(self, config_map: ConfigMap) -> ConfigMap:
        if not self.raced:
            self.raced = True
            await self.other.patch(
                ConfigMap,
                config_map.metadata.name or "",
                {"metadata": {"annotations": {"example.com/touched": "by someone else"}}},
                namespace=config_map.metadata.namespace,
            )
        try:
            return await super().write_config_map(config_map)
        except kubeforge.Conflict:
            self.conflicts += 1
            raise


async def test_a_conflicting_write_is_retried_on_a_fresh_read(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    racing: RacingWatcherReconciler | None = None

    def setup_racing(manager: kubeforge.Manager) -> None:
        nonlocal racing
        racing = RacingWatcherReconciler(
            manager.event_recorder("watcher-controller"), manager.api_reader, testenv.client
        )
        manager.controller().for_(Watcher).owns(ConfigMap).complete(racing)

    async with testenv.run_manager(setup_racing, config=kubeforge_manager_config) as manager:
        await kubectl.apply(watcher_manifest("app", data={"v": "1"}))
        await eventually(lambda: config_shown(kubectl, "app-config", {"v": "1"}, None))
        assert racing is not None and not racing.raced  # creating it needed no write yet

        await kubectl.apply(watcher_manifest("app", data={"v": "2"}))
        shown = await eventually(lambda: config_shown(kubectl, "app-config", {"v": "2"}, None))
        assert racing.conflicts == 1
        # The retry started from what the other writer left, so its change survived.
        assert shown["metadata"]["annotations"]["example.com/touched"] == "by someone else"
        errors = metric_value(
            manager, "controller_runtime_reconcile_errors_total", controller="watcher"
        )
        assert errors == 0  # retried within the reconcile, so never counted as an error
        assert manager.running.is_set()


async def test_a_failing_reconciler_is_retried_with_backoff(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    flaky: FlakyReconciler | None = None

    def setup_flaky(manager: kubeforge.Manager) -> None:
        nonlocal flaky
        events = manager.event_recorder("watcher-controller")
        flaky = FlakyReconciler(WatcherReconciler(events, manager.api_reader), failures=5)
        manager.controller().for_(Watcher).owns(ConfigMap).complete(flaky)

    # Only the test's namespace: the backoff it measures is one object's, which objects that
    # other tests left behind on a shared cluster must not interleave with.
    async with testenv.run_manager(
        setup_flaky, config=kubeforge_manager_config, namespaces=[testenv.namespace]
    ) as manager:
        await kubectl.apply(watcher_manifest("flaky", data={"state": "survived"}))
        await eventually(lambda: config_shown(kubectl, "flaky-config", {"state": "survived"}, None))
        await eventually(lambda: _column_is(kubectl, "flaky", "CONFIGMAP", "flaky-config"))
        assert flaky is not None
        gaps = flaky.gaps()
        # Per-request exponential backoff from 5 ms: no sooner than 5, 10, 20, 40 ms apart.
        assert gaps[3] >= 0.04 and sum(gaps[:4]) >= 0.075, gaps
        errors = metric_value(
            manager, "controller_runtime_reconcile_errors_total", controller="watcher"
        )
        assert errors == 5
        assert manager.running.is_set()  # the manager kept going
