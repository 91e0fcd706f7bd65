"""Development cluster: a 100-replica Deployment to 100 Running pods, and TestEnv startup.

    .venv/bin/python benchmarks/devcluster.py [--runs 5] [--startups 20] [--quick]
    .venv/bin/python benchmarks/devcluster.py --scale [--replicas 1000,10000] [--nodes 100]
        [--baseline-src /path/to/other/checkout/src]

Deployment: every run starts `kubeforge dev` in a process of its own, as a user would, and
times `kubectl create deployment web --image=nginx --replicas=100` until the 100th pod is
reported Running, seen through a watch from this process.

TestEnv: start -> development cluster running -> CRDs established -> client ready (its
first list of a custom resource answered). Warm runs are in this process after a first
start; cold runs are a fresh interpreter each, imports included. The peer is a bare
APIServer given the same CRDs: envtest's shape, without controllers or nodes.

Scale (--scale, instead of the above): for each N, a fresh `kubeforge dev --nodes 100` in a
process of its own; `kubectl create deployment --replicas=N` until the Nth pod is Ready (its
Ready condition True, seen through a watch from this process); then `kubectl get pods -A`
and `kubectl get pods -A -o json` (best of three, output read and dropped); then a 100-replica
StatefulSet whose pods each claim a volume of the `standard` StorageClass, until 100 pods are
Ready. The cluster's peak RSS (VmHWM) is read from /proc after each scenario. With
--baseline-src the same scenarios run a second time with the `kubeforge dev` process
importing kubeforge from that directory (another checkout's src/), side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

GROUP = "bench.kubeforge.dev"
KINDS = ("Database", "Backup", "Restore")
REPLICAS = 100


def crd(kind: str) -> dict[str, Any]:
    """A CRD shaped like a generated one: spec fields, status with conditions, columns."""
    plural = f"{kind.lower()}s"
    condition = {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": {"type": "string", "maxLength": 316},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string", "maxLength": 1024, "minLength": 1},
            "message": {"type": "string", "maxLength": 32768},
        },
    }
    spec = {
        "type": "object",
        "required": ["engine", "size"],
        "properties": {
            "engine": {"type": "string", "enum": ["postgres", "mysql"]},
            "version": {"type": "string", "default": "16"},
            "size": {"type": "integer", "minimum": 1, "maximum": 64},
            "storage": {"x-kubernetes-int-or-string": True},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "users": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                        "roles": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
        "x-kubernetes-validations": [
            {"rule": "self.size <= 32 || self.engine == 'postgres'", "message": "too big"}
        ],
    }
    status = {
        "type": "object",
        "properties": {
            "phase": {"type": "string"},
            "observedGeneration": {"type": "integer"},
            "conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": condition,
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Engine", "type": "string", "jsonPath": ".spec.engine"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {
                            "name": "Age",
                            "type": "date",
                            "jsonPath": ".metadata.creationTimestamp",
                        },
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def write_crds(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        (directory / f"{GROUP}_{kind.lower()}s.yaml").write_text(yaml.safe_dump(crd(kind)))
    return directory


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- a 100-replica Deployment -----------------------------------------------------------------


def start_dev(tmp: Path) -> tuple[subprocess.Popen[bytes], Path, float]:
    """`kubeforge dev` in its own process; its kubeconfig and how long it took to serve."""
    kubeconfig = tmp / "dev.kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    started = time.perf_counter()
    command = [sys.executable, "-m", "kubeforge._cli.main", "dev", "--port", str(free_port())]
    proc = subprocess.Popen(
        [*command, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = started + 60
    while not kubeconfig.exists():
        if proc.poll() is not None or time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError("kubeforge dev did not start")
        time.sleep(0.005)
    return proc, kubeconfig, time.perf_counter() - started


async def deployment_run(kubeconfig: Path, tmp: Path) -> tuple[float, float]:
    """(kubectl create returned, 100th pod Running), seconds from kubectl's start."""
    from kubeforge import Client
    from kubeforge.client import load_kubeconfig
    from kubeforge.testing import Kubectl

    kubectl = Kubectl(kubeconfig, cache_dir=tmp / "kubectl-cache")
    await kubectl.run("api-resources", "-o", "name")  # discovery cached outside the timing
    async with Client(load_kubeconfig(kubeconfig)) as client:
        rv = (await client.list("v1/Pod", namespace="default")).resource_version
        running: set[str] = set()
        all_running = asyncio.get_running_loop().create_future()

        async def watch() -> None:
            async for event in client.watch(
                "v1/Pod", namespace="default", resource_version=rv, label_selector="app=web"
            ):
                if event.type in ("ADDED", "MODIFIED"):
                    if (event.object.get("status") or {}).get("phase") == "Running":
                        running.add(event.object["metadata"]["name"])
                    if len(running) >= REPLICAS and not all_running.done():
                        all_running.set_result(time.perf_counter())
                        return

        watcher = asyncio.create_task(watch())
        started = time.perf_counter()
        await kubectl.run("create", "deployment", "web", "--image=nginx", f"--replicas={REPLICAS}")
        created = time.perf_counter() - started
        done = await asyncio.wait_for(all_running, 120)
        watcher.cancel()
    return created, done - started


