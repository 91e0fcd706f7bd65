"""Owner-reference garbage collection: background, foreground and orphan cascades."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeforge.apiserver import APIServer
from kubeforge.apiserver.persistence import SQLiteBackend
from kubeforge.apiserver.server import ServerConfig
from kubeforge.testing import Kubectl, eventually
from tests.integration.crd_fixtures import CRDS, WIDGETS, widget, widget_crd
from tests.support import Client, connect

CMS = "/api/v1/namespaces/default/configmaps"
JSONP = "application/json-patch+json"
HOLD = "example.com/hold"


def ref(owner: dict[str, Any], block: bool | None = None) -> dict[str, Any]:
    meta = owner["metadata"]
    out = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


async def configmap(
    client: Client,
    name: str,
    *owners: dict[str, Any],
    finalizers: tuple[str, ...] = (),
    path: str = CMS,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    reply = await client.post(path, {"metadata": meta, "data": {"k": "v"}})
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.json()
    return created


async def exists(client: Client, path: str) -> bool:
    return (await client.get(path)).status == 200


async def wait_gone(client: Client, *paths: str) -> None:
    async def gone() -> bool:
        for path in paths:
            if await exists(client, path):
                return False
        return True

    await eventually(gone)


async def get(client: Client, path: str) -> dict[str, Any]:
    reply = await client.get(path)
    assert reply.status == 200, reply.body
    obj: dict[str, Any] = reply.json()
    return obj


async def release(client: Client, path: str) -> None:
    reply = await client.patch(path, [{"op": "remove", "path": "/metadata/finalizers"}], JSONP)
    assert reply.status == 200, reply.body


# background ---------------------------------------------------------------------------------


async def test_background_deletion_collects_dependents_transitively(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    child = await configmap(gc, "child", ref(owner))
    await configmap(gc, "grandchild", ref(child))
    unrelated = await configmap(gc, "unrelated")
    reply = await gc.delete(f"{CMS}/owner", {"propagationPolicy": "Background"})
    assert reply.status == 200
    assert reply.json()["kind"] == "Status"  # the owner itself went at once
    await wait_gone(gc, f"{CMS}/child", f"{CMS}/grandchild")
    assert (await get(gc, f"{CMS}/unrelated"))["metadata"]["uid"] == unrelated["metadata"]["uid"]


async def test_default_propagation_is_background(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    await configmap(gc, "child", ref(owner))
    assert (await gc.delete(f"{CMS}/owner")).status == 200
    await wait_gone(gc, f"{CMS}/child")


async def test_a_dependent_with_another_live_owner_only_loses_the_reference(gc: Client) -> None:
    first = await configmap(gc, "first")
    second = await configmap(gc, "second")
    await configmap(gc, "shared", ref(first), ref(second))
    await gc.delete(f"{CMS}/first")

    async def one_owner_left() -> bool:
        refs = (await get(gc, f"{CMS}/shared"))["metadata"].get("ownerReferences")
        return bool(refs == [ref(second)])

    await eventually(one_owner_left)
    await gc.delete(f"{CMS}/second")
    await wait_gone(gc, f"{CMS}/shared")


async def test_references_to_a_missing_or_mismatched_uid_are_collected(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    wrong_uid = dict(ref(owner), uid="00000000-0000-4000-8000-000000000000")
    await configmap(gc, "by-name-only", wrong_uid)
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "1234-absent"}
    await configmap(gc, "orphaned-at-birth", missing)
    wrong_kind = dict(ref(owner), kind="Secret")
    await configmap(gc, "wrong-kind", wrong_kind)
    await configmap(gc, "kept", ref(owner))
    await wait_gone(gc, f"{CMS}/by-name-only", f"{CMS}/orphaned-at-birth", f"{CMS}/wrong-kind")
    # A matching uid keeps its dependent, and the owner was never touched.
    assert await exists(gc, f"{CMS}/kept")
    assert await exists(gc, f"{CMS}/owner")


async def test_a_recreated_owner_with_the_same_name_does_not_save_dependents(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    # Hold the dependent so its deletion can be observed before it disappears.
    await configmap(gc, "child", ref(owner), finalizers=(HOLD,))
    await gc.delete(f"{CMS}/owner")
    await configmap(gc, "owner")

    async def deleting() -> bool:
        meta = (await get(gc, f"{CMS}/child"))["metadata"]
        return bool(meta.get("deletionTimestamp"))

    await eventually(deleting)
    await release(gc, f"{CMS}/child")
    await wait_gone(gc, f"{CMS}/child")


async def test_graceful_pod_deletion_is_honoured(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    pod = {
        "metadata": {"name": "runner", "ownerReferences": [ref(owner)]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    pods = "/api/v1/namespaces/default/pods"
    assert (await gc.post(pods, pod)).status == 201
    await gc.delete(f"{CMS}/owner")

    async def terminating() -> bool:
        meta = (await get(gc, f"{pods}/runner"))["metadata"]
        return bool(meta.get("deletionTimestamp"))

    await eventually(terminating)
    meta = (await get(gc, f"{pods}/runner"))["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    # The kubelet's final word removes it.
    assert (await gc.delete(f"{pods}/runner", {"gracePeriodSeconds": 0})).status == 200
    await wait_gone(gc, f"{pods}/runner")


# scope ----------------------------------------------------------------------------------


async def test_owners_must_be_in_reach_of_the_dependent(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    clusterroles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    # A cluster-scoped dependent cannot have a namespaced owner.
    role = {"metadata": {"name": "by-namespaced-owner", "ownerReferences": [ref(owner)]}}
    assert (await gc.post(clusterroles, role)).status == 201
    # Nor can a namespaced dependent have an owner in another namespace.
    assert (await gc.post("/api/v1/namespaces", {"metadata": {"name": "other"}})).status == 201
    other_cms = "/api/v1/namespaces/other/configmaps"
    await configmap(gc, "elsewhere", ref(owner), path=other_cms)
    # A namespaced dependent may have a cluster-scoped owner.
    cluster_owner = (await gc.post(clusterroles, {"metadata": {"name": "owner"}})).json()
    await configmap(gc, "by-cluster-owner", ref(cluster_owner))
    await wait_gone(gc, f"{clusterroles}/by-namespaced-owner", f"{other_cms}/elsewhere")
    assert await exists(gc, f"{CMS}/by-cluster-owner")

    async def warned() -> bool:
        events = (await get(gc, "/api/v1/namespaces/other/events"))["items"]
        return any(e["reason"] == "OwnerRefInvalidNamespace" for e in events)

    await eventually(warned)
    await gc.delete(f"{clusterroles}/owner")
    await wait_gone(gc, f"{CMS}/by-cluster-owner")


async def test_custom_resource_owner(gc: Client) -> None:
    assert (await gc.post(CRDS, widget_crd())).status == 201
    reply = await gc.post(WIDGETS, widget("w"))
    assert reply.status == 201, reply.body
    owner = reply.json()
    await configmap(gc, "config-of-w", ref(owner, block=True))
    # Custom resources can be dependents too.
    child = widget("child-of-w")
    child["metadata"]["ownerReferences"] = [ref(owner)]
    assert (await gc.post(WIDGETS, child)).status == 201
    assert (await gc.delete(f"{WIDGETS}/w", {"propagationPolicy": "Foreground"})).status == 200
    await wait_gone(gc, f"{WIDGETS}/w", f"{WIDGETS}/child-of-w", f"{CMS}/config-of-w")


# foreground -----------------------------------------------------------------------------


async def test_foreground_deletion_waits_for_blocking_dependents(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    await configmap(gc, "blocking", ref(owner, block=True), finalizers=(HOLD,))
    await configmap(gc, "non-blocking", ref(owner), finalizers=(HOLD,))
    reply = await gc.delete(f"{CMS}/owner", {"propagationPolicy": "Foreground"})
    assert reply.status == 200
    meta = reply.json()["metadata"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    assert meta["deletionTimestamp"]

    async def both_deleting() -> bool:
        for name in ("blocking", "non-blocking"):
            if not (await get(gc, f"{CMS}/{name}"))["metadata"].get("deletionTimestamp"):
                return False
        return True

    await eventually(both_deleting)
    # Only the blocking dependent holds the owner.
    await release(gc, f"{CMS}/non-blocking")
    await wait_gone(gc, f"{CMS}/non-blocking")
    held = await get(gc, f"{CMS}/owner")
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    await release(gc, f"{CMS}/blocking")
    await wait_gone(gc, f"{CMS}/blocking", f"{CMS}/owner")


async def test_non_blocking_dependents_do_not_hold_the_owner(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    await configmap(gc, "slow", ref(owner, block=False), finalizers=(HOLD,))
    await gc.delete(f"{CMS}/owner?propagationPolicy=Foreground")
    await wait_gone(gc, f"{CMS}/owner")
    # The dependent was deleted too, and waits only for its own finalizer.
    assert (await get(gc, f"{CMS}/slow"))["metadata"].get("deletionTimestamp")
    await release(gc, f"{CMS}/slow")
    await wait_gone(gc, f"{CMS}/slow")


async def test_foreground_deletion_propagates_down_the_tree(gc: Client) -> None:
    root = await configmap(gc, "root")
    middle = await configmap(gc, "middle", ref(root, block=True))
    await configmap(gc, "leaf", ref(middle, block=True), finalizers=(HOLD,))
    await gc.delete(f"{CMS}/root", {"propagationPolicy": "Foreground"})

    async def middle_waits() -> bool:
        meta = (await get(gc, f"{CMS}/middle"))["metadata"]
        return "foregroundDeletion" in (meta.get("finalizers") or [])

    await eventually(middle_waits)
    assert await exists(gc, f"{CMS}/root")
    await release(gc, f"{CMS}/leaf")
    await wait_gone(gc, f"{CMS}/leaf", f"{CMS}/middle", f"{CMS}/root")


async def test_a_dependent_of_a_waiting_owner_with_another_owner_is_released(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    other = await configmap(gc, "other")
    await configmap(gc, "shared", ref(owner, block=True), ref(other))
    await gc.delete(f"{CMS}/owner", {"propagationPolicy": "Foreground"})
    await wait_gone(gc, f"{CMS}/owner")
    shared = await get(gc, f"{CMS}/shared")
    assert shared["metadata"]["ownerReferences"] == [ref(other)]


async def test_a_cycle_of_blocking_references_does_not_deadlock(gc: Client) -> None:
    first = await configmap(gc, "first")
    second = await configmap(gc, "second", ref(first, block=True))
    patch = {"metadata": {"ownerReferences": [ref(second, block=True)]}}
    assert (await gc.patch(f"{CMS}/first", patch, "application/merge-patch+json")).status == 200
    await gc.delete(f"{CMS}/first", {"propagationPolicy": "Foreground"})
    await wait_gone(gc, f"{CMS}/first", f"{CMS}/second")


# orphan ---------------------------------------------------------------------------------


async def test_orphan_deletion_keeps_dependents_and_drops_the_reference(gc: Client) -> None:
    owner = await configmap(gc, "owner")
    other = await configmap(gc, "other")
    await configmap(gc, "only-owner", ref(owner))
    await configmap(gc, "two-owners", ref(owner), ref(other))
    reply = await gc.delete(f"{CMS}/owner", {"propagationPolicy": "Orphan"})
    assert reply.json()["metadata"]["finalizers"] == ["orphan"]
    await wait_gone(gc, f"{CMS}/owner")
    assert "ownerReferences" not in (await get(gc, f"{CMS}/only-owner"))["metadata"]
    two = await get(gc, f"{CMS}/two-owners")
    assert two["metadata"]["ownerReferences"] == [ref(other)]


async def test_orphan_finalizer_set_in_advance_is_honoured(gc: Client) -> None:
    owner = await configmap(gc, "owner", finalizers=("orphan",))
    await configmap(gc, "child", ref(owner))
    await gc.delete(f"{CMS}/owner")
    await wait_gone(gc, f"{CMS}/owner")
    assert "ownerReferences" not in (await get(gc, f"{CMS}/child"))["metadata"]


# kubectl ----------------------------------------------------------------------------------


async def test_kubectl_cascade_foreground_and_orphan(gc: Client, gc_kubectl: Kubectl) -> None:
    owner = await configmap(gc, "fg-owner")
    await configmap(gc, "fg-child", ref(owner, block=True))
    # kubectl waits for the owner to be gone; foreground means the child went first.
    await gc_kubectl.run("delete", "configmap", "fg-owner", "--cascade=foreground")
    assert not await exists(gc, f"{CMS}/fg-owner")
    assert not await exists(gc, f"{CMS}/fg-child")

    owner = await configmap(gc, "or-owner")
    await configmap(gc, "or-child", ref(owner))
    await gc_kubectl.run("delete", "configmap", "or-owner", "--cascade=orphan")
    assert not await exists(gc, f"{CMS}/or-owner")
    assert "ownerReferences" not in (await get(gc, f"{CMS}/or-child"))["metadata"]

    owner = await configmap(gc, "bg-owner")
    await configmap(gc, "bg-child", ref(owner))
    await gc_kubectl.run("delete", "configmap", "bg-owner")
    await wait_gone(gc, f"{CMS}/bg-child")


# without the collector ------------------------------------------------------------------


async def test_a_bare_server_collects_nothing(server: APIServer, client: Client) -> None:
    assert server.gc is None and server.namespaces is None
    owner = await configmap(client, "owner")
    await configmap(client, "child", ref(owner))
    await client.delete(f"{CMS}/owner")
    held = await configmap(client, "held")
    reply = await client.delete(f"{CMS}/held", {"propagationPolicy": "Foreground"})
    assert reply.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    # Nothing acts on either: the dependent stays, the foreground owner waits forever.
    assert await exists(client, f"{CMS}/child")
    kept = await get(client, f"{CMS}/held")
    assert kept["metadata"]["uid"] == held["metadata"]["uid"]
    assert kept["metadata"]["finalizers"] == ["foregroundDeletion"]


async def test_collection_catches_up_with_what_was_stored_before(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # A server without the collector leaves a dangling dependent and a waiting owner...
    backend = SQLiteBackend(data)
    async with APIServer(ServerConfig(backend=backend)) as first, connect(first) as client:
        owner = await configmap(client, "owner")
        await configmap(client, "child", ref(owner))
        await client.delete(f"{CMS}/owner")
        waiting = await configmap(client, "waiting")
        await configmap(client, "blocker", ref(waiting, block=True), finalizers=(HOLD,))
        await client.delete(f"{CMS}/waiting", {"propagationPolicy": "Foreground"})
    backend.close()
    # ...which one with the collector, on the same storage, finishes.
    backend = SQLiteBackend(data)
    config = ServerConfig(backend=backend, garbage_collection=True)
    async with APIServer(config) as second, connect(second) as client:
        await wait_gone(client, f"{CMS}/child")

        async def blocker_deleting() -> bool:
            meta = (await get(client, f"{CMS}/blocker"))["metadata"]
            return bool(meta.get("deletionTimestamp"))

        await eventually(blocker_deleting)
        assert await exists(client, f"{CMS}/waiting")
        await release(client, f"{CMS}/blocker")
        await wait_gone(client, f"{CMS}/blocker", f"{CMS}/waiting")
    backend.close()
