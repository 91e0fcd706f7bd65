"""`kubeforge run` serves a project's webhooks on this machine and registers them with the
cluster it runs against: the Watcher example's sidecar injection from a shell, with
`kubeforge dev` and `kubeforge run` as separate processes and kubectl as the user."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeforge._api.machinery.certificates import generate_certificates
from kubeforge.testing import DevProcess, Kubectl, eventually
from tests.support import KUBEFORGE, ROOT, free_port

WATCHER = ROOT / "examples" / "watcher"
MUTATING = "mutatingwebhookconfiguration/watcher-local-mutating-webhook-configuration"
VALIDATING = "validatingwebhookconfiguration/watcher-local-validating-webhook-configuration"

pytestmark = pytest.mark.kubectl


async def start(*args: str, cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )


async def finish(proc: asyncio.subprocess.Process, sig: int = signal.SIGTERM) -> str:
    """Signal the process (if it still runs) and return what it printed."""
    if proc.returncode is None:
        proc.send_signal(sig)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode()


@pytest.fixture
async def dev(tmp_path: Path) -> AsyncIterator[Kubectl]:
    """`kubeforge dev` in its own process, and kubectl pointed at it."""
    kubeconfig = tmp_path / "kubeconfig"
    cache = tmp_path / "cache"
    cache.mkdir()
    dev = await DevProcess(kubeconfig=kubeconfig, cwd=tmp_path).start()
    try:
        yield Kubectl(kubeconfig, cache_dir=cache)
    finally:
        await dev.stop(signal.SIGINT)  # as Ctrl-C
        assert dev.returncode == 0, dev.output


async def url_of(kubectl: Kubectl) -> str:
    found = await kubectl.run("get", MUTATING, "-o", "json", check=False)
    if found.code != 0:
        return ""
    url: str = orjson.loads(found.out)["webhooks"][0]["clientConfig"]["url"]
    return url


def pod(name: str) -> str:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "annotations": {"watch.kubeforge.dev/inject": "sample"}},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]},
        }
    ).decode()


WATCHER_SAMPLE: dict[str, Any] = {
    "apiVersion": "watch.kubeforge.dev/v1alpha1",
    "kind": "Watcher",
    "metadata": {"name": "sample"},
    "spec": {
        "container": {"name": "sidecar", "image": "busybox:1.36"},
        "configData": {"greeting": "hello"},
    },
}


async def test_kubeforge_run_registers_the_watcher_webhooks_with_kubeforge_dev(
    dev: Kubectl, tmp_path: Path
) -> None:
    kubeconfig = str(dev.kubeconfig)
    installed = await start("install", "--dir", str(WATCHER), "--kubeconfig", kubeconfig, cwd=ROOT)
    assert await installed.wait() == 0
    common = ["--dir", str(WATCHER), "--kubeconfig", kubeconfig]
    common += ["--health-probe-bind-address", "0", "--webhook-port", "0"]
    run = await start("run", *common, cwd=tmp_path)
    try:
        first = await eventually(lambda: url_of(dev), timeout=60)
        assert first.startswith("https://127.0.0.1:") and first.endswith("/mutate--v1-pod")

        await dev.apply(orjson.dumps(WATCHER_SAMPLE).decode())
        await dev.run("wait", "--for=create", "configmap/sample-config", "--timeout=30s")
        await dev.apply(pod("web"))
        shown = await dev.json("get", "pod", "web")
        assert [c["name"] for c in shown["spec"]["containers"]] == ["app", "sidecar"]
        await dev.run("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
        header, row = (await dev.run("get", "pod", "web")).rows()
        assert dict(zip(header, row, strict=False))["READY"] == "2/2"

        # Killed without a chance to clean up: the registration stays, and with failurePolicy
        # Fail, pods that need the webhook are refused with kube-apiserver's message.
        run.kill()
        await run.wait()
        refused = await dev.run("apply", "-f", "-", stdin=pod("orphan"), check=False)
        assert refused.code == 1
        expected = (
            'failed calling webhook "mpod.watch.kubeforge.dev": failed to call webhook: '
            f'Post "{first}?timeout=10s"'
        )
        assert expected in refused.err
        assert "connect: connection refused" in refused.err

        # The next run takes the same names over, here with a certificate of our own
        # (--webhook-cert-path, whose ca.crt becomes the caBundle).
        certs = generate_certificates(common_name="watcher-webhook")
        cert_dir = tmp_path / "certs"
        cert_dir.mkdir()
        (cert_dir / "serving.pem").write_bytes(certs.cert_pem)
        (cert_dir / "serving-key.pem").write_bytes(certs.key_pem)
        (cert_dir / "ca.crt").write_bytes(certs.ca_pem)
        own = ["--webhook-cert-path", str(cert_dir), "--webhook-cert-name", "serving.pem"]
        own += ["--webhook-cert-key", "serving-key.pem"]
        run = await start("run", *common, *own, cwd=tmp_path)
        second = await eventually(
            lambda: _changed(dev, first), timeout=60, message="the registration replaced"
        )
        config = await dev.json("get", MUTATING)
        bundle = config["webhooks"][0]["clientConfig"]["caBundle"]
        assert base64.b64decode(bundle) == certs.ca_pem
        await dev.apply(pod("orphan"))
        shown = await dev.json("get", "pod", "orphan")
        assert [c["name"] for c in shown["spec"]["containers"]] == ["app", "sidecar"]
        assert second != first
    finally:
        out = await finish(run)
    assert run.returncode == 0, out
    assert "removed MutatingWebhookConfiguration watcher-local-mutating" in out, out
    # Gone with the run: nothing is left to refuse the cluster's pods.
    for name in (MUTATING, VALIDATING):
        gone = await dev.run("get", name, check=False)
        assert "NotFound" in gone.err, gone.out
    await dev.apply(pod("later"))


async def _changed(kubectl: Kubectl, old: str) -> str:
    url = await url_of(kubectl)
    return url if url and url != old else ""


async def test_a_missing_certificate_directory_ends_the_run_saying_so(
    tmp_path: Path, kubeconfig: Path
) -> None:
    missing = tmp_path / "no-such-dir"
    proc = await start(
        "run",
        "--dir",
        str(WATCHER),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        "--webhook-cert-path",
        str(missing),
        cwd=tmp_path,
    )
    output, _ = await asyncio.wait_for(proc.communicate(), 60)
    out = output.decode()
    assert proc.returncode == 1, out
    assert f"the webhook server cannot start: no ca.crt and no tls.crt in {missing}" in out, out
    assert "Traceback" not in out


async def handshake(host: str, port: int, trust: ssl.SSLContext) -> bool:
    """Whether a TLS handshake with host:port succeeds, verifying the certificate."""
    try:
        _, writer = await asyncio.open_connection(
            host, port, ssl=trust, server_hostname="localhost"
        )
    except (OSError, ssl.SSLError):
        return False
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return True


async def test_the_manager_command_serves_on_every_interface_and_registers_nothing(
    tmp_path: Path, kubeconfig: Path, kubectl: Kubectl
) -> None:
    # The container's entrypoint (main.main -> kubeforge.manager_main): in a pod the deployed
    # configurations call the webhook server through its Service, so it listens on every
    # interface with the certificate of --webhook-cert-path and registers nothing.
    crd = WATCHER / "config" / "crd" / "bases" / "watch.kubeforge.dev_watchers.yaml"
    await kubectl.run("apply", "--server-side", "-f", str(crd))
    await kubectl.run("wait", "--for=condition=Established", "crd/watchers.watch.kubeforge.dev")
    certs = generate_certificates(common_name="watcher-webhook")
    cert_dir = tmp_path / "serving-certs"
    cert_dir.mkdir()
    (cert_dir / "tls.crt").write_bytes(certs.cert_pem)
    (cert_dir / "tls.key").write_bytes(certs.key_pem)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "main.py",
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address=0",
        f"--webhook-port={port}",
        f"--webhook-cert-path={cert_dir}",
        cwd=WATCHER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        # 127.0.0.2 is this machine too, but only a server bound to every interface answers
        # there (Linux routes all of 127.0.0.0/8 to the loopback device).
        trust = certs.client_context()
        await eventually(lambda: handshake("127.0.0.2", port, trust), timeout=60)
        await eventually(lambda: handshake("127.0.0.1", port, trust), timeout=10)
    finally:
        out = await finish(proc)
    assert proc.returncode == 0, out
    assert f"serving webhooks on https://127.0.0.1:{port}" in out, out
    assert "registered" not in out, out
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        assert (await kubectl.run("get", kind, "-o", "name")).out == ""