def deployments(runs: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"serving": [], "created": [], "running": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            proc, kubeconfig, serving = start_dev(tmp)
            try:
                created, running = asyncio.run(deployment_run(kubeconfig, tmp))
            finally:
                proc.terminate()
                proc.wait(30)
            results["serving"].append(serving)
            results["created"].append(created)
            results["running"].append(running)
    return results


# -- TestEnv startup --------------------------------------------------------------------------


Timing = Callable[[], Awaitable[dict[str, float]]]


async def timed(runs: int, once: Timing) -> dict[str, list[float]]:
    """`runs` timings of `once` after one untimed start (imports, first-use caches)."""
    await once()
    results: dict[str, list[float]] = {}
    for _ in range(runs):
        for key, value in (await once()).items():
            results.setdefault(key, []).append(value)
    return results


async def testenv_once(crds: Path) -> dict[str, float]:
    """start -> CRDs established (start()) -> first list answered; then stop."""
    from kubeforge.testing import TestEnv

    started = time.perf_counter()
    env = TestEnv(crd_paths=[crds])
    await env.start()
    installed = time.perf_counter()
    await env.client.list(f"{GROUP}/v1/{KINDS[0]}", namespace="default")
    ready = time.perf_counter()
    await env.stop()
    stopped = time.perf_counter()
    assert len(env.installed) == len(KINDS)
    return {
        "start": installed - started,
        "ready": ready - started,
        "stop": stopped - ready,
    }


async def devcluster_once() -> dict[str, float]:
    from kubeforge._cluster.devcluster import DevCluster

    started = time.perf_counter()
    cluster = DevCluster()
    await cluster.start()
    running = time.perf_counter()
    await cluster.stop()
    return {"cluster": running - started}


async def bare_server_once(crds: Path) -> dict[str, float]:
    """The peer: an API server alone (envtest's shape), the same CRDs, the same client."""
    from kubeforge import Client
    from kubeforge._client.auth import StaticToken
    from kubeforge._client.config import ClusterConfig
    from kubeforge.apiserver import APIServer

    documents = [yaml.safe_load(p.read_text()) for p in sorted(crds.glob("*.yaml"))]
    started = time.perf_counter()
    server = APIServer()
    await server.start()
    config = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    async with Client(config) as client:
        for doc in documents:
            await client.apply(doc, field_manager="bench", force=True)
        await client.wait_established([d["metadata"]["name"] for d in documents])
        await client.list(f"{GROUP}/v1/{KINDS[0]}", namespace="default")
        ready = time.perf_counter()
    await server.stop()
    return {"peer": ready - started}


def cold_child(crds: Path) -> None:
    """In a fresh interpreter: import, start a TestEnv, first list; print the time."""
    started = time.perf_counter()
    from kubeforge.testing import TestEnv

    async def run() -> float:
        async with TestEnv(crd_paths=[crds]) as env:
            await env.client.list(f"{GROUP}/v1/{KINDS[0]}", namespace="default")
            return time.perf_counter() - started

    print(json.dumps({"ready": asyncio.run(run())}))


def cold(crds: Path, runs: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"cold": [], "process": []}
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, __file__, "--cold-child", str(crds)],
            check=True,
            capture_output=True,
        ).stdout
        results["process"].append(time.perf_counter() - started)
        results["cold"].append(json.loads(out)["ready"])
    return results


# -- scale: N pods over 100 nodes, and a StatefulSet with volumes ----------------------------


