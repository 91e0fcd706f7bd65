"""Admission round trip: one webhook call on loopback (p50/p99), and creates/s through the API
server with one mutating and one validating webhook against creates/s with none.

    python benchmarks/admission.py [--seconds 5] [--connections 32] [--calls 2000]

The webhook server is a plain aiohttp HTTPS app in its own process (what an operator's
webhook server is): the mutating webhook answers a one-operation JSON patch, the validating
one allows. A single call is timed with the API server's own webhook client (the AdmissionReview
built, posted over a kept-alive TLS connection, the answer checked), one call at a time. Creates
are driven by `wrk` over HTTPS with keep-alive against a fresh API server process for each
configuration; on a two-core machine the webhook server shares the cores with the API server
and wrk, as it would on a developer's machine.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

CREATE_LUA = """
local counter = 0
local thread_id = 0
setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
request = function()
  counter = counter + 1
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-' .. tid .. '-' ..
    counter .. '","labels":{"app":"bench"}},"data":{"key":"' .. string.rep("x", 200) .. '"}}'
  return wrk.format("POST", "/api/v1/namespaces/default/configmaps", nil, body)
end
"""

PATCH = base64.b64encode(
    b'[{"op":"add","path":"/metadata/labels/admitted","value":"yes"}]'
).decode()


# Server processes ------------------------------------------------------------------------


async def serve_webhooks(info_path: Path) -> None:
    """The webhook server: /mutate patches, /validate allows."""
    import orjson
    from aiohttp import web

    from kubeforge._apiserver.tls import generate_certificates

    certs = generate_certificates()

    def answer(review: dict[str, Any], response: dict[str, Any]) -> web.Response:
        body = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], **response},
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def mutate(request: web.Request) -> web.Response:
        review = orjson.loads(await request.read())
        return answer(review, {"allowed": True, "patchType": "JSONPatch", "patch": PATCH})

    async def validate(request: web.Request) -> web.Response:
        return answer(orjson.loads(await request.read()), {"allowed": True})

    app = web.Application()
    app.router.add_post("/mutate", mutate)
    app.router.add_post("/validate", validate)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certs.server_context(), backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    ca = base64.b64encode(certs.ca_pem).decode()
    info_path.write_text(json.dumps({"url": f"https://127.0.0.1:{port}", "ca": ca}))
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


def start(kind: str, tmp: Path, name: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    info = tmp / f"{name}.json"
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


async def webhook_calls(hooks: dict[str, Any], path: str, calls: int) -> list[float]:
    """Seconds per call, one call at a time, the way the API server calls a webhook."""
    from kubeforge._apiserver.admission.attributes import Attributes
    from kubeforge._apiserver.admission.matching import Match
    from kubeforge._apiserver.admission.review import read_answer, review_request
    from kubeforge._apiserver.request.user import ADMIN
    from kubeforge._apiserver.types.registry import Registry
    from kubeforge._apiserver.webhookclient.client import ClientConfig, WebhookClient

    rt = Registry().get("", "v1", "configmaps")
    assert rt is not None
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"app": "bench"}},
        "data": {"key": "x" * 200},
    }
    attrs = Attributes(
        "CREATE", rt, "", ("", "v1", "ConfigMap"), "c", "default", obj, None, None, False, ADMIN
    )
    match = Match(rt, attrs.kind)
    config = ClientConfig(hooks["url"] + path, None, base64.b64decode(hooks["ca"]), None)

    def no_services(namespace: str, name: str, port: int) -> tuple[str, int]:
        raise LookupError("no services here")

    client = WebhookClient(no_services)
    timings: list[float] = []
    try:
        for i in range(calls + 50):
            started = time.perf_counter()
            uid = f"bench-{i}"
            body = review_request("v1", uid, attrs, match, obj, None)
            reply = await client.post(config, body, 10)
            read_answer(reply, "v1", uid, mutating=path == "/mutate")
            if i >= 50:  # the first calls open the connection and warm up
                timings.append(time.perf_counter() - started)
    finally:
        await client.close()
    return timings


async def install_webhooks(info: dict[str, Any], hooks: dict[str, Any]) -> None:
    ctx = ssl.create_default_context(cafile=info["ca"])
    headers = {"Authorization": f"Bearer {info['token']}"}
    base = info["url"] + "/apis/admissionregistration.k8s.io/v1/"

    def hook(name: str, path: str) -> dict[str, Any]:
        return {
            "name": name,
            "clientConfig": {"url": hooks["url"] + path, "caBundle": hooks["ca"]},
            "rules": [
                {
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["configmaps"],
                }
            ],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }

    configs = [
        ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", "/mutate"),
        ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "/validate"),
    ]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        for plural, kind, path in configs:
            body = {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": "bench"},
                "webhooks": [hook(f"{path.strip('/')}.bench.example.com", path)],
            }
            async with session.post(base + plural, json=body, headers=headers) as r:
                assert r.status == 201, await r.text()
        # One create through both webhooks, checked, before the load starts.
        url = info["url"] + "/api/v1/namespaces/default/configmaps"
        probe = {"metadata": {"name": "probe", "labels": {"app": "bench"}}, "data": {}}
        async with session.post(url, json=probe, headers=headers) as r:
            created = await r.json()
            assert r.status == 201, created
            assert created["metadata"]["labels"]["admitted"] == "yes", created


_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def wrk(url: str, token: str, seconds: int, connections: int) -> tuple[float, float, float]:
    """(requests/s, p50 seconds, p99 seconds) that wrk measured; a failed request fails."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(CREATE_LUA)
        f.write(f'\nwrk.headers["Authorization"] = "Bearer {token}"\n')
        f.write('wrk.headers["Content-Type"] = "application/json"\n')
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", f.name, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad and int(bad.group(1)) > 0:
        raise RuntimeError(f"{bad.group(1)} failed requests:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rate, out

    def percentile(p: str) -> float:
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)\b", out)
        assert m, out
        return float(m.group(1)) * _UNITS[m.group(2)]

    return float(rate.group(1)), percentile("50"), percentile("99")


