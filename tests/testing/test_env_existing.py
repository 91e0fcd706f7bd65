"""TestEnv's namespace of the test, and on an existing cluster (KUBEFORGE_USE_EXISTING_CLUSTER)
what it leaves behind: nothing the test made, the CRDs and everything else as they were.

The existing cluster is a DevCluster of this process, reached through a kubeconfig file as
any other cluster would be."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubeforge
from kubeforge._client.errors import NotFound
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, TestEnv, eventually
from tests.testing.test_env import GROUP, crd, crd_name

GRAPE = f"{GROUP}/v1/Grape"
GIZMO = f"{GROUP}/v1/Gizmo"
FINALIZER = f"{GROUP}/hold"


def cluster_scoped(kind: str) -> dict[str, Any]:
    doc = crd(kind)
    doc["spec"]["scope"] = "Cluster"
    return doc


def write(directory: Path, *docs: dict[str, Any]) -> Path:
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (directory / f"{doc['metadata']['name']}.yaml").write_text(yaml.safe_dump(doc))
    return directory


def obj(kind: str, name: str) -> dict[str, Any]:
    group_version, _, kind_name = kind.rpartition("/")
    return {"apiVersion": group_version, "kind": kind_name, "metadata": {"name": name}}


@pytest.fixture
async def outside(tmp_path: Path) -> AsyncIterator[tuple[kubeforge.Client, Path]]:
    """A running cluster: an administrator's client, and a kubeconfig for it."""
    async with DevCluster() as cluster:
        assert cluster.client is not None
        yield cluster.client, cluster.write_kubeconfig(tmp_path / "outside" / "kubeconfig")


def existing(kubeconfig: Path, bases: Path, namespace: str | None) -> TestEnv:
    return TestEnv(
        crd_paths=[bases],
        use_existing_cluster=True,
        kubeconfig=str(kubeconfig),
        namespace=namespace,
    )


async def absent(client: kubeforge.Client, kind: str, name: str, namespace: str | None) -> bool:
    try:
        await client.get(kind, name, namespace=namespace)
    except NotFound:
        return True
    return False


# -- the test's namespace ---------------------------------------------------------------------


async def test_the_namespace_given_is_created_and_everything_defaults_to_it(
    tmp_path: Path,
) -> None:
    async with TestEnv(crd_paths=[], namespace="t-one") as env:
        assert env.namespace == "t-one"
        await env.client.get("v1/Namespace", "t-one")
        made = await env.client.create(obj("v1/ConfigMap", "from-client"))
        assert made["metadata"]["namespace"] == "t-one"
        kubectl = Kubectl(env.kubeconfig_variable(tmp_path / "kubeconfig"), cache_dir=tmp_path)
        await kubectl.run("create", "configmap", "from-kubectl")
        await env.client.get("v1/ConfigMap", "from-kubectl", namespace="t-one")
        async with env.run_manager() as manager:
            assert manager.client.namespace == "t-one"
    # Without one, the kubeconfig's (a started cluster's: default), as before.
    async with TestEnv(crd_paths=[]) as plain:
        assert plain.namespace == "default"


# -- on an existing cluster ------------------------------------------------------------------


