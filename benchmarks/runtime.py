"""Controller runtime: cache memory, initial sync, event-to-reconcile latency, work queue,
and the requests an operator makes to converge objects that exist before it starts.

    python benchmarks/runtime.py [--quick]

The API server runs in its own process, seeded in-process with 1 KiB ConfigMaps; the
informer, cache and controller under test run in this process and talk to it over HTTPS as
they would to a cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PAD = "x" * 780  # a ConfigMap of about 1 KiB as JSON


async def serve(info: Path, count: int) -> None:
    """The server process: seed `count` ConfigMaps, write a kubeconfig, serve until killed."""
    from kubeforge._apiserver.handlers.call import Call
    from kubeforge._apiserver.handlers.writes import run_now
    from kubeforge._apiserver.request.info import RequestInfo
    from kubeforge.apiserver import APIServer, tune_gc

    server = APIServer(history_size=200_000)
    rt = server.registry.get("", "v1", "configmaps")
    assert rt is not None
    request = RequestInfo("", "v1", "default", "configmaps", None, None, "create")
    for i in range(count):
        body = {"metadata": {"name": f"cm-{i:06}", "labels": {"app": "bench"}}, "data": {"k": PAD}}
        run_now(server.writes.create(Call(request, rt, {}), body))
    await server.start()
    tune_gc()
    server.write_kubeconfig(info.with_suffix(".kubeconfig"))
    info.write_text(json.dumps({"ready": True}))
    await asyncio.Event().wait()


def start_server(tmp: Path, count: int) -> tuple[subprocess.Popen[bytes], Path]:
    info = tmp / f"server-{count}.json"
    info.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(count), "--info", str(info)],
    )
    deadline = time.monotonic() + 300
    while not info.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.05)
    return proc, info.with_suffix(".kubeconfig")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def sync_and_measure(kubeconfig: Path, count: int, trace: bool) -> dict[str, float]:
    """Initial sync time (untraced runs) or the cache's bytes per object (traced runs)."""
    from kubeforge import Client
    from kubeforge._runtime.informer import Informer
    from kubeforge.client import load_kubeconfig

    async with Client(load_kubeconfig(kubeconfig)) as client:
        await client.resource("v1/ConfigMap")  # discovery outside the measured part
        gc.collect()
        rss_before = rss()
        if trace:
            tracemalloc.start()
        informer = Informer(client, "v1/ConfigMap", namespace="default")
        started = time.perf_counter()
        informer.start()
        await informer.wait_synced()
        elapsed = time.perf_counter() - started
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] if trace else 0
        tracemalloc.stop()
        rss_after = rss()
        sizes = [len(data) for _, data in informer.store.items()]
        await informer.stop()
    return {
        "sync_seconds": elapsed,
        "json_bytes": sum(sizes) / len(sizes),
        "traced_per_object": traced / count,
        "rss_per_object": (rss_after - rss_before) / count,
    }


async def latency(kubeconfig: Path, samples: int) -> tuple[float, float, float, float]:
    """p50/p99 of event arrival -> reconcile start, and of write acknowledged -> reconcile."""
    from kubeforge import Client
    from kubeforge._runtime.cache import Cache
    from kubeforge._runtime.controller import Controller
    from kubeforge._runtime.handler import EnqueueRequestForObject
    from kubeforge._runtime.predicate import Predicate
    from kubeforge._runtime.reconcile import Reconciler, Request, Result
    from kubeforge.client import load_kubeconfig

    arrived: dict[str, float] = {}
    runtime: list[float] = []
    reconciled: dict[str, asyncio.Future[float]] = {}

    class Stamp(Predicate):
        def create(self, obj: Any) -> bool:
            arrived[obj["metadata"]["name"]] = time.perf_counter()
            return True

    class Timer(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            now = time.perf_counter()
            if request.name in arrived:
                runtime.append(now - arrived.pop(request.name))
                future = reconciled.get(request.name)
                if future is not None and not future.done():
                    future.set_result(now)
            return Result()

    async with Client(load_kubeconfig(kubeconfig)) as client:
        cache = Cache(client, namespace="lat")
        controller = Controller("latency", Timer())
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lat"}})
        controller.watch(cache.informer_for("v1/ConfigMap"), EnqueueRequestForObject(), [Stamp()])
        await cache.start()
        await controller.start()
        end_to_end = []
        loop = asyncio.get_running_loop()
        for i in range(samples):
            name = f"l-{i}"
            reconciled[name] = loop.create_future()
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
            await client.create(body, namespace="lat")
            acked = time.perf_counter()
            done = await asyncio.wait_for(reconciled[name], 10)
            end_to_end.append(max(done - acked, 0.0))
        await controller.stop()
        await cache.stop()
    runtime.sort()
    end_to_end.sort()

    def pct(values: list[float], p: float) -> float:
        return values[min(int(len(values) * p), len(values) - 1)] * 1000

    return pct(runtime, 0.5), pct(runtime, 0.99), pct(end_to_end, 0.5), pct(end_to_end, 0.99)


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.bench.kubeforge.dev"},
    "spec": {
        "group": "bench.kubeforge.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer"}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}
WIDGET = "bench.kubeforge.dev/v1/Widget"


