"""Simulated nodes against the embedded API server: node registration, the pod lifecycle,
restarts, deletion, container logs (kubectl logs, -f, --previous) and local execution."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kubeforge._apiserver.handlers.pods import LogRequest
from kubeforge._client.auth import StaticToken
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers import scheduler
from kubeforge._cluster.kubelet import SimulatedNode
from kubeforge._cluster.options import RUN_SECONDS_ANNOTATION, ClusterOptions
from kubeforge._cluster.podlogs import PodLogs
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient

NS = "default"
FAST = ClusterOptions(pod_start_seconds=0.05, command_run_seconds=0.05)


@pytest.fixture
def pod_logs() -> PodLogs:
    return PodLogs()


@pytest.fixture
async def server(pod_logs: PodLogs) -> AsyncIterator[APIServer]:
    """The embedded server, serving pod logs from the nodes' log buffer."""
    async with APIServer(logs=pod_logs) as srv:
        yield srv


def config_of(server: APIServer) -> ClusterConfig:
    return ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )


@asynccontextmanager
async def running_cluster(
    server: APIServer,
    logs: PodLogs,
    options: ClusterOptions = FAST,
    names: Sequence[str] = ("node-a",),
) -> AsyncIterator[list[SimulatedNode]]:
    """The scheduler in a manager plus simulated nodes, all talking HTTPS to `server`."""
    manager = Manager(client=Client(config_of(server)))
    scheduler.setup(manager)
    manager_task = asyncio.create_task(manager.start())
    nodes = [SimulatedNode(Client(config_of(server)), name, options, logs) for name in names]
    node_tasks = [asyncio.create_task(node.run()) for node in nodes]
    try:
        for node in nodes:
            await asyncio.wait_for(node.registered.wait(), 10)
        yield nodes
    finally:
        manager.stop()
        await manager_task
        for node in nodes:
            await node.stop()
        await asyncio.gather(*node_tasks)
        for node in nodes:
            await node.client.close()


@pytest.fixture
async def cluster(server: APIServer, pod_logs: PodLogs) -> AsyncIterator[list[SimulatedNode]]:
    async with running_cluster(server, pod_logs) as nodes:
        yield nodes


def pod(
    name: str,
    command: list[str] | None = None,
    *,
    restart: str = "Always",
    image: str = "busybox:1.36",
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if command is not None:
        container["command"] = command
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, **spec.pop("metadata", {})},
        "spec": {"restartPolicy": restart, "containers": [container], **spec},
    }


