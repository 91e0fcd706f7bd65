"""kubeforge.testing: TestEnv (CRD installation, an existing cluster, run_manager), and the
Kubectl and eventually helpers."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
import yaml

import kubeforge
import kubeforge.predicate
from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import (
    USE_EXISTING_CLUSTER,
    Kubectl,
    KubectlError,
    KubectlResult,
    TestEnv,
    eventually,
    find_kubectl,
)

GROUP = "testing.kubeforge.dev"
CRD_KIND = "apiextensions.k8s.io/v1/CustomResourceDefinition"


def crd(kind: str) -> dict[str, Any]:
    """A small namespaced CRD with a status subresource and a printer column."""
    plural = f"{kind.lower()}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer"}},
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"phase": {"type": "string"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_name(kind: str) -> str:
    return f"{kind.lower()}s.{GROUP}"


def write_crds(directory: Path, *kinds: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        (directory / f"{GROUP}_{kind.lower()}s.yaml").write_text(yaml.safe_dump(crd(kind)))
    return directory


async def established(client: kubeforge.Client, name: str) -> bool:
    found = await client.get(CRD_KIND, name)
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def other_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


# -- CRDs -------------------------------------------------------------------------------------


async def test_crds_from_directories_and_files_are_installed_and_established(
    tmp_path: Path,
) -> None:
    bases = tmp_path / "config" / "crd" / "bases"
    bases.mkdir(parents=True)
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-a-crd"}}
    # One file, several documents: the CRD is installed, the rest is ignored.
    (bases / "apples.yaml").write_text(
        yaml.safe_dump_all([crd("Apple"), configmap, None, {"resources": ["apples.yaml"]}])
    )
    (bases / "berries.yml").write_text(yaml.safe_dump(crd("Berry")))
    (bases / "cherries.json").write_text(orjson.dumps(crd("Cherry")).decode())
    (bases / "notes.txt").write_text("not: [yaml")  # neither read nor a reason to fail
    write_crds(bases / "nested", "Elder")  # directories are read one level deep
    single = tmp_path / "extra" / "dates.yaml"
    single.parent.mkdir()
    single.write_text(yaml.safe_dump(crd("Date")))

    async with TestEnv(crd_paths=[bases, single]) as env:
        expected = [crd_name(k) for k in ("Apple", "Berry", "Cherry", "Date")]
        assert sorted(env.installed) == expected
        for name in expected:
            assert await established(env.client, name)
        # The client can use the new kinds at once (discovery is fresh).
        await env.client.create(
            {"apiVersion": f"{GROUP}/v1", "kind": "Date", "metadata": {"name": "first"}},
            namespace="default",
        )
        dates = await env.client.list(f"{GROUP}/v1/Date", namespace="default")
        assert [d["metadata"]["name"] for d in dates] == ["first"]
        with pytest.raises(kubeforge.NotFound):
            await env.client.get("v1/ConfigMap", "not-a-crd", namespace="default")
        with pytest.raises(kubeforge.NotFound):
            await env.client.get(CRD_KIND, crd_name("Elder"))
        # A development cluster of its own, on a port picked for it.
        assert env.cluster is not None and env.config is not None
        assert env.config.server == env.cluster.url
        assert urlsplit(env.config.server).port not in (None, 0)


async def test_each_environment_is_a_cluster_of_its_own(tmp_path: Path) -> None:
    async with TestEnv(crd_paths=[]) as one, TestEnv(crd_paths=[]) as two:
        assert one.config is not None and two.config is not None
        assert one.config.server != two.config.server
        await one.client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only-in-one"}},
            namespace="default",
        )
        with pytest.raises(kubeforge.NotFound):
            await two.client.get("v1/ConfigMap", "only-in-one", namespace="default")
        port = urlsplit(one.config.server).port
    with pytest.raises(RuntimeError, match="not started"):
        one.client  # noqa: B018
    assert one.cluster is None
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port or 0), timeout=2):
        pass  # the server is gone


async def test_workloads_run_and_garbage_is_collected() -> None:
    """Unlike a bare API server, the environment has controllers and nodes."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }
    async with TestEnv(crd_paths=[]) as env:
        client = env.client
        await client.create(deployment, namespace="default")

        async def phases() -> list[str]:
            pods = await client.list("v1/Pod", namespace="default", label_selector="app=web")
            return [p.get("status", {}).get("phase", "") for p in pods]

        async def two_running() -> bool:
            return await phases() == ["Running", "Running"]

        await eventually(two_running, timeout=20)
        await client.delete("apps/v1/Deployment", "web", namespace="default")

        async def all_gone() -> bool:
            left = await client.list("apps/v1/ReplicaSet", namespace="default")
            return not left.items and not await phases()

        await eventually(all_gone, timeout=20)