def creates(tmp: Path, name: str, args: argparse.Namespace, hooks: dict[str, Any] | None) -> Any:
    proc, info = start("kubeforge", tmp, name)
    try:
        if hooks is not None:
            asyncio.run(install_webhooks(info, hooks))
        return wrk(info["url"], info["token"], args.seconds, args.connections)
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--serve", choices=["webhooks", "kubeforge"])
    parser.add_argument("--info", type=Path)
    args = parser.parse_args()

    if args.serve == "webhooks":
        asyncio.run(serve_webhooks(args.info))
        return
    if args.serve == "kubeforge":
        asyncio.run(serve_kubeforge(args.info))
        return

    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk (make bench installs it)")
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        webhooks, hooks = start("webhooks", tmp, "webhooks")
        try:
            for path in ("/validate", "/mutate"):
                timings = asyncio.run(webhook_calls(hooks, path, args.calls))
                cuts = statistics.quantiles(timings, n=100)
                what = f"one {path.strip('/')} webhook call, loopback"
                rows.append((what, f"{cuts[49] * 1e3:.2f} ms", f"p99 {cuts[98] * 1e3:.2f} ms"))
            plain, plain_p50, plain_p99 = creates(tmp, "plain", args, None)
            admitted, adm_p50, adm_p99 = creates(tmp, "admitted", args, hooks)
        finally:
            stop(webhooks)
    rows.append(
        (
            "creates/s, no webhooks",
            f"{plain:,.0f}",
            f"p50 {plain_p50 * 1e3:.1f} ms, p99 {plain_p99 * 1e3:.1f} ms",
        )
    )
    rows.append(
        (
            "creates/s, 1 mutating + 1 validating webhook",
            f"{admitted:,.0f}",
            f"p50 {adm_p50 * 1e3:.1f} ms, p99 {adm_p99 * 1e3:.1f} ms, "
            f"{admitted / plain:.2f}x of no webhooks",
        )
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>10}  notes")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>10}  {note}")


if __name__ == "__main__":
    main()
