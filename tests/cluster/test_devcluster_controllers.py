"""Turning the development cluster's built-in controllers off one by one
(`ClusterOptions.controllers`, read as kube-controller-manager's `--controllers`), and the bare
API server envtest users know (`ClusterOptions.bare()`).

That a controller which is off does nothing is shown against a witness: something the other
controllers finish afterwards (a Deployment's pod running needs the deployment, replicaset
and scheduler controllers and a node), by which time the one turned off would long have
acted on what was made before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeforge._client.client import Client
from kubeforge._cluster.controllernames import KNOWN
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import DevProcess, Kubectl, TestEnv, eventually
from tests.support import free_port, kubeforge

NS = "default"
JOB = "batch/v1/Job"
# What the kubebuilder book's CronJob test writes by hand: a running Job's status.
BY_HAND = {"status": {"active": 2, "startTime": "2030-01-01T00:00:00Z"}}


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "work", "image": "busybox", "command": ["sleep", "3600"]}
                    ],
                }
            }
        },
    }


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


async def pods_of_job(client: Client, name: str) -> list[dict[str, Any]]:
    found = await client.list(
        "v1/Pod", namespace=NS, label_selector=f"batch.kubernetes.io/job-name={name}"
    )
    return list(found)


async def a_deployment_runs(client: Client, name: str = "witness") -> None:
    """The witness: a Deployment's pod reaches Running (deployment, replicaset, scheduler,
    a node)."""
    await client.create(deployment(name))

    async def running() -> bool:
        pods = await client.list("v1/Pod", namespace=NS, label_selector=f"app={name}")
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        assert phases == ["Running"], phases
        return True

    await eventually(running, timeout=30)


async def test_with_the_job_controller_off_a_status_written_by_hand_stays() -> None:
    options = ClusterOptions(controllers=("*", "-job"))
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        await client.create(job("by-hand"))
        await client.patch_status(JOB, "by-hand", BY_HAND, namespace=NS, patch_type="merge")
        # The other controllers work; the Job controller, off, has not touched the Job.
        await a_deployment_runs(client)
        stored = await client.get(JOB, "by-hand", namespace=NS)
        assert stored["status"] == BY_HAND["status"]
        assert await pods_of_job(client, "by-hand") == []


async def test_with_every_controller_on_the_job_controller_overrides_the_hand() -> None:
    async with TestEnv(crd_paths=()) as env:
        client = env.client
        await client.create(job("by-hand"))
        await client.patch_status(JOB, "by-hand", BY_HAND, namespace=NS, patch_type="merge")

        async def counted() -> bool:
            stored = await client.get(JOB, "by-hand", namespace=NS)
            assert stored["status"].get("active") == 1, stored["status"]
            return True

        # The controller made the one pod the Job asks for and counts what really runs.
        await eventually(counted, timeout=30)
        assert len(await pods_of_job(client, "by-hand")) == 1


def configmap(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


async def namespace_gone(client: Client, name: str) -> bool:
    found = await client.list("v1/Namespace")
    return name not in {n["metadata"]["name"] for n in found}


async def test_without_the_garbage_collector_dependents_stay_and_namespaces_still_go() -> None:
    options = ClusterOptions(controllers=("*", "-garbage-collector-controller"))
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        owner = await client.create(configmap("owner"))
        await client.create(configmap("dependent", owner))
        await client.delete("v1/ConfigMap", "owner", namespace=NS)
        # The witness: the namespace controller, still on, empties and removes a namespace.
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        await client.create(configmap("inside"), namespace="t")
        await client.delete("v1/Namespace", "t")
        await eventually(lambda: namespace_gone(client, "t"), timeout=30)
        await client.get("v1/ConfigMap", "dependent", namespace=NS)  # not collected


async def test_without_the_namespace_controller_namespaces_stay_terminating() -> None:
    options = ClusterOptions(controllers=("*", "-namespace"))
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        await client.create(configmap("inside"), namespace="t")
        await client.delete("v1/Namespace", "t")
        # The witness: the garbage collector, still on, deletes a dependent of a deleted owner.
        owner = await client.create(configmap("owner"))
        await client.create(configmap("dependent", owner))
        await client.delete("v1/ConfigMap", "owner", namespace=NS)

        async def collected() -> bool:
            names = {c["metadata"]["name"] for c in await client.list("v1/ConfigMap", namespace=NS)}
            assert "dependent" not in names, names
            return True

        await eventually(collected, timeout=30)
        stored = await client.get("v1/Namespace", "t")
        assert stored["status"]["phase"] == "Terminating"
        await client.get("v1/ConfigMap", "inside", namespace="t")


async def test_a_bare_cluster_is_an_api_server_alone(tmp_path: Path) -> None:
    async with TestEnv(crd_paths=(), options=ClusterOptions.bare()) as env:
        assert env.cluster is not None
        assert env.cluster.controllers == frozenset()
        assert env.cluster.manager is not None and env.cluster.manager.controllers == {}
        assert env.cluster.server.gc is None and env.cluster.server.namespaces is None
        kubectl = Kubectl(env.write_kubeconfig(tmp_path / "kubeconfig"), cache_dir=tmp_path)
        nodes = await kubectl.run("get", "nodes")
        assert nodes.out == "" and "No resources found" in nodes.err
        # No ServiceAccount admission: a pod is admitted in a namespace without any account
        # (none is made there), as by envtest's API server, and waits for a node forever.
        await env.client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}
        )
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "alone"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        created = await env.client.create(pod, namespace="t")
        assert list(await env.client.list("v1/ServiceAccount", namespace="t")) == []
        assert "nodeName" not in created["spec"] and created["status"]["phase"] == "Pending"
        # What kube-apiserver does itself still happens: a CRD is established.
        await env.client.create(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "gadgets.bare.kubeforge.dev"},
                "spec": {
                    "group": "bare.kubeforge.dev",
                    "scope": "Namespaced",
                    "names": {"kind": "Gadget", "plural": "gadgets"},
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": {"type": "object"}},
                        }
                    ],
                },
            }
        )
        await env.client.wait_established(["gadgets.bare.kubeforge.dev"], timeout=10)


async def test_an_unknown_controller_is_refused_before_anything_starts() -> None:
    env = TestEnv(crd_paths=(), options=ClusterOptions(controllers=("*,-jobs",)))
    with pytest.raises(ValueError, match='"jobs" is not in the list of known controllers'):
        await env.start()
    assert env.cluster is None


# kubeforge dev --controllers ------------------------------------------------------------------


async def test_dev_controllers_flag_turns_the_job_controller_off(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig, cache_dir=tmp_path / "cache")
    async with DevProcess("--controllers", "*,-job", kubeconfig=kubeconfig, cwd=tmp_path) as dev:
        await kubectl.run("create", "job", "left-alone", "--image=busybox", "--", "sleep", "1")
        await kubectl.run("create", "deployment", "witness", "--image=nginx")
        await kubectl.run("wait", "--for=jsonpath={.status.readyReplicas}=1", "deployment/witness")
        pods = await kubectl.run("get", "pods", "-l", "batch.kubernetes.io/job-name=left-alone")
        assert pods.out == "", pods.out
    assert dev.returncode == 0, dev.output
    assert "  controllers off: job-controller\n" in dev.output


async def test_dev_refuses_an_unknown_controller_in_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    done = await kubeforge(
        "dev", "--port", str(free_port()), "--kubeconfig", str(kubeconfig),
        "--controllers", "*,-cronjobs",
    )  # fmt: skip
    assert done.code == 1
    (line,) = done.err.splitlines()
    assert line.startswith('error: --controllers: "cronjobs" is not in the list of known')
    assert all(name in line for name in KNOWN)
    assert not kubeconfig.exists()