async def test_a_missing_crd_path_is_skipped_unless_it_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    async with TestEnv(crd_paths=[missing]) as env:
        assert env.installed == []
    strict = TestEnv(crd_paths=[missing], error_if_crd_path_missing=True)
    with pytest.raises(FileNotFoundError, match="no-such-dir"):
        await strict.start()
    assert strict.cluster is None  # it failed before starting one


async def test_a_broken_crd_file_names_the_file(tmp_path: Path) -> None:
    bases = tmp_path / "bases"
    bases.mkdir()
    (bases / "broken.yaml").write_text("kind: [CustomResourceDefinition\n")
    env = TestEnv(crd_paths=[bases])
    with pytest.raises(yaml.YAMLError) as caught:
        await env.start()
    assert any("broken.yaml" in note for note in caught.value.__notes__)
    assert env.cluster is None


async def test_a_failed_start_leaves_nothing_running(tmp_path: Path) -> None:
    bad = crd("Fig")
    bad["metadata"]["name"] = "wrong.name"  # must be <plural>.<group>
    (tmp_path / "fig.yaml").write_text(yaml.safe_dump(bad))
    env = TestEnv(crd_paths=[tmp_path / "fig.yaml"])
    with pytest.raises(kubeforge.Invalid):
        await env.start()
    assert env.cluster is None
    with pytest.raises(RuntimeError):
        env.client  # noqa: B018
    assert other_tasks() == []  # no server, controller or node left behind


# -- an existing cluster ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), ("YES", True), ("0", False), ("", False), ("no", False)],
)
def test_the_environment_variable_selects_an_existing_cluster(
    value: str, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(USE_EXISTING_CLUSTER, value)
    assert TestEnv().use_existing is expected
    # The argument wins over the environment.
    assert TestEnv(use_existing_cluster=not expected).use_existing is (not expected)


async def test_an_existing_cluster_is_used_and_gets_the_crds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bases = write_crds(tmp_path / "bases", "Grape")
    async with DevCluster() as outside:
        kubeconfig = outside.write_kubeconfig(tmp_path / "kubeconfig")
        monkeypatch.setenv(USE_EXISTING_CLUSTER, "1")
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))

        async def no_second_cluster(self: DevCluster) -> None:
            raise AssertionError("TestEnv started a cluster of its own")

        monkeypatch.setattr(DevCluster, "start", no_second_cluster)
        async with TestEnv(crd_paths=[bases]) as env:
            assert env.cluster is None
            assert env.config is not None and env.config.server == outside.url
            assert env.installed == [crd_name("Grape")]
            with pytest.raises(RuntimeError, match="its own kubeconfig"):
                env.write_kubeconfig(tmp_path / "other")
            await env.client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-tests"}},
                namespace="default",
            )
        # Installed in the outside cluster, which keeps running after the environment.
        assert outside.client is not None
        assert await established(outside.client, crd_name("Grape"))
        await outside.client.get("v1/ConfigMap", "from-tests", namespace="default")


async def test_an_explicit_kubeconfig_names_the_existing_cluster(tmp_path: Path) -> None:
    async with DevCluster() as outside:
        kubeconfig = outside.write_kubeconfig(tmp_path / "kubeconfig")
        env = TestEnv(crd_paths=[], use_existing_cluster=True, kubeconfig=str(kubeconfig))
        async with env:
            assert env.cluster is None
            namespaces = await env.client.list("v1/Namespace")
            assert "kube-system" in {n["metadata"]["name"] for n in namespaces}
            assert env.config is not None and env.config.server == outside.url


# -- run_manager ------------------------------------------------------------------------------


