"""`kubeforge deploy` of a freshly scaffolded project onto a development cluster whose
`controller:latest` image is mapped to the project's directory: the manager really runs
(as a local process, with in-cluster configuration), its probes make it Ready, its webhooks
are served with a certificate from the built-in cert-manager, its generated RBAC is what it
may do, two replicas elect one leader, and `undeploy` removes everything and stops it. A
sharded controller deployed with `--replicas 2` spreads its objects over the two pods, under
the RBAC `kubeforge manifests` generates for it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeforge import Client, NotFound
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv, eventually
from tests.cli.test_cli_project import kubeforge
from tests.cli.test_cli_scaffold import scaffold

PROJECT = "fleet"
NAMESPACE = f"{PROJECT}-system"
DEPLOYMENT = f"{PROJECT}-controller-manager"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{PROJECT}-controller-manager"
SELECTOR = "control-plane=controller-manager"


def frigate(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ship.example.com/v1",
        "kind": "Frigate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"foo": "bar"},
    }


async def manager_pods(client: Client) -> list[dict[str, Any]]:
    pods = await client.list("v1/Pod", namespace=NAMESPACE, label_selector=SELECTOR)
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def log_of(client: Client, pod: str) -> str:
    return await client.logs(pod, namespace=NAMESPACE)


async def deploy(project: Path, kubeconfig: str) -> None:
    """`kubeforge deploy` of the project's image, controller:latest, waiting until the
    manager is available (a deploy that fails fails the test)."""
    deployed = await kubeforge(
        "deploy", "--dir", str(project), "--img", "controller:latest",
        "--kubeconfig", kubeconfig, "--timeout", "40", timeout=50,
    )  # fmt: skip
    assert deployed.code == 0, deployed.out + deployed.err
    assert f"available    Deployment {NAMESPACE}/{DEPLOYMENT}: 1 of 1" in deployed.out


async def port_open(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def test_the_scaffolded_manager_runs_on_the_dev_cluster(tmp_path: Path) -> None:
    project = tmp_path / PROJECT
    scaffold(project)
    options = ClusterOptions(
        images={"controller:latest": project}, cert_manager=True, pod_start_seconds=0.05
    )
    async with TestEnv(crd_paths=(), options=options) as env:
        assert env.cluster is not None
        client = env.client
        kubeconfig = str(env.write_kubeconfig(tmp_path / "kubeconfig"))
        await deploy(project, kubeconfig)

        # Running and Ready: its readiness probe (GET /readyz on the health port) passed.
        (pod,) = await manager_pods(client)
        assert pod["status"]["phase"] == "Running" and ready(pod)
        name = pod["metadata"]["name"]
        events = await client.list("events.k8s.io/v1/Event", namespace=NAMESPACE)
        assert not [e for e in events if e.get("reason") in ("Unhealthy", "BackOff")], events
        # In-cluster configuration: the API server from KUBERNETES_SERVICE_HOST/PORT, the
        # ServiceAccount's token, the namespace file (the Lease is in the pod's namespace).
        text = await log_of(client, name)
        assert f"cluster https://127.0.0.1:{env.cluster.server.port}" in text, text
        lease = await client.get(
            "coordination.k8s.io/v1/Lease", f"{PROJECT}-leader-election", namespace=NAMESPACE
        )
        assert lease["spec"]["holderIdentity"].startswith(name + "_")

        # A sample goes through the manager's webhooks (served with the certificate the
        # built-in cert-manager issued, its CA injected) and is reconciled.
        certificate = await client.get(
            "cert-manager.io/v1/Certificate", f"{PROJECT}-serving-cert", namespace=NAMESPACE
        )
        assert certificate["status"]["conditions"][-1]["status"] == "True"
        webhooks = await client.get(
            "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
            f"{PROJECT}-validating-webhook-configuration",
        )
        assert webhooks["webhooks"][0]["clientConfig"]["caBundle"]
        await client.create(frigate("first"))

        async def reconciled(sample: str) -> bool:
            found = await client.get("ship.example.com/v1/Frigate", sample, namespace="default")
            conditions = (found.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

        await eventually(lambda: reconciled("first"), timeout=15)
        text = await log_of(client, name)
        assert "validating the creation of Frigate first" in text, text

        # Two replicas, each on ports of its own: both Ready, one leads.
        await client.patch(
            "apps/v1/Deployment", DEPLOYMENT, {"spec": {"replicas": 2}}, namespace=NAMESPACE
        )

        async def both_ready() -> bool:
            pods = await manager_pods(client)
            return len(pods) == 2 and all(ready(p) for p in pods)

        await eventually(both_ready, timeout=30)
        pods = await manager_pods(client)
        host_ports = env.cluster.host_ports
        health = [host_ports.lookup(p["status"]["podIP"], 8081) for p in pods]
        assert None not in health and len(set(health)) == 2
        logs = [await log_of(client, p["metadata"]["name"]) for p in pods]
        leaders = [t for t in logs if "successfully acquired lease" in t]
        assert len(leaders) == 1, logs
        assert all("attempting to acquire leader lease" in t for t in logs)

        # The manager may do what its generated RBAC grants, no more: without its binding,
        # its status writes are refused with the ServiceAccount's name.
        await client.delete(
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding", f"{PROJECT}-manager-rolebinding"
        )
        await client.create(frigate("second"))
        leader = pods[logs.index(leaders[0])]["metadata"]["name"]

        async def refused() -> bool:
            return f'User "{ACCOUNT}" cannot' in await log_of(client, leader)

        await eventually(refused, timeout=15)
        assert not await reconciled("second")

        removed = await kubeforge(
            "undeploy", "--dir", str(project), "--kubeconfig", kubeconfig, timeout=50
        )
        assert removed.code == 0, removed.out + removed.err
        with pytest.raises(NotFound):
            await client.get("v1/Namespace", NAMESPACE)
        assert await manager_pods(client) == []
        # The processes are gone: nothing answers on their health ports any more.
        for port in health:
            assert port is not None
            assert not await port_open(port)


SHARDED_SETUP = """\
    manager.controller().for_(Frigate).owns("v1/ConfigMap").sharded().complete(
        FrigateReconciler()
    )
