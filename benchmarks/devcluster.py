"""Development cluster: a 100-replica Deployment to 100 Running pods, and TestEnv startup.

    .venv/bin/python benchmarks/devcluster.py [--runs 5] [--startups 20] [--quick]

Deployment: every run starts `kubeforge dev` in a process of its own, as a user would, and
times `kubectl create deployment web --image=nginx --replicas=100` until the 100th pod is
reported Running, seen through a watch from this process.

TestEnv: start -> development cluster running -> CRDs established -> client ready (its
first list of a custom resource answered). Warm runs are in this process after a first
start; cold runs are a fresh interpreter each, imports included. The peer is a bare
APIServer given the same CRDs: envtest's shape, without controllers or nodes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
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
    args = parser.parse_args()
    if args.cold_child:
        cold_child(args.cold_child)
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
