"""Conversion webhooks: listing 1,000 custom objects in the version they are stored in, and in
another version that the conversion webhook converts (one ConversionReview per list).

    python benchmarks/conversion.py [--objects 1000] [--lists 30]

The CRD's two versions name a field differently (v1 `color`, v2 `colour`); v1 is stored. The
conversion webhook is a `kubeforge.webhook.WebhookServer` in its own process, the server a
manager runs, serving the hub and its spoke with `server.register_conversion(Gadget)` (what
`manager.webhook_for(Gadget).complete()` registers), without a manager around it. The API
server is a fresh process; the lists are sequential GETs over one kept-alive HTTPS
connection, each answer read in full.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import aiohttp

import kubeforge
import kubeforge.conversion
import kubeforge.webhook

GROUP = "bench.kubeforge.dev"


class GadgetSpec(kubeforge.Model):
    size: int = 1
    color: str = "red"


class GadgetSpecV2(kubeforge.Model):
    size: int = 1
    colour: str = "red"


@kubeforge.resource(group=GROUP, version="v1")
class Gadget(kubeforge.Resource[GadgetSpec, GadgetSpec], kubeforge.conversion.Hub):
    """The hub and storage version."""


@kubeforge.resource(group=GROUP, version="v2", kind="Gadget", storage=False)
class GadgetV2(
    kubeforge.Resource[GadgetSpecV2, GadgetSpecV2], kubeforge.conversion.Convertible[Gadget]
):
    def to_hub(self) -> Gadget:
        spec = GadgetSpec(size=self.spec.size, color=self.spec.colour)
        return Gadget(metadata=self.metadata, spec=spec)

    @classmethod
    def from_hub(cls, hub: Gadget) -> Self:
        return cls(
            metadata=hub.metadata, spec=GadgetSpecV2(size=hub.spec.size, colour=hub.spec.color)
        )


# Server processes ------------------------------------------------------------------------


async def serve_webhook(info_path: Path) -> None:
    """A webhook server converting Gadgets at /convert."""
    from kubeforge._apiserver.tls import generate_certificates

    certs = generate_certificates()
    directory = Path(tempfile.mkdtemp())
    (directory / "tls.crt").write_bytes(certs.cert_pem)
    (directory / "tls.key").write_bytes(certs.key_pem)
    server = kubeforge.webhook.WebhookServer(host="127.0.0.1", port=0, cert_dir=directory)
    server.register_conversion(Gadget)
    await server.start()
    ca = base64.b64encode(certs.ca_pem).decode()
    info_path.write_text(json.dumps({"url": server.url, "ca": ca}))
    await asyncio.Event().wait()


async def serve_kubeforge(info_path: Path) -> None:
    from kubeforge.apiserver import APIServer, tune_gc

    server = APIServer()
    await server.start()
    tune_gc()  # as `kubeforge apiserver` does
    ca = info_path.with_suffix(".ca")
    ca.write_bytes(server.ca_pem)
    info_path.write_text(json.dumps({"url": server.url, "token": server.token, "ca": str(ca)}))
    await asyncio.Event().wait()


def start(kind: str, tmp: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    info = tmp / f"{kind}.json"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--info", str(info)])
    deadline = time.monotonic() + 30
    while not info.exists() or not info.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"{kind} server did not start")
        time.sleep(0.05)
    return proc, json.loads(info.read_text())


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()


# Measurements ----------------------------------------------------------------------------


def crd(hook: dict[str, Any]) -> dict[str, Any]:
    from kubeforge._api.crd import crd_for

    definition = crd_for([Gadget, GadgetV2])
    definition["spec"]["conversion"]["webhook"]["clientConfig"] = {
        "url": hook["url"] + "/convert",
        "caBundle": hook["ca"],
    }
    return definition


async def measure(
    api: dict[str, Any], hook: dict[str, Any], objects: int, lists: int
) -> dict[str, list[float]]:
    """Seconds per list of every object, by version listed."""
    ctx = ssl.create_default_context(cafile=api["ca"])
    headers = {"Authorization": f"Bearer {api['token']}"}
    base = api["url"]
    connector = aiohttp.TCPConnector(ssl=ctx, limit=1)
    timings: dict[str, list[float]] = {"v1": [], "v2": []}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        crds = f"{base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        async with session.post(crds, json=crd(hook)) as r:
            assert r.status == 201, await r.text()
        collection = f"{base}/apis/{GROUP}/v1/namespaces/default/gadgets"
        while True:
            async with session.get(collection) as r:
                if r.status == 200:
                    break
            await asyncio.sleep(0.05)
        for i in range(objects):
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Gadget",
                "metadata": {"name": f"g-{i:05d}", "labels": {"app": "bench"}},
                "spec": {"size": i, "color": "red"},
            }
            async with session.post(collection, json=body) as r:
                assert r.status == 201, await r.text()
        # One list of each checked before the timed ones.
        for version, field in (("v1", "color"), ("v2", "colour")):
            async with session.get(collection.replace("/v1/", f"/{version}/")) as r:
                listed = await r.json()
                assert r.status == 200, listed
                assert len(listed["items"]) == objects
                assert all(item["spec"][field] == "red" for item in listed["items"])
        for _ in range(lists):
            for version in ("v1", "v2"):
                url = collection.replace("/v1/", f"/{version}/")
                started = time.perf_counter()
                async with session.get(url) as r:
                    await r.read()
                    assert r.status == 200
                timings[version].append(time.perf_counter() - started)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--lists", type=int, default=30)
    parser.add_argument("--serve", choices=["webhook", "kubeforge"])
    parser.add_argument("--info", type=Path)
    args = parser.parse_args()

    if args.serve == "webhook":
        asyncio.run(serve_webhook(args.info))
        return
    if args.serve == "kubeforge":
        asyncio.run(serve_kubeforge(args.info))
        return

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        webhook, hook = start("webhook", tmp)
        apiserver, api = start("kubeforge", tmp)
        try:
            timings = asyncio.run(measure(api, hook, args.objects, args.lists))
        finally:
            stop(apiserver)
            stop(webhook)

    def cut(values: list[float]) -> tuple[float, float]:
        quantiles = statistics.quantiles(values, n=100)
        return quantiles[49], quantiles[98]

    stored, converted = cut(timings["v1"]), cut(timings["v2"])
    n = f"{args.objects:,}"
    rows = [
        (f"list {n} objects in the storage version (v1)", stored, ""),
        (
            f"list {n} objects in v2, converted by the webhook",
            converted,
            f"{converted[0] / stored[0]:.1f}x of the storage version at p50",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'p50':>9}  {'p99':>9}  notes")
    for name, (p50, p99), note in rows:
        print(f"{name:<{width}}  {p50 * 1e3:>6.1f} ms  {p99 * 1e3:>6.1f} ms  {note}")


if __name__ == "__main__":
    main()