"""

# The scaffolded reconciler, making a ConfigMap for each Frigate: its rules grant creating
# ConfigMaps, not patching them, so only the generated sharding rules let the sharder label them.
OWNED_CONFIGMAP = """
@kubeforge.rbac(groups="", resources="configmaps", verbs=["create"])
class FrigateReconciler(FrigateReconciler):  # type: ignore[no-redef]
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        frigate = await self.client.get(Frigate, request.name, namespace=request.namespace)
        deck = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": request.name, "namespace": request.namespace},
        }
        kubeforge.set_controller_reference(frigate, deck)
        try:
            await self.client.create(deck)
        except kubeforge.AlreadyExists:
            pass
        return await super().reconcile(request)
"""


async def test_a_sharded_manager_deployed_with_replicas_shares_the_objects(tmp_path: Path) -> None:
    project = tmp_path / PROJECT
    scaffold(project, webhook=False)
    main = project / "main.py"
    builder = "    manager.controller().for_(Frigate).complete(FrigateReconciler())\n"
    assert builder in main.read_text()
    main.write_text(main.read_text().replace(builder, SHARDED_SETUP))
    controller = project / "controllers" / "frigate.py"
    controller.write_text(controller.read_text() + OWNED_CONFIGMAP)
    generated = await kubeforge("manifests", "--dir", str(project), timeout=60)
    assert generated.code == 0, generated.out + generated.err
    role = yaml.safe_load((project / "config/rbac/role.yaml").read_text())
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": [
        "create", "get", "list", "patch", "watch"]} in role["rules"]  # fmt: skip

    options = ClusterOptions(images={"controller:latest": project}, pod_start_seconds=0.05)
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        kubeconfig = str(env.write_kubeconfig(tmp_path / "kubeconfig"))
        deployed = await kubeforge(
            "deploy", "--dir", str(project), "--img", "controller:latest", "--replicas", "2",
            "--kubeconfig", kubeconfig, "--timeout", "60", timeout=70,
        )  # fmt: skip
        assert deployed.code == 0, deployed.out + deployed.err
        assert f"available    Deployment {NAMESPACE}/{DEPLOYMENT}: 2 of 2" in deployed.out
        pods = {p["metadata"]["name"] for p in await manager_pods(client)}
        # Each replica holds a shard Lease of the ring named for the controller.
        leases = await client.list(
            "coordination.k8s.io/v1/Lease",
            namespace=NAMESPACE,
            label_selector="alpha.sharding.timebertt.dev/controllerring=frigate",
        )
        shards = {lease["metadata"]["name"] for lease in leases}
        assert {name.rpartition("-")[0].removeprefix("frigate-") for name in shards} == pods

        names = [f"frigate-{i}" for i in range(30)]
        for name in names:
            await client.create(frigate(name))
        label = "shard.alpha.sharding.timebertt.dev/frigate"

        async def all_reconciled() -> dict[str, str]:
            found = {}
            for name in names:
                obj = await client.get("ship.example.com/v1/Frigate", name, namespace="default")
                conditions = (obj.get("status") or {}).get("conditions") or []
                assert conditions and conditions[-1]["status"] == "True", name
                found[name] = obj["metadata"]["labels"][label]
            return found

        placed = await eventually(all_reconciled, timeout=30)
        assert set(placed.values()) == shards  # every replica has a share
        decks = await client.list("v1/ConfigMap", namespace="default")
        owned = {d["metadata"]["name"]: d["metadata"]["labels"][label] for d in decks
                 if d["metadata"]["name"] in placed}  # fmt: skip
        assert owned == placed  # each owned ConfigMap is on its Frigate's shard
        for pod in pods:
            text = await log_of(client, pod)
            mine = {n for n, s in placed.items() if s.removeprefix("frigate-").startswith(pod)}
            assert set(re.findall(r"reconciling Frigate default/(frigate-\d+)\b", text)) == mine
