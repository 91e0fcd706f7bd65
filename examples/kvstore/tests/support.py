"""What the kvstore tests share: manifests, the store's status as kubectl shows it, and
reading and writing keys in a member with `kubectl exec`."""

from __future__ import annotations

from typing import Any

from kubeforge.testing import Kubectl, eventually

SELECTOR = "app.kubernetes.io/name=kvstore,app.kubernetes.io/instance={name}"


def kvstore_manifest(
    name: str,
    *,
    replicas: int = 3,
    storage_class: str | None = None,
    failover_seconds: int | None = None,
    backup: str | None = None,
) -> str:
    lines = [
        "apiVersion: store.kubeforge.dev/v1alpha1",
        "kind: KVStore",
        "metadata:",
        f"  name: {name}",
        "spec:",
        f"  replicas: {replicas}",
    ]
    if storage_class is not None:
        lines.append(f"  storageClassName: {storage_class}")
    if failover_seconds is not None:
        lines.append(f"  failoverSeconds: {failover_seconds}")
    if backup is not None:
        lines += ["  backup:", f"    schedule: '{backup}'"]
    return "\n".join(lines) + "\n"


async def status(kubectl: Kubectl, name: str) -> dict[str, Any]:
    found: dict[str, Any] = (await kubectl.json("get", "kvstore", name)).get("status") or {}
    return found


def condition(found: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in found.get("conditions") or [] if c["type"] == kind), {})


async def settled(
    kubectl: Kubectl, name: str, replicas: int, *, timeout: float = 40
) -> dict[str, Any]:
    """The status once `replicas` members serve and the status describes the latest spec."""
    generation = (await kubectl.json("get", "kvstore", name))["metadata"]["generation"]

    async def done() -> dict[str, Any] | None:
        found = await status(kubectl, name)
        ready = condition(found, "Ready")
        if (
            found.get("observedGeneration") == generation
            and found.get("readyReplicas") == replicas
            and ready.get("status") == "True"
        ):
            return found
        return None

    settled: dict[str, Any] | None = await eventually(
        done, timeout=timeout, interval=0.2, message=f"{replicas} ready"
    )
    assert settled is not None
    return settled


async def members(kubectl: Kubectl, name: str) -> dict[str, dict[str, Any]]:
    """The store's pods that are not on their way out, by name."""
    listed = await kubectl.json("get", "pods", "-l", SELECTOR.format(name=name))
    return {
        p["metadata"]["name"]: p
        for p in listed["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


async def put(kubectl: Kubectl, pod: str, key: str, value: str) -> None:
    await kubectl.run("exec", pod, "--", "kvstore", "put", key, value)


async def get(kubectl: Kubectl, pod: str, key: str) -> str:
    return (await kubectl.run("exec", pod, "--", "kvstore", "get", key)).out.strip()


async def serving_on(
    kubectl: Kubectl, pod: str, *, not_on: str | None = None, timeout: float = 40
) -> str:
    """The node `pod` runs and is ready on (another than `not_on`, when given)."""

    async def ready() -> str | None:
        found = (await members(kubectl, pod.rpartition("-")[0])).get(pod)
        if found is None:
            return None
        node: str | None = found["spec"].get("nodeName")
        conditions = found.get("status", {}).get("conditions") or []
        is_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        return node if is_ready and node and node != not_on else None

    node = await eventually(ready, timeout=timeout, interval=0.2, message=f"{pod} ready")
    assert node is not None
    return node
