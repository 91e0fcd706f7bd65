"""Disruptions: the eviction subresource honouring PodDisruptionBudgets, the disruption
controller keeping budgets' status, and `kubectl cordon/uncordon/drain` on a cluster of two
simulated nodes.

The first tests talk to an API server alone and play the disruption controller themselves,
writing a budget's status through `poddisruptionbudgets/status`, so each answer of the
eviction subresource is reached on purpose.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s, config as k8s_config
from kubernetes.client.rest import ApiException

from kubeforge.apiserver import APIServer
from kubeforge.client import Client
from kubeforge.cluster.devcluster import DevCluster
from kubeforge.cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient, kubectl_for

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
NOW = "2024-01-01T00:00:00Z"


# -- playing the kubelet and the disruption controller ---------------------------------------


def a_pod(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {"app": "web"}, **meta},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
    }


async def run_pod(http: HTTPClient, name: str, *, ready: bool = True, **meta: Any) -> None:
    """A pod the kubelet runs: Running, and Ready unless told otherwise. A finalizer keeps
    it visible once deleted, so a test can see how the deletion left it."""
    created = await http.post(PODS, a_pod(name, finalizers=["test/keep"], **meta))
    assert created.status == 201, created.body
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": NOW}
        ],
    }
    reply = await http.patch(
        f"{PODS}/{name}/status", {"status": status}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body


async def budget(
    http: HTTPClient,
    name: str = "web",
    *,
    allowed: int,
    healthy: int = 2,
    desired: int = 2,
    observed: int = 1,
    selector: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A PodDisruptionBudget whose status says what the disruption controller would."""
    body = {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}} if selector is None else selector,
            **({"minAvailable": desired} if not spec else spec),
        },
    }
    created = await http.post(PDBS, body)
    assert created.status == 201, created.body
    status = {
        "observedGeneration": observed,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": healthy,
    }
    reply = await http.patch(
        f"{PDBS}/{name}/status", {"status": status}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json()
    return result


def eviction(name: str, version: str = "policy/v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "Eviction", "metadata": {"name": name}, **fields}


async def evict(http: HTTPClient, name: str, query: str = "", **fields: Any) -> Any:
    return await http.post(f"{PODS}/{name}/eviction{query}", eviction(name, **fields))


async def pod(http: HTTPClient, name: str) -> dict[str, Any]:
    reply = await http.get(f"{PODS}/{name}")
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json()
    return result


async def pdb_status(http: HTTPClient, name: str = "web") -> dict[str, Any]:
    result: dict[str, Any] = (await http.get(f"{PDBS}/{name}")).json()["status"]
    return result


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return None


# -- the eviction subresource ----------------------------------------------------------------


async def test_an_eviction_takes_one_disruption_and_marks_the_pod(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    await budget(http, allowed=1, healthy=3)
    reply = await evict(http, "a")
    assert reply.status == 201, reply.body
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    evicted = await pod(http, "a")
    assert evicted["metadata"]["deletionTimestamp"]
    target = condition(evicted, "DisruptionTarget")
    assert target is not None
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    status = await pdb_status(http)
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["a"]
    allowed = condition({"status": status}, "DisruptionAllowed")
    assert allowed is not None
    assert (allowed["status"], allowed["reason"]) == ("False", "InsufficientPods")

    # The budget has nothing left: the next eviction is refused, naming the budget.
    refused = await evict(http, "b")
    assert refused.status == 429, refused.body
    body = refused.json()
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"] == {
        "causes": [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 3 currently",
            }
        ]
    }
    assert "Retry-After" not in refused.headers
    assert not (await pod(http, "b"))["metadata"].get("deletionTimestamp")


async def test_a_budget_not_yet_observed_asks_to_retry_later(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, allowed=1, observed=0)
    refused = await evict(http, "a")
    assert refused.status == 429, refused.body
    assert refused.headers["Retry-After"] == "10"
    details = refused.json()["details"]
    assert details["retryAfterSeconds"] == 10
    assert details["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server."
    )


async def test_dry_run_evictions_change_nothing(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, allowed=1)
    before = await pod(http, "a")
    by_query = await evict(http, "a", "?dryRun=All")
    by_body = await evict(http, "a", deleteOptions={"dryRun": ["All"]})
    assert (by_query.status, by_body.status) == (201, 201), (by_query.body, by_body.body)
    assert await pod(http, "a") == before
    status = await pdb_status(http)
    assert status["disruptionsAllowed"] == 1 and "disruptedPods" not in status


async def test_pods_already_disrupted_are_deleted_whatever_the_budget(http: HTTPClient) -> None:
    await run_pod(http, "done")
    finished = {"status": {"phase": "Succeeded"}}
    reply = await http.patch(f"{PODS}/done/status", finished, "application/merge-patch+json")
    assert reply.status == 200
    created = await http.post(PODS, a_pod("waiting", finalizers=["test/keep"]))
    assert created.status == 201
    await budget(http, allowed=0)
    for name in ("done", "waiting"):
        reply = await evict(http, name)
        assert reply.status == 201, reply.body
        assert (await pod(http, name))["metadata"]["deletionTimestamp"]
    assert (await pdb_status(http))["disruptionsAllowed"] == 0


@pytest.mark.parametrize(
    ("policy", "healthy", "evicted"),
    [
        (None, 2, True),  # the budget is met without it: it may go
        (None, 1, False),  # the budget is not met: it is needed to become healthy
        ("IfHealthyBudget", 1, False),
        ("AlwaysAllow", 1, True),
    ],
)
async def test_unhealthy_pods_and_the_unhealthy_pod_eviction_policy(
    http: HTTPClient, policy: str | None, healthy: int, evicted: bool
) -> None:
    await run_pod(http, "sick", ready=False)
    spec: dict[str, Any] = {"minAvailable": 2}
    if policy is not None:
        spec["unhealthyPodEvictionPolicy"] = policy
    await budget(http, allowed=0, healthy=healthy, **spec)
    reply = await evict(http, "sick")
    assert reply.status == (201 if evicted else 429), reply.body
    assert bool((await pod(http, "sick"))["metadata"].get("deletionTimestamp")) == evicted
    # An unhealthy pod never takes from the budget.
    assert "disruptedPods" not in await pdb_status(http)


async def test_two_budgets_for_one_pod_fail_as_kube_apiserver_does(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, "first", allowed=1)
    await budget(http, "second", allowed=1)
    reply = await evict(http, "a")
    assert reply.status == 500, reply.body
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.",
        "code": 500,
    }