async def wait_phase(api: Client, name: str, phase: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def reached() -> bool:
        found.update(await api.get("v1/Pod", name, namespace=NS))
        return (found.get("status") or {}).get("phase") == phase

    await eventually(reached)
    return found


async def _async(value: bool) -> bool:
    return value


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


# -- the node --------------------------------------------------------------------------------


async def test_node_registers_with_status_and_renews_its_lease(
    api: Client, cluster: list[SimulatedNode]
) -> None:
    node = await api.get("v1/Node", "node-a")
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "node-a"
    assert labels["kubernetes.io/os"] == "linux"
    assert "kubernetes.io/arch" in labels
    status = node["status"]
    assert status["capacity"]["pods"] == "110"
    assert status["allocatable"]["cpu"] == "8"
    assert status["allocatable"]["memory"] == "32Gi"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["Ready"]["reason"] == "KubeletReady"
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert conditions[kind]["status"] == "False"
    addresses = {a["type"]: a["address"] for a in status["addresses"]}
    assert addresses["Hostname"] == "node-a"
    ipaddress.ip_address(addresses["InternalIP"])
    info = status["nodeInfo"]
    assert info["containerRuntimeVersion"] == "kubeforge://simulated"
    assert info["kubeletVersion"] == "v1.33.0"
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    assert node["spec"]["podCIDR"] == "10.244.0.0/24"

    lease: dict[str, Any] = {}

    async def leased() -> bool:
        try:
            lease.update(
                await api.get("coordination.k8s.io/v1/Lease", "node-a", namespace="kube-node-lease")
            )
        except NotFound:
            return False
        return True

    await eventually(leased)
    assert lease["spec"]["holderIdentity"] == "node-a"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["spec"]["renewTime"]
    assert lease["metadata"]["ownerReferences"][0]["name"] == "node-a"


async def test_two_nodes_get_their_own_pod_subnets(server: APIServer, pod_logs: PodLogs) -> None:
    async with running_cluster(server, pod_logs, names=("one", "two")) as nodes:
        assert {str(n._subnet) for n in nodes} == {"10.244.0.0/24", "10.244.1.0/24"}
        assert len({n.address for n in nodes}) == 2


# -- the pod lifecycle -----------------------------------------------------------------------


async def test_pod_goes_from_pending_to_running(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("web", image="nginx"))
    running = await wait_phase(api, "web", "Running")
    spec, status = running["spec"], running["status"]
    assert spec["nodeName"] == "node-a"
    assert status["startTime"]
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.0.0/24")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"] == cluster[0].address
    for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
        assert condition(running, kind)["status"] == "True", kind
    assert condition(running, "PodScheduled")["status"] == "True"
    [container] = status["containerStatuses"]
    assert container["name"] == "main"
    assert container["image"] == "docker.io/library/nginx:latest"
    assert container["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert container["containerID"].startswith("kubeforge://")
    assert container["ready"] is True
    assert container["started"] is True
    assert container["restartCount"] == 0
    assert container["state"]["running"]["startedAt"]

    table = await kubectl.run("get", "pods", "web", "--no-headers")
    assert table.out.split()[1:3] == ["1/1", "Running"]
    logs = await kubectl.run("logs", "web")
    assert "nginx" in logs.out


async def test_a_running_pod_costs_its_node_one_task_and_no_copy_of_its_reported_status(
    api: Client, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("lean", image="nginx"))
    await wait_phase(api, "lean", "Running")
    [worker] = [w for w in cluster[0]._workers.values() if w.name == "lean"]
    # What the worker keeps of its pod: the spec it started with, not one per version, and
    # of the status only what others own (here nothing but the phase).
    assert worker.pod["spec"] is worker.spec
    assert worker.pod["status"] == {"phase": "Running"}
    assert worker.pod["metadata"]["name"] == "lean"
    # The pod's run, and its container's: no task waiting for the deletion, none for the
    # only container, none for each log's followers.
    tasks = [t for t in asyncio.all_tasks() if "lean" in t.get_name() or _runs_for(t, worker)]
    assert len(tasks) <= 3, [t.get_coro() for t in tasks]


def _runs_for(task: asyncio.Task[Any], worker: Any) -> bool:
    frame = task.get_coro().cr_frame  # type: ignore[union-attr]
    return frame is not None and frame.f_locals.get("self") in (
        worker,
        *(slot.process for slot in worker.mains),
    )


async def test_echo_pod_succeeds_and_its_log_has_the_output(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("hello", ["echo", "hello"], restart="Never"))
    done = await wait_phase(api, "hello", "Succeeded")
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0
    assert terminated["reason"] == "Completed"
    assert terminated["startedAt"] and terminated["finishedAt"]
    assert condition(done, "Ready")["status"] == "False"
    assert condition(done, "Ready")["reason"] == "PodCompleted"
    assert (await kubectl.run("logs", "hello")).out == "hello\n"
    table = await kubectl.run("get", "pods", "hello", "--no-headers")
    assert table.out.split()[1:3] == ["0/1", "Completed"]


async def test_failing_command_fails_the_pod_with_its_exit_code(
    api: Client, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("fails", ["sh", "-c", "echo bye; exit 3"], restart="Never"))
    failed = await wait_phase(api, "fails", "Failed")
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"


async def test_on_failure_restarts_a_failing_container(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("retry", ["sh", "-c", "echo attempt; exit 1"], restart="OnFailure"))
    latest: dict[str, Any] = {}

    async def restarted() -> bool:
        latest.update(await api.get("v1/Pod", "retry", namespace=NS))
        statuses = latest["status"].get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount") or 0) >= 1

    await eventually(restarted)
    container = latest["status"]["containerStatuses"][0]
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert latest["status"]["phase"] in ("Running", "Pending")
    previous = await kubectl.run("logs", "retry", "--previous")
    assert previous.out == "attempt\n"


async def test_never_restarting_crash_shows_crash_loop_back_off(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("crash", ["false"]))

    async def backing_off() -> bool:
        found = await api.get("v1/Pod", "crash", namespace=NS)
        statuses = found["status"].get("containerStatuses") or [{}]
        waiting = (statuses[0].get("state") or {}).get("waiting") or {}
        return waiting.get("reason") == "CrashLoopBackOff"

    await eventually(backing_off)
    found = await api.get("v1/Pod", "crash", namespace=NS)
    waiting = found["status"]["containerStatuses"][0]["state"]["waiting"]
    assert re.fullmatch(
        r"back-off \S+ restarting failed container=main pod=crash_default\(.+\)",
        waiting["message"],
    )
    assert found["status"]["phase"] == "Running"


async def test_deleting_a_pod_stops_it_and_removes_it(
    api: Client, pod_logs: PodLogs, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("doomed", ["sleep", "infinity"]))
    await wait_phase(api, "doomed", "Running")
    assert pod_logs.has(NS, "doomed") is True
    await api.delete("v1/Pod", "doomed", namespace=NS)

    async def gone() -> bool:
        try:
            await api.get("v1/Pod", "doomed", namespace=NS)
        except NotFound:
            return True
        return False

    await eventually(gone)
    await eventually(lambda: _async(not pod_logs.has(NS, "doomed")))


async def test_init_containers_run_to_completion_first(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    body = pod(
        "staged",
        ["sleep", "infinity"],
        initContainers=[
            {"name": "prepare", "image": "busybox", "command": ["sh", "-c", "echo prepared"]}
        ],
    )
    await api.create(body)
    running = await wait_phase(api, "staged", "Running")
    [init] = running["status"]["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert init["ready"] is False
    main = running["status"]["containerStatuses"][0]
    assert main["state"]["running"]["startedAt"] >= init["state"]["terminated"]["finishedAt"]
    assert condition(running, "Initialized")["status"] == "True"
    assert (await kubectl.run("logs", "staged", "-c", "prepare")).out == "prepared\n"


async def test_missing_config_map_holds_the_container_until_it_exists(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    env = [
        {
            "name": "GREETING",
            "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}},
        },
        {"name": "WHO", "value": "$(GREETING) world"},
    ]
    await api.create(
        pod("configured", ["sh", "-c", "echo $WHO"], restart="Never", container={"env": env})
    )

    async def blocked() -> bool:
        found = await api.get("v1/Pod", "configured", namespace=NS)
        statuses = found["status"].get("containerStatuses") or [{}]
        waiting = (statuses[0].get("state") or {}).get("waiting") or {}
        return waiting.get("reason") == "CreateContainerConfigError"

    await eventually(blocked)
    found = await api.get("v1/Pod", "configured", namespace=NS)
    waiting = found["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["message"] == 'configmap "settings" not found'
    assert found["status"]["phase"] == "Pending"
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NS},
            "data": {"greeting": "hello"},
        }
    )
    await wait_phase(api, "configured", "Succeeded")
    assert (await kubectl.run("logs", "configured")).out == "hello world\n"


async def test_run_seconds_annotation_shortens_sleeps(
    api: Client, cluster: list[SimulatedNode]
) -> None:
    body = pod(
        "napper",
        ["sleep", "3600"],
        restart="Never",
        metadata={"annotations": {RUN_SECONDS_ANNOTATION: "0.05"}},
    )
    await api.create(body)
    await wait_phase(api, "napper", "Succeeded")


# -- logs ------------------------------------------------------------------------------------


async def test_log_options_tail_limit_and_timestamps(
    api: Client, http: HTTPClient, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(pod("lines", ["sh", "-c", "echo a; echo b; echo c"], restart="Never"))
    await wait_phase(api, "lines", "Succeeded")
    path = f"/api/v1/namespaces/{NS}/pods/lines/log"
    assert (await http.get(path + "?tailLines=2")).body == b"b\nc\n"
    assert (await http.get(path + "?limitBytes=3")).body == b"a\nb"
    assert (await http.get(path + "?sinceSeconds=3600")).body == b"a\nb\nc\n"
    stamped = (await kubectl.run("logs", "lines", "--timestamps")).out.splitlines()
    assert len(stamped) == 3
    for line, text in zip(stamped, "abc", strict=True):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z " + text, line)


async def test_kubectl_logs_follow_streams_new_lines(
    api: Client, kubectl: Kubectl, pod_logs: PodLogs, cluster: list[SimulatedNode]
) -> None:
    script = "i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.05; done"
    await api.create(pod("ticker", ["sh", "-c", script]))
    await wait_phase(api, "ticker", "Running")
    process = await kubectl.start("logs", "-f", "ticker")
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        assert first == b"line-0\n"
        # Lines written after the request began arrive on the same stream.
        written_before = len(pod_logs.text(NS, "ticker", "main").splitlines())
        wanted = f"line-{written_before + 3}\n".encode()
        while (line := await asyncio.wait_for(process.stdout.readline(), 30)) != wanted:
            assert line.startswith(b"line-")
    finally:
        process.kill()
        await process.wait()


async def test_kubectl_logs_follow_ends_with_the_container(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    await api.create(
        pod("brief", ["sh", "-c", "echo first; sleep 0.3; echo second"], restart="Never")
    )
    await wait_phase(api, "brief", "Running")
    result = await kubectl.run("logs", "-f", "brief", timeout=30)
    assert result.out == "first\nsecond\n"


# -- what simulated containers do ------------------------------------------------------------


async def test_the_memcached_tutorial_command_keeps_running(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    # The Memcached operator tutorial's container: -v is verbose, and a Deployment's pod
    # keeps running; the same program in a pod meant to finish ends after the run time.
    command = ["memcached", "--memory-limit=64", "-o", "modern", "-v"]
    quick = {"annotations": {RUN_SECONDS_ANNOTATION: "0.05"}}
    await api.create(pod("memcached", command, image="memcached:1.6.26-alpine3.19", metadata=quick))
    await api.create(pod("once", command, restart="Never", metadata=quick))
    await wait_phase(api, "once", "Succeeded")
    running = await wait_phase(api, "memcached", "Running")
    (container,) = running["status"]["containerStatuses"]
    assert container["restartCount"] == 0 and container["ready"] is True
    assert "running" in container["state"]
    logs = await kubectl.run("logs", "memcached")
    assert logs.out == "(simulated) memcached --memory-limit=64 -o modern -v: running\n"


async def test_annotations_make_containers_fail_or_stay_unready(
    api: Client, kubectl: Kubectl, cluster: list[SimulatedNode]
) -> None:
    failing = {
        "annotations": {
            "kubeforge.dev/exit-code": "2",
            "kubeforge.dev/output": "cannot connect to the database",
            RUN_SECONDS_ANNOTATION: "0.05",
        }
    }
    await api.create(pod("broken", image="nginx:1.27", metadata=failing))
    latest: dict[str, Any] = {}

    async def crash_looping() -> bool:
        latest.update(await api.get("v1/Pod", "broken", namespace=NS))
        statuses = latest["status"].get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount") or 0) >= 1

    await eventually(crash_looping)
    (container,) = latest["status"]["containerStatuses"]
    assert container["lastState"]["terminated"]["exitCode"] == 2
    previous = await kubectl.run("logs", "broken", "--previous")
    assert previous.out == "cannot connect to the database\n"

    unready = {"annotations": {"main.container.kubeforge.dev/ready": "false"}}
    await api.create(pod("unready", image="nginx:1.27", metadata=unready))
    running = await wait_phase(api, "unready", "Running")
    assert condition(running, "Ready")["status"] == "False"
    assert condition(running, "ContainersReady")["reason"] == "ContainersNotReady"
    assert running["status"]["containerStatuses"][0]["started"] is True


# -- running commands on this machine --------------------------------------------------------


async def test_exec_pods_run_the_command_as_a_local_process(
    api: Client, kubectl: Kubectl, server: APIServer, pod_logs: PodLogs
) -> None:
    options = ClusterOptions(pod_start_seconds=0.05, exec_pods=True)
    async with running_cluster(server, pod_logs, options):
        body = pod(
            "real",
            ["sh", "-c", 'echo from-$HOME_TEST; test -d "$HOME" && exit 7'],
            restart="Never",
            container={"env": [{"name": "HOME_TEST", "value": "local"}]},
        )
        await api.create(body)
        failed = await wait_phase(api, "real", "Failed")
        terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["exitCode"] == 7
        assert (await kubectl.run("logs", "real")).out == "from-local\n"

        await api.create(pod("sleeper", ["sleep", "600"], terminationGracePeriodSeconds=5))
        await wait_phase(api, "sleeper", "Running")
        await api.delete("v1/Pod", "sleeper", namespace=NS)

        async def gone() -> bool:
            try:
                await api.get("v1/Pod", "sleeper", namespace=NS)
            except NotFound:
                return True
            return False

        await eventually(gone)

        await api.create(pod("missing", ["no-such-program-here"], restart="Never"))
        failed = await wait_phase(api, "missing", "Failed")
        terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "StartError"
        assert terminated["exitCode"] == 128
        assert "executable file not found" in terminated["message"]


HEALTH_SERVER = """
import http.server, sys
port = int(sys.argv[1])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/readyz" else 500)
        self.end_headers()
    def log_message(self, *args):
        pass
print("listening on", port, flush=True)
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


async def test_probes_decide_readiness_and_restarts_of_local_processes(
    api: Client, kubectl: Kubectl, server: APIServer, pod_logs: PodLogs
) -> None:
    options = ClusterOptions(pod_start_seconds=0.05, exec_pods=True)
    async with running_cluster(server, pod_logs, options) as nodes:
        container = {
            "ports": [{"containerPort": 8080, "name": "http"}],
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 1},
            "livenessProbe": {
                "httpGet": {"path": "/livez", "port": 8080},
                "initialDelaySeconds": 1,
                "periodSeconds": 1,
                "failureThreshold": 2,
            },
        }
        body = pod(
            "probed",
            [sys.executable, "-c", HEALTH_SERVER, "8080"],
            container=container,
            terminationGracePeriodSeconds=2,
        )
        await api.create(body)

        async def ready() -> bool:
            found = await api.get("v1/Pod", "probed", namespace=NS)
            statuses = found["status"].get("containerStatuses") or [{}]
            return statuses[0].get("ready") is True

        await eventually(ready, timeout=15)
        found = await api.get("v1/Pod", "probed", namespace=NS)
        # The declared port became a port of this machine, and the process was told so.
        port = nodes[0].local.ports.lookup(found["status"]["podIP"], 8080)
        assert port is not None and port != 8080
        assert (await kubectl.run("logs", "probed")).out == f"listening on {port}\n"

        async def restarted() -> bool:
            found.update(await api.get("v1/Pod", "probed", namespace=NS))
            return int(found["status"]["containerStatuses"][0]["restartCount"]) >= 1

        await eventually(restarted, timeout=20)
        events = await api.list("events.k8s.io/v1/Event", namespace=NS)
        notes = {(e["reason"], e.get("note")) for e in events}
        assert ("Killing", "Container main failed liveness probe, will be restarted") in notes
        assert (
            "Unhealthy",
            "Liveness probe failed: HTTP probe failed with statuscode: 500",
        ) in notes


async def test_local_processes_get_their_volumes_and_the_api_server(
    api: Client, kubectl: Kubectl, server: APIServer, pod_logs: PodLogs
) -> None:
    options = ClusterOptions(pod_start_seconds=0.05, exec_pods=True)
    async with running_cluster(server, pod_logs, options):
        script = (
            "cat /etc/creds/password; echo; cat /etc/app.conf; echo; "
            'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT $CONFIG"; '
            "test -d /scratch && echo scratch"
        )
        body = pod(
            "mounted",
            ["sh", "-c", script],
            restart="Never",
            container={
                "env": [{"name": "CONFIG", "value": "--config=/etc/app.conf"}],
                "volumeMounts": [
                    {"name": "creds", "mountPath": "/etc/creds", "readOnly": True},
                    {"name": "settings", "mountPath": "/etc/app.conf", "subPath": "app.conf"},
                    {"name": "scratch", "mountPath": "/scratch"},
                ],
            },
            volumes=[
                {"name": "creds", "secret": {"secretName": "creds"}},
                {"name": "settings", "configMap": {"name": "settings"}},
                {"name": "scratch", "emptyDir": {}},
            ],
        )
        await api.create(body)
        await api.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": NS},
                "data": {"app.conf": "debug=true"},
            }
        )

        # Until its Secret exists, the pod cannot be set up, as a kubelet reports it.
        async def failed_mount() -> bool:
            events = await api.list("events.k8s.io/v1/Event", namespace=NS)
            return any(e.get("reason") == "FailedMount" for e in events)

        await eventually(failed_mount)
        events = await api.list("events.k8s.io/v1/Event", namespace=NS)
        (event,) = [e for e in events if e.get("reason") == "FailedMount"]
        assert event["note"] == (
            'MountVolume.SetUp failed for volume "creds" : secret "creds" not found'
        )
        assert (await api.get("v1/Pod", "mounted", namespace=NS))["status"]["phase"] == "Pending"
        await api.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "creds", "namespace": NS},
                "stringData": {"password": "s3cret"},
            }
        )
        await wait_phase(api, "mounted", "Succeeded")
        lines = (await kubectl.run("logs", "mounted")).out.splitlines()
        assert lines[:2] == ["s3cret", "debug=true"]
        host = server.url.removeprefix("https://")
        endpoint, config = lines[2].split(" ")
        assert endpoint == host
        assert config.startswith("--config=/") and config.endswith("/root/etc/app.conf")
        assert lines[3:] == ["scratch"]


# -- the log buffer --------------------------------------------------------------------------


async def _collect(logs: PodLogs, request: LogRequest) -> bytes:
    return b"".join([chunk async for chunk in logs.stream(request)])


async def test_pod_logs_keep_the_newest_bytes_and_the_previous_run() -> None:
    logs = PodLogs(max_bytes=10)
    logs.start("ns", "p", "c")
    logs.write("ns", "p", "c", b"aaaa\nbbbb\ncc")
    logs.write("ns", "p", "c", b"cc\n")
    assert logs.text("ns", "p", "c") == "bbbb\ncccc\n"
    logs.start("ns", "p", "c")
    logs.write("ns", "p", "c", b"new\n")
    request = LogRequest("ns", "p", "c", previous=True)
    assert await _collect(logs, request) == b"bbbb\ncccc\n"
    assert await _collect(logs, LogRequest("ns", "p", "c")) == b"new\n"
    logs.drop("ns", "p")
    assert await _collect(logs, LogRequest("ns", "p", "c")) == b""


async def test_pod_logs_follow_until_the_run_ends() -> None:
    logs = PodLogs()
    logs.start("ns", "p", "c")
    logs.write("ns", "p", "c", b"one\n")
    chunks: list[bytes] = []

    async def follow() -> None:
        async for chunk in logs.stream(LogRequest("ns", "p", "c", follow=True)):
            chunks.append(chunk)

    task = asyncio.create_task(follow())
    await eventually(lambda: _async(chunks == [b"one\n"]))
    logs.write("ns", "p", "c", b"two\nthr")
    await eventually(lambda: _async(chunks == [b"one\n", b"two\n"]))
    assert task.done() is False
    logs.end("ns", "p", "c")
    await asyncio.wait_for(task, 5)
    assert chunks == [b"one\n", b"two\n", b"thr"]
