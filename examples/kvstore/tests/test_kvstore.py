"""The kvstore scenario against a cluster, with kubectl 1.33: what a KVStore is made of, scaling
with ordered membership, and members' data in their volumes across restarts."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import Kubectl, eventually

from tests.support import (
    SELECTOR,
    condition,
    get,
    kvstore_manifest,
    members,
    put,
    serving_on,
    settled,
    status,
)


async def test_a_kvstore_owns_a_statefulset_services_a_budget_and_a_backup_cronjob(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(kvstore_manifest("kv", replicas=3, backup="0 3 * * *"))
    found = await settled(kubectl, "kv", 3)

    assert [(m["name"], m["ordinal"], m["ready"]) for m in found["members"]] == [
        ("kv-0", 0, True),
        ("kv-1", 1, True),
        ("kv-2", 2, True),
    ]
    assert all(m["node"] for m in found["members"])
    assert found["replicas"] == 3
    assert found["selector"] == "app.kubernetes.io/instance=kv,app.kubernetes.io/name=kvstore"
    kvstore = await kubectl.json("get", "kvstore", "kv")
    generation = kvstore["metadata"]["generation"]
    for kind, reason in (("Available", "QuorumReady"), ("Ready", "AllMembersReady")):
        cond = condition(found, kind)
        assert (cond["status"], cond["reason"], cond["observedGeneration"]) == (
            "True",
            reason,
            generation,
        )
    assert condition(found, "Available")["message"] == "3 of 3 members ready, quorum 2"

    header, row = (await kubectl.run("get", "kvstores")).rows()
    assert header == ["NAME", "REPLICAS", "READY", "AVAILABLE", "BACKUP", "AGE"]
    assert row[:5] == ["kv", "3", "3", "True", "0 3 * * *"]

    # Each child is controlled by the KVStore.
    children = [
        ("statefulset", "kv"),
        ("service", "kv"),
        ("service", "kv-client"),
        ("poddisruptionbudget", "kv"),
        ("cronjob", "kv-backup"),
        ("persistentvolumeclaim", "kv-backups"),
    ]
    for kind, name in children:
        child = await kubectl.json("get", kind, name)
        (owner,) = child["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "KVStore",
            "kv",
            kvstore["metadata"]["uid"],
            True,
        ), (kind, name)

    statefulset = await kubectl.json("get", "statefulset", "kv")
    spec = statefulset["spec"]
    assert (spec["serviceName"], spec["podManagementPolicy"], spec["replicas"]) == (
        "kv",
        "OrderedReady",
        3,
    )
    (template,) = spec["volumeClaimTemplates"]
    assert template["metadata"]["name"] == "data"
    assert template["spec"]["resources"]["requests"] == {"storage": "1Gi"}
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"] == "kvstore:0.1"
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/var/lib/kvstore"}]

    headless = await kubectl.json("get", "service", "kv")
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    client = await kubectl.json("get", "service", "kv-client")
    assert client["spec"]["clusterIP"] != "None"
    assert client["spec"]["ports"][0]["port"] == 7379

    # A claim per member, bound by the cluster's default class.
    claims = await kubectl.json("get", "pvc", "-l", SELECTOR.format(name="kv"))
    data = {c["metadata"]["name"]: c for c in claims["items"]}
    assert {"data-kv-0", "data-kv-1", "data-kv-2"} <= set(data)
    for ordinal in range(3):
        assert data[f"data-kv-{ordinal}"]["status"]["phase"] == "Bound"

    # The budget keeps a quorum: 2 of 3 must stay up, so one may be disrupted.
    async def budget_counts() -> dict[str, int] | None:
        budget = await kubectl.json("get", "pdb", "kv")
        counts = budget.get("status") or {}
        return counts if counts.get("currentHealthy") == 3 else None

    budget = await kubectl.json("get", "pdb", "kv")
    assert budget["spec"]["minAvailable"] == 2
    counts = await eventually(budget_counts, timeout=20)
    assert counts is not None
    assert (counts["desiredHealthy"], counts["disruptionsAllowed"]) == (2, 1)

    cronjob = await kubectl.json("get", "cronjob", "kv-backup")
    assert cronjob["spec"]["schedule"] == "0 3 * * *"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"

    # Backups off: the CronJob goes.
    await kubectl.run(
        "patch", "kvstore", "kv", "--type=json", "-p", '[{"op":"remove","path":"/spec/backup"}]'
    )
    await kubectl.run("wait", "--for=delete", "cronjob/kv-backup", "--timeout=20s", timeout=30)


async def test_members_join_and_leave_in_ordinal_order(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(kvstore_manifest("kv", replicas=1))
    await settled(kubectl, "kv", 1)

    seen: list[list[str]] = []
    waiting: list[list[str]] = []

    async def membership(count: int) -> bool:
        found = await status(kubectl, "kv")
        names = [m["name"] for m in found.get("members") or []]
        if not seen or seen[-1] != names:
            seen.append(names)
        # OrderedReady: only the newest member may be starting.
        not_ready = [m["name"] for m in found.get("members") or [] if not m["ready"]]
        if not_ready and not_ready != names[-1:]:
            waiting.append(not_ready)
        return not not_ready and len(names) == count

    # Up to three through the scale subresource: kv-1 joins, then kv-2, never a gap.
    scaled = await kubectl.run("scale", "kvstore/kv", "--replicas=3")
    assert scaled.out.strip() == "kvstore.store.kubeforge.dev/kv scaled"
    await eventually(lambda: membership(3), timeout=40, interval=0.1)
    await settled(kubectl, "kv", 3)
    # Every membership the status showed on the way is kv-0..kv-n: no member joined before
    # the ones below it.
    assert seen[-1] == ["kv-0", "kv-1", "kv-2"]
    for names in seen:
        assert names == [f"kv-{i}" for i in range(len(names))], seen
    assert waiting == [], waiting

    # kv-2 writes a key, then leaves on a scale-down: the highest ordinal goes first.
    await put(kubectl, "kv-2", "greeting", "hello from kv-2")
    seen.clear()
    await kubectl.run("scale", "kvstore/kv", "--replicas=2")
    await eventually(lambda: membership(2), timeout=40, interval=0.1)
    found = await settled(kubectl, "kv", 2)
    assert [m["name"] for m in found["members"]] == ["kv-0", "kv-1"]
    assert set(await members(kubectl, "kv")) == {"kv-0", "kv-1"}
    assert condition(found, "Available")["message"] == "2 of 2 members ready, quorum 2"
    assert (await kubectl.json("get", "pdb", "kv"))["spec"]["minAvailable"] == 2

    # Its claim stays: scaling up again brings kv-2 back with its data.
    claim = await kubectl.json("get", "pvc", "data-kv-2")
    assert claim["status"]["phase"] == "Bound"
    await kubectl.run("scale", "kvstore/kv", "--replicas=3")
    await settled(kubectl, "kv", 3)
    assert await get(kubectl, "kv-2", "greeting") == "hello from kv-2"
    again = await kubectl.json("get", "pvc", "data-kv-2")
    assert again["metadata"]["uid"] == claim["metadata"]["uid"]


async def test_a_scale_down_that_would_lose_the_quorum_is_refused(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(kvstore_manifest("kv", replicas=3))
    await settled(kubectl, "kv", 3)

    # From 3 to 1: one member cannot be a majority of the three that knew the data.
    refused = await kubectl.run("scale", "kvstore/kv", "--replicas=1", check=False)
    assert refused.code != 0
    assert 'The KVStore "kv" is invalid' in refused.err
    assert "spec.replicas" in refused.err
    assert "a scale-down must keep a majority of the current members" in refused.err
    patched = await kubectl.run(
        "patch", "kvstore", "kv", "--type=merge", "-p", '{"spec":{"replicas":1}}', check=False
    )
    assert patched.code != 0 and "scale down in steps" in patched.err
    assert (await kubectl.json("get", "statefulset", "kv"))["spec"]["replicas"] == 3

    # One member at a time keeps a majority: 3 -> 2 is accepted. From 2, one member would
    # not be a majority of the two: 2 -> 1 is refused as well.
    await kubectl.run("scale", "kvstore/kv", "--replicas=2")
    found = await settled(kubectl, "kv", 2)
    assert [m["name"] for m in found["members"]] == ["kv-0", "kv-1"]
    again = await kubectl.run("scale", "kvstore/kv", "--replicas=1", check=False)
    assert again.code != 0 and "scale down in steps" in again.err

    # The volumes are fixed once made.
    resized = await kubectl.run(
        "patch", "kvstore", "kv", "--type=merge", "-p", '{"spec":{"storage":"2Gi"}}', check=False
    )
    assert resized.code != 0
    assert "the storage size is fixed once the store exists" in resized.err


async def test_a_members_keys_survive_its_pod_being_deleted(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(kvstore_manifest("kv", replicas=2))
    await settled(kubectl, "kv", 2)
    await put(kubectl, "kv-1", "colour", "green")
    await put(kubectl, "kv-1", "shape", "round")
    assert (await kubectl.run("exec", "kv-1", "--", "kvstore", "keys")).out.split() == [
        "colour",
        "shape",
    ]
    before = (await members(kubectl, "kv"))["kv-1"]["metadata"]["uid"]

    # The StatefulSet makes kv-1 again at once: kubectl's own wait for the deletion could
    # find the successor under the name and wait for a deletion it has missed.
    await kubectl.run("delete", "pod", "kv-1", "--wait=false")

    async def replaced() -> bool:
        pod = (await members(kubectl, "kv")).get("kv-1")
        return pod is not None and pod["metadata"]["uid"] != before

    await eventually(replaced, timeout=30)
    await serving_on(kubectl, "kv-1")
    assert await get(kubectl, "kv-1", "colour") == "green"
    assert await get(kubectl, "kv-1", "shape") == "round"
    # The member's volume is its own: kv-0 has none of kv-1's keys.
    missing = await kubectl.run("exec", "kv-0", "--", "kvstore", "get", "colour", check=False)
    assert missing.code != 0 and "no key 'colour'" in missing.err
    logs = (await kubectl.run("logs", "kv-1")).out
    assert "member kv-1: serving 2 keys" in logs