def start_scaled_dev(
    tmp: Path, nodes: int, src: Path | None, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], Path]:
    """`kubeforge dev --nodes N [extra]`, importing kubeforge from `src` when given."""
    kubeconfig = tmp / "dev.kubeconfig"
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    command = [sys.executable, "-m", "kubeforge._cli.main", "dev", "--port", str(free_port())]
    proc = subprocess.Popen(
        [*command, "--nodes", str(nodes), "--kubeconfig", str(kubeconfig), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.perf_counter() + 120
    while not kubeconfig.exists():
        if proc.poll() is not None or time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError("kubeforge dev did not start")
        time.sleep(0.01)
    return proc, kubeconfig


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def is_ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


async def until_ready(
    client: Any, count: int, selector: str, resource_version: str, timeout: float
) -> float:
    """perf_counter() when `count` pods matching `selector` are Ready."""
    ready: set[str] = set()
    async for event in client.watch(
        "v1/Pod",
        namespace="default",
        resource_version=resource_version,
        label_selector=selector,
        timeout_seconds=int(timeout),
    ):
        if event.type in ("ADDED", "MODIFIED"):
            name = event.object["metadata"]["name"]
            if is_ready(event.object):
                ready.add(name)
            else:
                ready.discard(name)
        elif event.type == "DELETED":
            ready.discard(event.object["metadata"]["name"])
        if len(ready) >= count:
            return time.perf_counter()
    raise TimeoutError(f"{len(ready)} of {count} pods Ready in {timeout} s")


async def timed_kubectl(kubectl: Any, *args: str) -> float:
    """The best of three runs of `kubectl ARGS`, seconds."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        await kubectl.run(*args, timeout=120)
        times.append(time.perf_counter() - started)
    return min(times)


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: %(replicas)d
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: standard
      resources: {requests: {storage: 1Gi}}
"""


async def scale_run(
    proc: subprocess.Popen[bytes],
    kubeconfig: Path,
    tmp: Path,
    replicas: int,
    statefulset: int,
    timeout: float,
) -> dict[str, float]:
    from kubeforge import Client
    from kubeforge.client import load_kubeconfig
    from kubeforge.testing import Kubectl

    kubectl = Kubectl(kubeconfig, cache_dir=tmp / "kubectl-cache")
    await kubectl.run("api-resources", "-o", "name")  # discovery cached outside the timing
    result: dict[str, float] = {"idle rss": rss_mib(proc.pid)}
    async with Client(load_kubeconfig(kubeconfig)) as client:
        rv = (await client.list("v1/Pod", namespace="default")).resource_version
        watch = asyncio.create_task(until_ready(client, replicas, "app=web", rv, timeout))
        cpu = cpu_seconds(proc.pid)
        started = time.perf_counter()
        await kubectl.run(
            "create", "deployment", "web", "--image=nginx", f"--replicas={replicas}", timeout=120
        )
        result["ready"] = await watch - started
        result["cpu"] = cpu_seconds(proc.pid) - cpu
        result["rss"] = peak_rss_mib(proc.pid)
        result["get"] = await timed_kubectl(kubectl, "get", "pods", "-A")
        result["get json"] = await timed_kubectl(kubectl, "get", "pods", "-A", "-o", "json")
        if statefulset:
            rv = (await client.list("v1/Pod", namespace="default")).resource_version
            watch = asyncio.create_task(until_ready(client, statefulset, "app=db", rv, timeout))
            started = time.perf_counter()
            await kubectl.apply(STATEFULSET % {"replicas": statefulset})
            result["statefulset"] = await watch - started
        result["final rss"] = peak_rss_mib(proc.pid)
    return result


def scale(
    replicas: list[int],
    nodes: int,
    statefulset: int,
    src: Path | None,
    timeout: float,
    extra: Sequence[str] = (),
) -> dict[int, dict[str, float]]:
    results: dict[int, dict[str, float]] = {}
    for count in replicas:
        with tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            proc, kubeconfig = start_scaled_dev(tmp, nodes, src, extra)
            try:
                results[count] = asyncio.run(
                    scale_run(proc, kubeconfig, tmp, count, statefulset, timeout)
                )
            except TimeoutError as exc:
                results[count] = {"failed": 1.0, "rss": peak_rss_mib(proc.pid)}
                print(f"N={count}: {exc}", file=sys.stderr)
            finally:
                proc.terminate()
                proc.wait(60)
        label = " ".join([str(src or "this checkout"), *extra])
        print(f"N={count} ({label}): {results[count]}", file=sys.stderr)
    return results


def scale_table(nodes: int, statefulset: int, runs: dict[str, dict[int, dict[str, float]]]) -> None:
    def seconds(result: dict[str, float], key: str) -> str:
        return "timed out" if key not in result else f"{result[key]:.1f} s"

    header = ["measure", *runs]
    rows: list[list[str]] = []
    counts = sorted({count for results in runs.values() for count in results})
    for count in counts:
        for label, key, fmt in (
            (f"N={count}: deployment to {count} pods Ready", "ready", "s"),
            (f"N={count}:   the cluster's CPU time meanwhile", "cpu", "s"),
            (f"N={count}: peak RSS by then", "rss", "mib"),
            (f"N={count}: kubectl get pods -A", "get", "s"),
            (f"N={count}: kubectl get pods -A -o json", "get json", "s"),
            (f"N={count}: StatefulSet, {statefulset} pods with volumes, Ready", "statefulset", "s"),
            (f"N={count}: peak RSS at the end", "final rss", "mib"),
        ):
            line = [label]
            for results in runs.values():
                result = results.get(count, {})
                if fmt == "mib":
                    value = result.get(key)
                    line.append("-" if value is None else f"{value:.0f} MiB")
                else:
                    line.append(seconds(result, key))
            rows.append(line)
    print(f"{nodes} simulated nodes; {os.cpu_count()} cores")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for line in [header, *rows]:
        print("  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(line)))


# -- the table --------------------------------------------------------------------------------


def row(name: str, values: list[float], note: str = "") -> tuple[str, str, str, str, str]:
    return (
        name,
        f"{statistics.median(values):.3f} s",
        f"{min(values):.3f} s",
        str(len(values)),
        note,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=5, help="Deployment runs")
    parser.add_argument("--startups", type=int, default=20, help="warm TestEnv starts")
    parser.add_argument("--cold", type=int, default=5, help="TestEnv starts in new processes")
    parser.add_argument("--quick", action="store_true", help="a smaller smoke run")
    parser.add_argument("--cold-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scale", action="store_true", help="the scale scenarios instead")
    parser.add_argument("--replicas", default="1000,10000", help="scale: Deployment sizes")
    parser.add_argument("--nodes", type=int, default=100, help="scale: simulated nodes")
    parser.add_argument("--statefulset", type=int, default=100, help="scale: its replicas")
    parser.add_argument("--timeout", type=float, default=600, help="scale: seconds a scenario")
    parser.add_argument(
        "--baseline-src", type=Path, help="scale: also run kubeforge from this src/ directory"
    )
    parser.add_argument(
        "--only-baseline", action="store_true", help="scale: the baseline's scenarios alone"
    )
    parser.add_argument(
        "--no-console-too",
        action="store_true",
        help="scale: also run this checkout with `kubeforge dev --no-console`",
    )
    args = parser.parse_args()
    if args.cold_child:
        cold_child(args.cold_child)
        return
    if args.scale:
        counts = [int(n) for n in args.replicas.split(",")]
        runs: dict[str, dict[int, dict[str, float]]] = {}
        if args.baseline_src:
            runs["baseline"] = scale(
                counts, args.nodes, args.statefulset, args.baseline_src, args.timeout
            )
        if not args.only_baseline:
            runs["this checkout"] = scale(counts, args.nodes, args.statefulset, None, args.timeout)
        if args.no_console_too:
            runs["--no-console"] = scale(
                counts, args.nodes, args.statefulset, None, args.timeout, ["--no-console"]
            )
        scale_table(args.nodes, args.statefulset, runs)
        return
    if args.quick:
        args.runs, args.startups, args.cold = 1, 3, 1

    rows = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        crds = write_crds(Path(tmp_dir) / "crds")
        warm = asyncio.run(timed(args.startups, lambda: testenv_once(crds)))
        clusters = asyncio.run(timed(args.startups, devcluster_once))
        peer = asyncio.run(timed(args.startups, lambda: bare_server_once(crds)))
        fresh = cold(crds, args.cold)
    rows.append(row("DevCluster start (server, controllers, node)", clusters["cluster"]))
    rows.append(row(f"TestEnv start: cluster + {len(KINDS)} CRDs established", warm["start"]))
    rows.append(row("TestEnv ready: + first list of a custom resource", warm["ready"], "< 1 s"))
    rows.append(row("TestEnv stop", warm["stop"]))
    rows.append(row("TestEnv ready, new process (imports included)", fresh["cold"], "< 1 s"))
    rows.append(row("  the whole process, interpreter start to exit", fresh["process"]))
    rows.append(row("peer: bare APIServer + the same CRDs, first list", peer["peer"]))

    runs = deployments(args.runs)
    rows.append(row("kubeforge dev: process start to serving", runs["serving"]))
    rows.append(row(f"kubectl create deployment --replicas={REPLICAS} returned", runs["created"]))
    rows.append(row(f"  -> {REPLICAS} pods Running", runs["running"]))

    header = ("measure", "median", "min", "runs", "target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for line in [header, *rows]:
        print(
            f"{line[0]:<{widths[0]}}  {line[1]:>{widths[1]}}  {line[2]:>{widths[2]}}  "
            f"{line[3]:>{widths[3]}}  {line[4]}"
        )


if __name__ == "__main__":
    main()
