"""Owner-reference garbage collection: background, foreground and orphan cascades."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.storage.persistence import SQLiteBackend
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient, connect
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

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
    http: HTTPClient,
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
    reply = await http.post(path, {"metadata": meta, "data": {"k": "v"}})
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.json()
    return created


async def exists(http: HTTPClient, path: str) -> bool:
    return (await http.get(path)).status == 200


async def wait_gone(http: HTTPClient, *paths: str) -> None:
    async def gone() -> bool:
        for path in paths:
            if await exists(http, path):
                return False
        return True

    await eventually(gone)


async def get(http: HTTPClient, path: str) -> dict[str, Any]:
    reply = await http.get(path)
    assert reply.status == 200, reply.body
    obj: dict[str, Any] = reply.json()
    return obj


async def release(http: HTTPClient, path: str) -> None:
    reply = await http.patch(path, [{"op": "remove", "path": "/metadata/finalizers"}], JSONP)
    assert reply.status == 200, reply.body


# background ---------------------------------------------------------------------------------


async def test_background_deletion_collects_dependents_transitively(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    child = await configmap(gc_http, "child", ref(owner))
    await configmap(gc_http, "grandchild", ref(child))
    unrelated = await configmap(gc_http, "unrelated")
    reply = await gc_http.delete(f"{CMS}/owner", {"propagationPolicy": "Background"})
    assert reply.status == 200
    assert reply.json()["kind"] == "Status"  # the owner itself went at once
    await wait_gone(gc_http, f"{CMS}/child", f"{CMS}/grandchild")
    assert (await get(gc_http, f"{CMS}/unrelated"))["metadata"]["uid"] == unrelated["metadata"][
        "uid"
    ]


async def test_default_propagation_is_background(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    await configmap(gc_http, "child", ref(owner))
    assert (await gc_http.delete(f"{CMS}/owner")).status == 200
    await wait_gone(gc_http, f"{CMS}/child")


async def test_a_dependent_with_another_live_owner_only_loses_the_reference(
    gc_http: HTTPClient,
) -> None:
    first = await configmap(gc_http, "first")
    second = await configmap(gc_http, "second")
    await configmap(gc_http, "shared", ref(first), ref(second))
    await gc_http.delete(f"{CMS}/first")

    async def one_owner_left() -> bool:
        refs = (await get(gc_http, f"{CMS}/shared"))["metadata"].get("ownerReferences")
        return bool(refs == [ref(second)])

    await eventually(one_owner_left)
    await gc_http.delete(f"{CMS}/second")
    await wait_gone(gc_http, f"{CMS}/shared")


async def test_references_to_a_missing_or_mismatched_uid_are_collected(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    wrong_uid = dict(ref(owner), uid="00000000-0000-4000-8000-000000000000")
    await configmap(gc_http, "by-name-only", wrong_uid)
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "1234-absent"}
    await configmap(gc_http, "orphaned-at-birth", missing)
    wrong_kind = dict(ref(owner), kind="Secret")
    await configmap(gc_http, "wrong-kind", wrong_kind)
    await configmap(gc_http, "kept", ref(owner))
    await wait_gone(gc_http, f"{CMS}/by-name-only", f"{CMS}/orphaned-at-birth", f"{CMS}/wrong-kind")
    # A matching uid keeps its dependent, and the owner was never touched.
    assert await exists(gc_http, f"{CMS}/kept")
    assert await exists(gc_http, f"{CMS}/owner")


async def test_a_recreated_owner_with_the_same_name_does_not_save_dependents(
    gc_http: HTTPClient,
) -> None:
    owner = await configmap(gc_http, "owner")
    # Hold the dependent so its deletion can be observed before it disappears.
    await configmap(gc_http, "child", ref(owner), finalizers=(HOLD,))
    await gc_http.delete(f"{CMS}/owner")
    await configmap(gc_http, "owner")

    async def deleting() -> bool:
        meta = (await get(gc_http, f"{CMS}/child"))["metadata"]
        return bool(meta.get("deletionTimestamp"))

    await eventually(deleting)
    await release(gc_http, f"{CMS}/child")
    await wait_gone(gc_http, f"{CMS}/child")


async def test_graceful_pod_deletion_is_honoured(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    pod = {
        "metadata": {"name": "runner", "ownerReferences": [ref(owner)]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    pods = "/api/v1/namespaces/default/pods"
    assert (await gc_http.post(pods, pod)).status == 201
    await gc_http.delete(f"{CMS}/owner")

    async def terminating() -> bool:
        meta = (await get(gc_http, f"{pods}/runner"))["metadata"]
        return bool(meta.get("deletionTimestamp"))

    await eventually(terminating)
    meta = (await get(gc_http, f"{pods}/runner"))["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    # The kubelet's final word removes it.
    assert (await gc_http.delete(f"{pods}/runner", {"gracePeriodSeconds": 0})).status == 200
    await wait_gone(gc_http, f"{pods}/runner")


# scope ----------------------------------------------------------------------------------


async def test_owners_must_be_in_reach_of_the_dependent(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    clusterroles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    # A cluster-scoped dependent cannot have a namespaced owner.
    role = {"metadata": {"name": "by-namespaced-owner", "ownerReferences": [ref(owner)]}}
    assert (await gc_http.post(clusterroles, role)).status == 201
    # Nor can a namespaced dependent have an owner in another namespace.
    assert (await gc_http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})).status == 201
    other_cms = "/api/v1/namespaces/other/configmaps"
    await configmap(gc_http, "elsewhere", ref(owner), path=other_cms)
    # A namespaced dependent may have a cluster-scoped owner.
    cluster_owner = (await gc_http.post(clusterroles, {"metadata": {"name": "owner"}})).json()
    await configmap(gc_http, "by-cluster-owner", ref(cluster_owner))
    await wait_gone(gc_http, f"{clusterroles}/by-namespaced-owner", f"{other_cms}/elsewhere")
    assert await exists(gc_http, f"{CMS}/by-cluster-owner")

    async def warned() -> bool:
        events = (await get(gc_http, "/api/v1/namespaces/other/events"))["items"]
        return any(e["reason"] == "OwnerRefInvalidNamespace" for e in events)

    await eventually(warned)
    await gc_http.delete(f"{clusterroles}/owner")
    await wait_gone(gc_http, f"{CMS}/by-cluster-owner")


async def test_custom_resource_owner(gc_http: HTTPClient) -> None:
    assert (await gc_http.post(CRDS, widget_crd())).status == 201
    reply = await gc_http.post(WIDGETS, widget("w"))
    assert reply.status == 201, reply.body
    owner = reply.json()
    await configmap(gc_http, "config-of-w", ref(owner, block=True))
    # Custom resources can be dependents too.
    child = widget("child-of-w")
    child["metadata"]["ownerReferences"] = [ref(owner)]
    assert (await gc_http.post(WIDGETS, child)).status == 201
    assert (await gc_http.delete(f"{WIDGETS}/w", {"propagationPolicy": "Foreground"})).status == 200
    await wait_gone(gc_http, f"{WIDGETS}/w", f"{WIDGETS}/child-of-w", f"{CMS}/config-of-w")


# foreground -----------------------------------------------------------------------------


async def test_foreground_deletion_waits_for_blocking_dependents(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    await configmap(gc_http, "blocking", ref(owner, block=True), finalizers=(HOLD,))
    await configmap(gc_http, "non-blocking", ref(owner), finalizers=(HOLD,))
    reply = await gc_http.delete(f"{CMS}/owner", {"propagationPolicy": "Foreground"})
    assert reply.status == 200
    meta = reply.json()["metadata"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    assert meta["deletionTimestamp"]

    async def both_deleting() -> bool:
        for name in ("blocking", "non-blocking"):
            if not (await get(gc_http, f"{CMS}/{name}"))["metadata"].get("deletionTimestamp"):
                return False
        return True

    await eventually(both_deleting)
    # Only the blocking dependent holds the owner.
    await release(gc_http, f"{CMS}/non-blocking")
    await wait_gone(gc_http, f"{CMS}/non-blocking")
    held = await get(gc_http, f"{CMS}/owner")
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    await release(gc_http, f"{CMS}/blocking")
    await wait_gone(gc_http, f"{CMS}/blocking", f"{CMS}/owner")


async def test_non_blocking_dependents_do_not_hold_the_owner(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner")
    await configmap(gc_http, "slow", ref(owner, block=False), finalizers=(HOLD,))
    await gc_http.delete(f"{CMS}/owner?propagationPolicy=Foreground")
    await wait_gone(gc_http, f"{CMS}/owner")
    # The dependent was deleted too, and waits only for its own finalizer.
    assert (await get(gc_http, f"{CMS}/slow"))["metadata"].get("deletionTimestamp")
    await release(gc_http, f"{CMS}/slow")
    await wait_gone(gc_http, f"{CMS}/slow")


async def test_foreground_deletion_propagates_down_the_tree(gc_http: HTTPClient) -> None:
    root = await configmap(gc_http, "root")
    middle = await configmap(gc_http, "middle", ref(root, block=True))
    await configmap(gc_http, "leaf", ref(middle, block=True), finalizers=(HOLD,))
    await gc_http.delete(f"{CMS}/root", {"propagationPolicy": "Foreground"})

    async def middle_waits() -> bool:
        meta = (await get(gc_http, f"{CMS}/middle"))["metadata"]
        return "foregroundDeletion" in (meta.get("finalizers") or [])

    await eventually(middle_waits)
    assert await exists(gc_http, f"{CMS}/root")
    await release(gc_http, f"{CMS}/leaf")
    await wait_gone(gc_http, f"{CMS}/leaf", f"{CMS}/middle", f"{CMS}/root")


async def test_a_dependent_of_a_waiting_owner_with_another_owner_is_released(
    gc_http: HTTPClient,
) -> None:
    owner = await configmap(gc_http, "owner")
    other = await configmap(gc_http, "other")
    await configmap(gc_http, "shared", ref(owner, block=True), ref(other))
    await gc_http.delete(f"{CMS}/owner", {"propagationPolicy": "Foreground"})
    await wait_gone(gc_http, f"{CMS}/owner")
    shared = await get(gc_http, f"{CMS}/shared")
    assert shared["metadata"]["ownerReferences"] == [ref(other)]


async def test_a_cycle_of_blocking_references_does_not_deadlock(gc_http: HTTPClient) -> None:
    first = await configmap(gc_http, "first")
    second = await configmap(gc_http, "second", ref(first, block=True))
    patch = {"metadata": {"ownerReferences": [ref(second, block=True)]}}
    assert (
        await gc_http.patch(f"{CMS}/first", patch, "application/merge-patch+json")
    ).status == 200
    await gc_http.delete(f"{CMS}/first", {"propagationPolicy": "Foreground"})
    await wait_gone(gc_http, f"{CMS}/first", f"{CMS}/second")


# orphan ---------------------------------------------------------------------------------


async def test_orphan_deletion_keeps_dependents_and_drops_the_reference(
    gc_http: HTTPClient,
) -> None:
    owner = await configmap(gc_http, "owner")
    other = await configmap(gc_http, "other")
    await configmap(gc_http, "only-owner", ref(owner))
    await configmap(gc_http, "two-owners", ref(owner), ref(other))
    reply = await gc_http.delete(f"{CMS}/owner", {"propagationPolicy": "Orphan"})
    assert reply.json()["metadata"]["finalizers"] == ["orphan"]
    await wait_gone(gc_http, f"{CMS}/owner")
    assert "ownerReferences" not in (await get(gc_http, f"{CMS}/only-owner"))["metadata"]
    two = await get(gc_http, f"{CMS}/two-owners")
    assert two["metadata"]["ownerReferences"] == [ref(other)]


async def test_orphan_finalizer_set_in_advance_is_honoured(gc_http: HTTPClient) -> None:
    owner = await configmap(gc_http, "owner", finalizers=("orphan",))
    await configmap(gc_http, "child", ref(owner))
    await gc_http.delete(f"{CMS}/owner")
    await wait_gone(gc_http, f"{CMS}/owner")
    assert "ownerReferences" not in (await get(gc_http, f"{CMS}/child"))["metadata"]


# kubectl ----------------------------------------------------------------------------------


async def test_kubectl_cascade_foreground_and_orphan(
    gc_http: HTTPClient, gc_kubectl: Kubectl
) -> None:
    owner = await configmap(gc_http, "fg-owner")
    await configmap(gc_http, "fg-child", ref(owner, block=True))
    # kubectl waits for the owner to be gone; foreground means the child went first.
    await gc_kubectl.run("delete", "configmap", "fg-owner", "--cascade=foreground")
    assert not await exists(gc_http, f"{CMS}/fg-owner")
    assert not await exists(gc_http, f"{CMS}/fg-child")

    owner = await configmap(gc_http, "or-owner")
    await configmap(gc_http, "or-child", ref(owner))
    await gc_kubectl.run("delete", "configmap", "or-owner", "--cascade=orphan")
    assert not await exists(gc_http, f"{CMS}/or-owner")
    assert "ownerReferences" not in (await get(gc_http, f"{CMS}/or-child"))["metadata"]

    owner = await configmap(gc_http, "bg-owner")
    await configmap(gc_http, "bg-child", ref(owner))
    await gc_kubectl.run("delete", "configmap", "bg-owner")
    await wait_gone(gc_http, f"{CMS}/bg-child")


# without the collector ------------------------------------------------------------------


async def test_a_bare_server_collects_nothing(server: APIServer, http: HTTPClient) -> None:
    assert server.gc is None and server.namespaces is None
    owner = await configmap(http, "owner")
    await configmap(http, "child", ref(owner))
    await http.delete(f"{CMS}/owner")
    held = await configmap(http, "held")
    reply = await http.delete(f"{CMS}/held", {"propagationPolicy": "Foreground"})
    assert reply.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    # Nothing acts on either: the dependent stays, the foreground owner waits forever.
    assert await exists(http, f"{CMS}/child")
    kept = await get(http, f"{CMS}/held")
    assert kept["metadata"]["uid"] == held["metadata"]["uid"]
    assert kept["metadata"]["finalizers"] == ["foregroundDeletion"]


async def test_collection_catches_up_with_what_was_stored_before(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # A server without the collector leaves a dangling dependent and a waiting owner...
    backend = SQLiteBackend(data)
    async with APIServer(ServerConfig(backend=backend)) as first, connect(first) as http:
        owner = await configmap(http, "owner")
        await configmap(http, "child", ref(owner))
        await http.delete(f"{CMS}/owner")
        waiting = await configmap(http, "waiting")
        await configmap(http, "blocker", ref(waiting, block=True), finalizers=(HOLD,))
        await http.delete(f"{CMS}/waiting", {"propagationPolicy": "Foreground"})
    backend.close()
    # ...which one with the collector, on the same storage, finishes.
    backend = SQLiteBackend(data)
    config = ServerConfig(backend=backend, garbage_collection=True)
    async with APIServer(config) as second, connect(second) as http:
        await wait_gone(http, f"{CMS}/child")

        async def blocker_deleting() -> bool:
            meta = (await get(http, f"{CMS}/blocker"))["metadata"]
            return bool(meta.get("deletionTimestamp"))

        await eventually(blocker_deleting)
        assert await exists(http, f"{CMS}/waiting")
        await release(http, f"{CMS}/blocker")
        await wait_gone(http, f"{CMS}/blocker", f"{CMS}/waiting")
    backend.close()