class MarkSeen(kubeforge.Reconciler):
    """Marks labelled ConfigMaps as seen."""

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            found = await self.client.get("v1/ConfigMap", request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        if (found.get("data") or {}).get("seen") != "yes":
            await self.client.patch(
                "v1/ConfigMap",
                request.name,
                {"data": {"seen": "yes"}},
                namespace=request.namespace,
            )
        return None


def register(manager: kubeforge.Manager) -> None:
    (
        manager.controller()
        .for_("v1/ConfigMap")
        .with_event_filter(kubeforge.predicate.LabelSelectorPredicate("test=run-manager"))
        .named("mark-seen")
        .complete(MarkSeen())
    )


async def register_later(manager: kubeforge.Manager) -> None:
    await asyncio.sleep(0)  # an async setup is awaited before the manager starts
    register(manager)


def labelled(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"test": "run-manager"}},
    }


@pytest.fixture
async def env() -> Any:
    async with TestEnv(crd_paths=[]) as started:
        yield started


@pytest.mark.parametrize("setup", [register, register_later], ids=["sync", "async"])
async def test_run_manager_runs_the_controllers_of_setup(env: TestEnv, setup: Any) -> None:
    async with env.run_manager(setup) as manager:
        assert manager.running.is_set()
        assert list(manager.controllers) == ["mark-seen"]
        await env.client.create(labelled("watched"), namespace="default")

        async def seen() -> bool:
            found = await env.client.get("v1/ConfigMap", "watched", namespace="default")
            return (found.get("data") or {}).get("seen") == "yes"

        await eventually(seen)
    assert not manager.running.is_set()
    with pytest.raises(RuntimeError):  # stopped: its client is closed too
        await manager.api_reader.get("v1/ConfigMap", "watched", namespace="default")


async def test_a_manager_that_cannot_start_fails_the_block(env: TestEnv) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        entered = False
        with pytest.raises(OSError):  # the metrics port is taken
            async with env.run_manager(register, metrics_bind_address=f"127.0.0.1:{port}"):
                entered = True
    assert not entered


async def test_a_failing_setup_fails_the_block(env: TestEnv) -> None:
    def broken(manager: kubeforge.Manager) -> None:
        raise ValueError("no controllers today")

    with pytest.raises(ValueError, match="no controllers today"):
        async with env.run_manager(broken):
            pytest.fail("the block must not run")


async def test_run_manager_needs_a_started_environment() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        async with TestEnv(crd_paths=[]).run_manager(register):
            pass


# -- Kubectl ----------------------------------------------------------------------------------


def test_find_kubectl_prefers_the_versioned_binary() -> None:
    base = find_kubectl()
    assert Path(base).name == "kubectl"
    assert Path(find_kubectl("1.31")).name == "kubectl.1.31"
    assert Path(find_kubectl("v1.31")).name == "kubectl.1.31"
    assert find_kubectl("9.99") == base  # not installed: the plain kubectl
    assert Path(find_kubectl("1.31", exact=True)).name == "kubectl.1.31"
    assert find_kubectl(exact=True) == base
    with pytest.raises(FileNotFoundError, match=r"kubectl\.9\.99 is not installed"):
        find_kubectl("9.99", exact=True)


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holding only an empty directory of our own."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    return directory


def test_find_kubectl_without_kubectl(bare_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="kubectl is not installed"):
        find_kubectl()
    versioned = bare_path / "kubectl.1.77"
    versioned.write_text("#!/bin/sh\n")
    versioned.chmod(versioned.stat().st_mode | stat.S_IXUSR)
    assert find_kubectl("1.77") == str(versioned)


def test_kubectl_result_rows_split_on_column_gaps() -> None:
    out = (
        "NAME     SCHEDULE               COMMAND                PHASE   AGE\n"
        "\n"
        "hello    2030-01-01T00:00:00Z   echo hello from cnat   DONE    5s\n"
    )
    result = KubectlResult(("get", "at"), 0, out, "")
    assert result.rows() == [
        ["NAME", "SCHEDULE", "COMMAND", "PHASE", "AGE"],
        ["hello", "2030-01-01T00:00:00Z", "echo hello from cnat", "DONE", "5s"],
    ]
    assert KubectlResult((), 0, "", "").rows() == []
    # An empty cell (a status not written yet) stays in its column.
    blank = "NAME    PHASE     AGE\nhello             1s\nbye     DONE      2s\n"
    assert KubectlResult((), 0, blank, "").rows() == [
        ["NAME", "PHASE", "AGE"],
        ["hello", "", "1s"],
        ["bye", "DONE", "2s"],
    ]
    # Multi-word headers stay one cell; a line that does not fit the header is still split.
    wide = "NAME   NOMINATED NODE   READY\np      <none>           1/1\nmisaligned-row 0/1\n"
    assert KubectlResult((), 0, wide, "").rows() == [
        ["NAME", "NOMINATED NODE", "READY"],
        ["p", "<none>", "1/1"],
        ["misaligned-row 0/1"],
    ]
    assert KubectlResult((), 0, '{"kind": "List", "items": []}', "").json()["kind"] == "List"