async def converge(kubeconfig: Path, count: int) -> dict[str, float]:
    """`count` custom objects exist before the manager starts; the controller creates a
    ConfigMap for each and records its status. Wall time and the requests it took."""
    from kubeforge import Client, NotFound
    from kubeforge._runtime.manager import Manager
    from kubeforge._runtime.reconcile import Reconciler, Request, Result
    from kubeforge.client import load_kubeconfig
    from kubeforge.testing import eventually

    class ConfigMapAndStatus(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            try:
                obj = await self.client.get(WIDGET, request.name, namespace=request.namespace)
            except NotFound:
                return None
            name = f"{request.name}-config"
            want = {"size": str(obj["spec"]["size"])}
            try:
                config = await self.client.get("v1/ConfigMap", name, namespace=request.namespace)
            except NotFound:
                owner = {
                    "apiVersion": "bench.kubeforge.dev/v1",
                    "kind": "Widget",
                    "name": request.name,
                    "uid": obj["metadata"]["uid"],
                    "controller": True,
                }
                meta = {"name": name, "namespace": request.namespace, "ownerReferences": [owner]}
                config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": want}
                await self.client.create(config)
            else:
                if config.get("data") != want:
                    config["data"] = want
                    await self.client.update(config)
            if (obj.get("status") or {}).get("phase") != "Ready":
                obj["status"] = {"phase": "Ready"}
                await self.client.update_status(obj)
            return None

    config = load_kubeconfig(kubeconfig)
    async with Client(config) as client:
        # create() fills in what the server stored: each run creates from a fresh copy.
        await client.create(copy.deepcopy(CRD))
        await client.wait_established([CRD["metadata"]["name"]])
        gate = asyncio.Semaphore(32)

        async def make(i: int) -> None:
            async with gate:
                body = {
                    "apiVersion": "bench.kubeforge.dev/v1",
                    "kind": "Widget",
                    "metadata": {"name": f"w-{i:06}", "namespace": "default"},
                    "spec": {"size": i % 7},
                }
                await client.create(body)

        await asyncio.gather(*(make(i) for i in range(count)))
    manager = Manager(config)
    controller = (
        manager.controller().for_(WIDGET).owns("v1/ConfigMap").complete(ConfigMapAndStatus())
    )
    done = asyncio.Event()
    ready = 0

    def count_ready(old: dict[str, Any], new: dict[str, Any]) -> None:
        nonlocal ready
        if (new.get("status") or {}).get("phase") == "Ready" and (old.get("status") or {}).get(
            "phase"
        ) != "Ready":
            ready += 1
            if ready == count:
                done.set()

    from kubeforge._runtime.informer import HandlerFuncs

    manager.cache.informer_for(WIDGET).add_handler(HandlerFuncs(update=count_ready))
    started = time.perf_counter()
    task = asyncio.create_task(manager.start())
    await asyncio.wait_for(done.wait(), 600)
    await eventually(
        lambda: not len(controller.queue) and not controller.queue.unfinished_work_seconds(),
        timeout=60,
        interval=0.01,
    )
    elapsed = time.perf_counter() - started
    counts: dict[tuple[str, str], float] = {}
    for family in manager.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "rest_client_requests_total":
                key = (sample.labels["method"], sample.labels["code"])
                counts[key] = counts.get(key, 0) + sample.value
    manager.stop()
    await task
    writes = sum(v for (method, _), v in counts.items() if method != "GET")
    conflicts = sum(v for (_, code), v in counts.items() if code == "409")
    return {"seconds": elapsed, "writes": writes, "conflicts": conflicts}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--serve", type=int)
    parser.add_argument("--info", type=Path)
    args = parser.parse_args()
    if args.serve is not None:
        asyncio.run(serve(args.info, args.serve))
        return

    from workqueue import best_of, distinct_keys, requests  # type: ignore[import-not-found]

    sizes = [1_000, 5_000] if args.quick else [10_000, 50_000, 100_000]
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for count in sizes:
            proc, kubeconfig = start_server(tmp, count)
            try:
                timed = asyncio.run(sync_and_measure(kubeconfig, count, trace=False))
                traced = (
                    asyncio.run(sync_and_measure(kubeconfig, count, trace=True))
                    if count in sizes[:2]
                    else None
                )
                if count == sizes[0]:
                    lat = asyncio.run(latency(kubeconfig, 300 if args.quick else 2000))
            finally:
                proc.kill()
                proc.wait()
            seconds = timed["sync_seconds"]
            rows.append(
                (
                    f"initial sync, {count:,} objects",
                    f"{seconds:.2f} s",
                    f"{count / seconds:,.0f} objects/s",
                )
            )
            if traced is not None:
                ratio = traced["traced_per_object"] / traced["json_bytes"]
                rows.append(
                    (
                        f"cache bytes/object at {count:,} (JSON {traced['json_bytes']:.0f} B)",
                        f"{traced['traced_per_object']:,.0f} B traced",
                        f"{ratio:.2f}x JSON; RSS {timed['rss_per_object']:,.0f} B",
                    )
                )
        rows.append(("event -> reconcile latency", f"p50 {lat[0]:.2f} ms", f"p99 {lat[1]:.2f} ms"))
        rows.append(
            ("write acked -> reconcile latency", f"p50 {lat[2]:.2f} ms", f"p99 {lat[3]:.2f} ms")
        )
        for count in [1_000] if args.quick else [1_000, 5_000]:
            proc, kubeconfig = start_server(tmp, 0)
            try:
                result = asyncio.run(converge(kubeconfig, count))
            finally:
                proc.kill()
                proc.wait()
            rows.append(
                (
                    f"converge {count:,} pre-existing objects",
                    f"{result['seconds']:.2f} s",
                    f"{result['writes'] / count:.2f} writes/object "
                    f"(minimum 2), {result['conflicts']:.0f} conflicts",
                )
            )
        keys = requests(200_000)
        _, taken, best = asyncio.run(best_of(3, lambda: distinct_keys(keys)))
        rate = taken / best
        rows.append(("work queue add+get+done", f"{rate:,.0f} /s", "distinct keys"))

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>16}  detail")
    for name, value, detail in rows:
        print(f"{name:<{width}}  {value:>16}  {detail}")


if __name__ == "__main__":
    main()