async def test_budgets_that_select_no_pod_are_not_consulted(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, "empty", allowed=0, selector={})
    await budget(http, "other", allowed=0, selector={"matchLabels": {"app": "db"}})
    assert (await evict(http, "a")).status == 201


async def test_eviction_bodies_and_options(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    mismatch = await http.post(f"{PODS}/a/eviction", eviction("b"))
    assert mismatch.status == 400
    assert mismatch.json()["message"] == "name in URL does not match name in Eviction object"
    other = await http.post(f"{PODS}/a/eviction", eviction("a", version="apps/v1"))
    assert other.status == 400, other.body
    stale = await evict(http, "a", deleteOptions={"preconditions": {"resourceVersion": "1"}})
    assert stale.status == 409, stale.body
    assert not (await pod(http, "a"))["metadata"].get("deletionTimestamp")
    # policy/v1beta1 Evictions are read as policy/v1's, with their options.
    old = await evict(http, "a", version="policy/v1beta1", deleteOptions={"gracePeriodSeconds": 7})
    assert old.status == 201, old.body
    assert (await pod(http, "a"))["metadata"]["deletionGracePeriodSeconds"] == 7
    missing = await evict(http, "nobody")
    assert missing.status == 404


async def test_the_python_client_evicts_and_is_refused(
    http: HTTPClient, kubeconfig: Path
) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    await budget(http, allowed=1)
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    core = k8s.CoreV1Api(api)

    def scenario() -> None:
        body = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="a", namespace=NS))
        core.create_namespaced_pod_eviction("a", NS, body)
        with pytest.raises(ApiException) as refused:
            core.create_namespaced_pod_eviction(
                "b", NS, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="b", namespace=NS))
            )
        assert refused.value.status == 429
        assert "disruption budget web" in str(refused.value.body)

    try:
        await asyncio.to_thread(scenario)
    finally:
        api.close()
    assert (await pod(http, "a"))["metadata"]["deletionTimestamp"]