async def test_what_the_test_made_is_removed_and_nothing_else(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    client, kubeconfig = outside
    bases = write(tmp_path / "bases", crd("Grape"), cluster_scoped("Gizmo"))
    async with existing(kubeconfig, bases, None):
        pass  # an earlier run installed the CRDs
    # Made before the environment starts (not by the test): left alone.
    await client.create(obj(GIZMO, "before"))
    async with existing(kubeconfig, bases, "t-made") as env:
        assert env.cluster is None
        # Faults are injected into a cluster the environment started; managers use the
        # kubeconfig's own user here.
        with pytest.raises(RuntimeError, match="a cluster the environment started"):
            env.faults  # noqa: B018
        assert env.manager_user is None
        await env.client.create(obj(GRAPE, "grape"))
        await env.client.create(obj(GIZMO, "made"))
        await env.client.create(obj("v1/ConfigMap", "elsewhere"), namespace="default")
        # kubectl goes through the outside kubeconfig's credentials, into the namespace.
        kubectl = Kubectl(env.kubeconfig_variable(tmp_path / "layer"), cache_dir=tmp_path / "c")
        await kubectl.run("create", "configmap", "from-kubectl")
        await env.client.get("v1/ConfigMap", "from-kubectl", namespace="t-made")
        me = await kubectl.json("auth", "whoami")
        assert me["status"]["userInfo"]["username"] == "kubeforge-admin"
    # The namespace goes with its content (the cluster's namespace controller does it) ...
    await eventually(lambda: absent(client, "v1/Namespace", "t-made", None), timeout=30)
    # ... the project's cluster-scoped objects made by the test are deleted, earlier ones stay.
    assert await absent(client, GIZMO, "made", None)
    await client.get(GIZMO, "before")
    # What the test made elsewhere is its own to remove; the CRDs stay installed.
    await client.get("v1/ConfigMap", "elsewhere", namespace="default")
    for kind in ("Grape", "Gizmo"):
        await client.get("apiextensions.k8s.io/v1/CustomResourceDefinition", crd_name(kind))


async def test_a_namespace_that_existed_is_used_and_left(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    client, kubeconfig = outside
    async with existing(kubeconfig, write(tmp_path / "bases", crd("Grape")), "default") as env:
        await env.client.create(obj(GRAPE, "kept"))
    await client.get("v1/Namespace", "default")
    await client.get(GRAPE, "kept", namespace="default")


class Holding(kubeforge.Reconciler):
    """Puts a finalizer on every Grape and takes it off when the Grape is deleted."""

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            grape = await self.client.get(GRAPE, request.name, namespace=request.namespace)
        except NotFound:
            return None
        finalizers = grape["metadata"].get("finalizers") or []
        deleting = grape["metadata"].get("deletionTimestamp") is not None
        wanted = [] if deleting else [FINALIZER]
        if finalizers != wanted:
            patch = {"metadata": {"finalizers": wanted or None}}
            await self.client.patch(GRAPE, request.name, patch, namespace=request.namespace)
        return None


def holding(manager: kubeforge.Manager) -> None:
    manager.controller().for_(GRAPE).named("holding").complete(Holding())


async def test_clean_up_waits_while_a_manager_removes_its_finalizers(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    client, kubeconfig = outside
    bases = write(tmp_path / "bases", crd("Grape"))
    async with existing(kubeconfig, bases, "t-held") as env:
        async with env.run_manager(holding):
            await env.client.create(obj(GRAPE, "held"))

            async def finalized() -> bool:
                grape = await env.client.get(GRAPE, "held")
                return grape["metadata"].get("finalizers") == [FINALIZER]

            await eventually(finalized)
            await env.clean_up()
            # Gone before the manager stops: its controller took its finalizer off.
            assert await absent(client, GRAPE, "held", "t-held")
        await env.clean_up()  # once only
    await eventually(lambda: absent(client, "v1/Namespace", "t-held", None), timeout=30)


async def test_finalizers_no_controller_takes_off_are_taken_off(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    # The managers the test ran have stopped: nobody else would finalize its objects, and
    # its namespace would stay Terminating for good.
    client, kubeconfig = outside
    bases = write(tmp_path / "bases", crd("Grape"), cluster_scoped("Gizmo"))
    async with existing(kubeconfig, bases, "t-stuck") as env:
        for kind in (GRAPE, GIZMO):
            await env.client.create(held(obj(kind, "stuck")))
    assert await absent(client, GRAPE, "stuck", "t-stuck")
    assert await absent(client, GIZMO, "stuck", None)
    await eventually(lambda: absent(client, "v1/Namespace", "t-stuck", None), timeout=30)


def held(body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"]["finalizers"] = [FINALIZER]
    return body


async def test_what_a_running_controller_leaves_held_is_named_then_released(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    client, kubeconfig = outside
    bases = write(tmp_path / "bases", crd("Grape"))
    # A manager runs, but none of its controllers takes this finalizer off.
    async with existing(kubeconfig, bases, "t-named") as env, env.run_manager():
        await env.client.create(held(obj(GRAPE, "forgotten")))
        with pytest.warns(UserWarning, match=f"finalizers removed now: {GRAPE} forgotten"):
            await env.clean_up(timeout=0.5)
        assert await absent(client, GRAPE, "forgotten", "t-named")


async def test_a_crd_left_pointing_at_a_local_conversion_webhook_installs_again(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    # A run that did not end cleanly (or `kubeforge run` against the same cluster) leaves
    # the CRD's conversion webhook at a URL of this machine; the project's CRD names a
    # Service. Merged by an apply, the two make a CRD the server refuses (422).
    client, kubeconfig = outside
    own = crd("Grape")
    own["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "webhook-service",
                    "namespace": "system",
                    "path": "/convert",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    stale = copy.deepcopy(own)
    stale["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": "https://127.0.0.1:1/convert"}
    await client.apply(stale, field_manager="kubeforge", force=True)
    bases = write(tmp_path / "bases", own)
    async with existing(kubeconfig, bases, None) as env:
        assert env.installed == [crd_name("Grape")]
    installed = await client.get(
        "apiextensions.k8s.io/v1/CustomResourceDefinition", crd_name("Grape")
    )
    assert installed["spec"]["conversion"] == own["spec"]["conversion"]


async def test_the_projects_objects_go_where_no_namespace_controller_runs(
    tmp_path: Path, recwarn: pytest.WarningsRecorder
) -> None:
    # An API server whose namespaces are never emptied (envtest's, say): the environment
    # deletes the project's objects itself rather than wait for the namespace controller.
    options = ClusterOptions(controllers=("*", "-namespace"))
    async with DevCluster(options) as cluster:
        assert cluster.client is not None
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        bases = write(tmp_path / "bases", crd("Grape"))
        async with existing(kubeconfig, bases, "t-alone") as env:
            await env.client.create(obj(GRAPE, "plain"))
            await env.client.create(held(obj(GRAPE, "held")))
            await env.clean_up(timeout=10)
            for name in ("plain", "held"):
                assert await absent(cluster.client, GRAPE, name, "t-alone")
        assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
        namespace = await cluster.client.get("v1/Namespace", "t-alone")
        assert namespace["status"]["phase"] == "Terminating"


async def test_an_environment_that_fails_to_start_removes_only_its_namespace(
    outside: tuple[kubeforge.Client, Path], tmp_path: Path
) -> None:
    client, kubeconfig = outside
    gizmos = cluster_scoped("Gizmo")
    async with existing(kubeconfig, write(tmp_path / "first", gizmos), None):
        pass
    await client.create(obj(GIZMO, "before"))
    broken = crd("Broken")
    broken["spec"]["versions"][0]["storage"] = False  # no storage version: refused
    env = existing(kubeconfig, write(tmp_path / "bases", gizmos, broken), "t-failed")
    with pytest.raises(kubeforge.ApiError):
        await env.start()
    # Nothing was known to be the test's but its namespace.
    await client.get(GIZMO, "before")
    await eventually(lambda: absent(client, "v1/Namespace", "t-failed", None), timeout=30)