def test_kubectl_environment(tmp_path: Path) -> None:
    kubectl = Kubectl(
        tmp_path / "kubeconfig",
        cache_dir=tmp_path / "cache",
        env={"KUBECACHEDIR": str(tmp_path / "mine"), "EXTRA": "1"},
    )
    env = kubectl.environment()
    assert env["KUBECONFIG"] == str(tmp_path / "kubeconfig")
    assert env["KUBECACHEDIR"] == str(tmp_path / "mine")  # explicit env wins
    assert env["EXTRA"] == "1"
    assert env["PATH"] == os.environ["PATH"]
    inherited = Kubectl().environment()
    assert inherited.get("KUBECONFIG") == os.environ.get("KUBECONFIG")


@pytest.mark.kubectl
async def test_kubectl_against_a_test_environment(env: TestEnv, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    kubectl = Kubectl(env.write_kubeconfig(tmp_path / "kubeconfig"), cache_dir=cache)

    rows = (await kubectl.run("get", "namespaces")).rows()
    assert rows[0] == ["NAME", "STATUS", "AGE"]
    assert ["default", "Active"] in [row[:2] for row in rows[1:]]

    await kubectl.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v}\n")
    assert (await kubectl.json("get", "configmap", "cfg"))["data"] == {"k": "v"}
    assert cache.is_dir()  # discovery was cached in the private directory

    with pytest.raises(KubectlError, match='configmaps "missing" not found') as caught:
        await kubectl.run("get", "configmap", "missing")
    assert "kubectl get configmap missing exited with 1" in str(caught.value)
    unchecked = await kubectl.run("get", "configmap", "missing", check=False)
    assert unchecked.code == 1 and "NotFound" in unchecked.err

    with pytest.raises(KubectlError, match=r"no answer in 0\.5 s"):
        await kubectl.run("get", "configmaps", "--watch", timeout=0.5)

    versioned = Kubectl(kubectl.kubeconfig, version="1.31", cache_dir=cache)
    client = (await versioned.json("version", "--client"))["clientVersion"]
    assert client["minor"] == "31"


@pytest.mark.kubectl
async def test_kubectl_start_streams_a_watch(env: TestEnv, tmp_path: Path) -> None:
    kubectl = Kubectl(env.write_kubeconfig(tmp_path / "kubeconfig"), cache_dir=tmp_path / "c")
    proc = await kubectl.start("get", "configmaps", "--watch", "-o", "name")
    try:
        await env.client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"}},
            namespace="default",
        )
        assert proc.stdout is not None

        async def arrives() -> None:
            assert proc.stdout is not None
            while (await proc.stdout.readline()).strip() != b"configmap/watched":
                pass

        await asyncio.wait_for(arrives(), 30)
    finally:
        proc.kill()
        await proc.wait()


# -- eventually -------------------------------------------------------------------------------


async def test_eventually_returns_the_first_truthy_value() -> None:
    calls: list[int] = []

    def third_time() -> list[int] | None:
        calls.append(1)
        return calls if len(calls) == 3 else None

    assert await eventually(third_time, interval=0.001) == [1, 1, 1]

    async def ready() -> str:
        return "ready"

    assert await eventually(ready) == "ready"


async def test_eventually_reports_the_last_assertion_when_time_runs_out() -> None:
    attempts = 0

    def never() -> bool:
        nonlocal attempts
        attempts += 1
        assert attempts < 0, f"attempt {attempts} failed"
        return True

    with pytest.raises(AssertionError, match=r"never not met within 0.05 s: attempt \d+") as e:
        await eventually(never, timeout=0.05, interval=0.001)
    assert attempts > 1  # an AssertionError means "not yet"
    assert isinstance(e.value.__cause__, AssertionError)

    with pytest.raises(AssertionError, match=r"^the flag not met within 0.01 s$"):
        await eventually(lambda: False, timeout=0.01, interval=0.001, message="the flag")


async def test_eventually_lets_other_errors_through() -> None:
    calls = 0

    async def broken() -> bool:
        nonlocal calls
        calls += 1
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await eventually(broken)
    assert calls == 1
