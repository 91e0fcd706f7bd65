"""The manager: probes, metrics, leader election between two managers, graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubeforge import Client
from kubeforge._api.machinery.certificates import generate_certificates
from kubeforge._client.transport import ClientClosed
from kubeforge._runtime.controller import ControllerOptions
from kubeforge._runtime.leaderelection import LeadershipLost
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge._webhook.review import AdmissionResponse
from kubeforge._webhook.server import WebhookServer
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually
from tests.support import ROOT

CM = "v1/ConfigMap"


class Recorder(Reconciler):
    def __init__(self) -> None:
        self.names: list[str] = []

    async def reconcile(self, request: Request) -> Result:
        self.names.append(request.name)
        return Result()


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def fetch(address: tuple[str, int], path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{address[1]}{path}"
    async with aiohttp.ClientSession() as session, session.get(url) as r:
        return r.status, await r.text()


async def test_probes_and_metrics_are_served(kubeconfig: Path, api: Client) -> None:
    mgr = Manager(
        load_kubeconfig(kubeconfig),
        health_probe_bind_address="127.0.0.1:0",
        metrics_bind_address="127.0.0.1:0",
    )
    rec = Recorder()
    mgr.controller().for_(CM).complete(rec)
    task = asyncio.create_task(mgr.start())
    try:

        async def ready() -> bool:
            return "probes" in mgr.bound and (await fetch(mgr.bound["probes"], "/readyz"))[0] == 200

        await eventually(ready)
        assert await fetch(mgr.bound["probes"], "/healthz") == (200, "ok")
        await api.create(cm("m1"))

        async def reconciled() -> bool:
            return "m1" in rec.names

        await eventually(reconciled)
        status, text = await fetch(mgr.bound["metrics"], "/metrics")
        assert status == 200
        for name in (
            'controller_runtime_reconcile_total{controller="configmap",result="success"}',
            'controller_runtime_reconcile_total{controller="configmap",result="error"} 0',
            'controller_runtime_reconcile_errors_total{controller="configmap"} 0',
            'controller_runtime_max_concurrent_reconciles{controller="configmap"} 4',
            'controller_runtime_active_workers{controller="configmap"}',
            "controller_runtime_reconcile_time_seconds_bucket",
            'workqueue_adds_total{controller="configmap",name="configmap"}',
            "workqueue_depth{",
            "workqueue_queue_duration_seconds_bucket",
            "workqueue_work_duration_seconds_bucket",
            'workqueue_retries_total{controller="configmap",name="configmap"}',
            "workqueue_unfinished_work_seconds{",
            "workqueue_longest_running_processor_seconds{",
            'rest_client_requests_total{code="200",host=',
            "process_cpu_seconds_total",
        ):
            assert name in text, name
        line = next(
            ln
            for ln in text.splitlines()
            if ln.startswith(
                'controller_runtime_reconcile_total{controller="configmap",result="success"}'
            )
        )
        assert float(line.split()[-1]) >= 1
    finally:
        mgr.stop()
        await task


async def test_readyz_fails_until_caches_sync(kubeconfig: Path) -> None:
    mgr = Manager(load_kubeconfig(kubeconfig), health_probe_bind_address="127.0.0.1:0")
    mgr.add_readyz_check("custom", lambda: False)
    mgr.controller().for_(CM).complete(Recorder())
    task = asyncio.create_task(mgr.start())
    try:

        async def up() -> bool:
            return "probes" in mgr.bound and mgr.synced

        await eventually(up)
        status, text = await fetch(mgr.bound["probes"], "/readyz")
        assert status == 500 and "custom" in text
    finally:
        mgr.stop()
        await task


def elected_manager(kubeconfig: Path, identity: str) -> tuple[Manager, Recorder]:
    mgr = Manager(
        load_kubeconfig(kubeconfig),
        leader_election=True,
        leader_election_id="demo-lock",
        lease_duration=1.5,
        renew_deadline=1.0,
        retry_period=0.2,
        identity=identity,
    )
    rec = Recorder()
    mgr.controller().for_(CM).complete(rec)
    return mgr, rec


async def test_only_the_leader_reconciles_and_the_other_takes_over(
    kubeconfig: Path, api: Client
) -> None:
    first, first_rec = elected_manager(kubeconfig, "first")
    second, second_rec = elected_manager(kubeconfig, "second")
    first_task = asyncio.create_task(first.start())

    async def first_leads() -> bool:
        return first.leading and all(c.started for c in first.controllers.values())

    await eventually(first_leads)
    second_task = asyncio.create_task(second.start())

    async def second_synced() -> bool:
        return second.synced

    await eventually(second_synced)
    await api.create(cm("a"))

    async def first_did_it() -> bool:
        return "a" in first_rec.names

    await eventually(first_did_it)
    assert not second.leading and second_rec.names == []

    # The leader stops (and hands the lease over); the other one takes over promptly.
    stopped_at = time.monotonic()
    first.stop()
    await first_task

    async def second_leads() -> bool:
        return second.leading and all(c.started for c in second.controllers.values())

    await eventually(second_leads, timeout=10)
    assert time.monotonic() - stopped_at <= 1.5 + 0.2 + 1.0  # lease + retry period, with slack
    await api.create(cm("b"))

    async def second_did_it() -> bool:
        return "b" in second_rec.names

    await eventually(second_did_it)
    assert "b" not in first_rec.names
    lease = await api.get("coordination.k8s.io/v1/Lease", "demo-lock")
    assert lease["spec"]["holderIdentity"] == "second"
    second.stop()
    await second_task


async def test_a_crashed_leader_is_replaced_within_the_lease_duration(
    kubeconfig: Path, api: Client
) -> None:
    first, _ = elected_manager(kubeconfig, "first")
    first.release_on_cancel = False  # a crash: the lease is never released
    second, second_rec = elected_manager(kubeconfig, "second")
    first_task = asyncio.create_task(first.start())

    async def first_leads() -> bool:
        return first.leading

    await eventually(first_leads)
    second_task = asyncio.create_task(second.start())

    async def second_synced() -> bool:
        return second.synced

    await eventually(second_synced)
    crashed_at = time.monotonic()
    first.stop()
    await first_task

    async def second_leads() -> bool:
        return second.leading

    await eventually(second_leads, timeout=10)
    # Takeover waits for the lease to expire: at most lease duration + retry period (+ slack).
    waited = time.monotonic() - crashed_at
    assert waited <= 2.0 + 0.2 * 1.2 + 1.0
    second.stop()
    await second_task
    assert second_rec is not None


async def test_losing_leadership_stops_the_manager(kubeconfig: Path, api: Client) -> None:
    mgr, _ = elected_manager(kubeconfig, "me")
    task = asyncio.create_task(mgr.start())

    async def leads() -> bool:
        return mgr.leading

    await eventually(leads)
    # Someone else grabs the lease (as after a partition); renewals now fail.
    lease = await api.get("coordination.k8s.io/v1/Lease", "demo-lock")
    lease["spec"]["holderIdentity"] = "intruder"
    lease["spec"]["renewTime"] = "2099-01-01T00:00:00.000000Z"
    await api.update(lease)
    with pytest.raises(LeadershipLost):
        await asyncio.wait_for(task, 10)


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, pathlib
    import kubeforge
    from kubeforge.client import load_kubeconfig

    marker = pathlib.Path(sys.argv[2])

    class Slow(kubeforge.Reconciler):
        async def reconcile(self, request):
            marker.write_text("started")
            await asyncio.sleep(1.0)
            marker.write_text("finished")
            return kubeforge.Result()

    async def main():
        manager = kubeforge.Manager(load_kubeconfig(sys.argv[1]))
        manager.controller().for_("v1/ConfigMap").complete(Slow())
        await manager.run()

    asyncio.run(main())
    """
)


async def test_sigterm_shuts_down_gracefully_letting_reconciles_finish(
    kubeconfig: Path, api: Client, tmp_path: Path
) -> None:
    script = tmp_path / "slow_operator.py"
    script.write_text(SCRIPT)
    marker = tmp_path / "marker"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(kubeconfig),
        str(marker),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    try:
        await api.create(cm("work"))

        async def started() -> bool:
            return marker.exists() and marker.read_text() == "started"

        try:
            await eventually(started, timeout=30)
        except AssertionError:
            if proc.returncode is None:
                proc.kill()
            out, _ = await proc.communicate()
            raise AssertionError(f"the operator never reconciled:\n{out.decode()}") from None
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 35)
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode == 0, out.decode()
    assert marker.read_text() == "finished"  # the in-flight reconcile completed
    assert time.monotonic() - began < 30


async def test_a_dead_watch_is_restarted_and_counted(
    server: Any, kubeconfig: Path, api: Client
) -> None:
    mgr = Manager(load_kubeconfig(kubeconfig), metrics_bind_address="127.0.0.1:0")
    rec = Recorder()
    mgr.controller().for_(CM).complete(rec)
    task = asyncio.create_task(mgr.start())
    try:

        async def running() -> bool:
            return mgr.synced and all(c.started for c in mgr.controllers.values())

        await eventually(running)
        await server.stop()  # every connection drops
        await server.start()
        await api.create(cm("after-restart"))

        async def converged() -> bool:
            return "after-restart" in rec.names

        await eventually(converged, timeout=20)
        _, text = await fetch(mgr.bound["metrics"], "/metrics")
        line = next(
            ln
            for ln in text.splitlines()
            if ln.startswith('kubeforge_informer_watch_restarts_total{resource="v1/ConfigMap"}')
        )
        assert float(line.split()[-1]) >= 1
    finally:
        mgr.stop()
        await task


async def test_a_failing_runnable_stops_the_manager_with_its_error(kubeconfig: Path) -> None:
    mgr = Manager(load_kubeconfig(kubeconfig))
    recorder = Recorder()
    mgr.controller().for_(CM).complete(recorder)
    stopped_cleanly: list[bool] = []

    async def patient(stopping: asyncio.Event) -> None:
        await stopping.wait()
        stopped_cleanly.append(True)

    started = asyncio.Event()

    async def broken(stopping: asyncio.Event) -> None:
        started.set()
        raise RuntimeError("the runnable broke")

    mgr.add(patient)
    mgr.add(broken)
    assert [name.rsplit(".", 1)[-1] for name in mgr.runnables] == ["patient", "broken"]
    with pytest.raises(RuntimeError, match="the runnable broke"):
        await asyncio.wait_for(mgr.start(), 30)
    assert started.is_set()
    assert stopped_cleanly == [True]  # the others were told to stop, and did
    assert not mgr.running.is_set()


async def test_a_runnable_that_returns_early_leaves_the_manager_running(kubeconfig: Path) -> None:
    mgr = Manager(load_kubeconfig(kubeconfig))
    ran = asyncio.Event()

    async def once(stopping: asyncio.Event) -> None:
        ran.set()

    mgr.add(once)
    task = asyncio.create_task(mgr.start())
    await asyncio.wait_for(ran.wait(), 30)
    await asyncio.wait_for(mgr.running.wait(), 30)
    assert not task.done()
    mgr.stop()
    await asyncio.wait_for(task, 30)


def serve_a_webhook(mgr: Manager, cert_dir: Path) -> None:
    """Give the manager a webhook (so it starts its server) on a free port."""
    certs = generate_certificates(("127.0.0.1",))
    cert_dir.mkdir()
    (cert_dir / "tls.crt").write_bytes(certs.cert_pem)
    (cert_dir / "tls.key").write_bytes(certs.key_pem)
    mgr.webhook_server.cert_dir = cert_dir
    mgr.webhook_server.port = 0
    mgr.webhook_server.register("/allow", lambda request: AdmissionResponse.allow())


class JournalClient(Client):
    """A client that notes when lists start and watches end."""

    def __init__(self, config: Any, journal: list[str]) -> None:
        super().__init__(config)
        self.journal = journal

    async def list_pages(self, kind: Any, **options: Any) -> AsyncIterator[Any]:
        self.journal.append("list")
        async for page in super().list_pages(kind, **options):
            yield page

    async def watch(self, kind: Any, **options: Any) -> AsyncIterator[Any]:
        try:
            async for event in super().watch(kind, **options):
                yield event
        finally:
            self.journal.append("watch ended")


async def test_webhook_registrations_come_before_the_caches_and_end_after_them(
    kubeconfig: Path, api: Client
) -> None:
    journal: list[str] = []
    client = JournalClient(load_kubeconfig(kubeconfig), journal)
    mgr = Manager(client=client)
    recorder = Recorder()
    mgr.controller().for_(CM).complete(recorder)
    serve_a_webhook(mgr, kubeconfig.parent / "webhook-certs")

    @contextlib.asynccontextmanager
    async def registered(server: WebhookServer) -> AsyncIterator[None]:
        # Called with the started server, before anything is listed.
        journal.append(f"registered, answering: {await server.ready()}")
        try:
            yield
        finally:
            journal.append(f"unregistered, answering: {await server.ready()}")

    mgr.add_webhook_registration(registered)
    task = asyncio.create_task(mgr.start())
    try:
        await asyncio.wait_for(mgr.running.wait(), 30)
        await api.create(cm("after-registration"))

        async def reconciled() -> bool:
            return "after-registration" in recorder.names

        await eventually(reconciled)
    finally:
        mgr.stop()
        await asyncio.wait_for(task, 30)
    assert journal[0] == "registered, answering: True"
    assert journal[1] == "list"
    # Left once the caches' watches have ended, while the server still answered.
    assert journal[-1] == "unregistered, answering: True"
    assert "watch ended" in journal[2:-1]
    assert not mgr.webhook_server.serving.is_set()


async def test_a_failing_webhook_registration_stops_the_manager_before_the_caches(
    kubeconfig: Path,
) -> None:
    journal: list[str] = []
    mgr = Manager(client=JournalClient(load_kubeconfig(kubeconfig), journal))
    mgr.controller().for_(CM).complete(Recorder())
    serve_a_webhook(mgr, kubeconfig.parent / "webhook-certs")

    @contextlib.asynccontextmanager
    async def refused(server: WebhookServer) -> AsyncIterator[None]:
        raise RuntimeError("the cluster refused the registration")
        yield

    mgr.add_webhook_registration(refused)
    with pytest.raises(RuntimeError, match="the cluster refused the registration"):
        await asyncio.wait_for(mgr.start(), 30)
    assert journal == []  # nothing was listed
    assert not mgr.webhook_server.serving.is_set()


class _Noop(Reconciler):
    async def reconcile(self, request: Request) -> Result | None:
        return None


def test_the_managers_controller_defaults_apply_to_each_controller(kubeconfig: Path) -> None:
    # One worker for every controller of this manager, as controller-runtime starts them,
    # unless a controller's own options say otherwise.
    mgr = Manager(
        load_kubeconfig(kubeconfig),
        controller_defaults=ControllerOptions(max_concurrent_reconciles=1),
    )
    plain = mgr.controller().for_("v1/ConfigMap").complete(_Noop())
    own = mgr.controller().for_("v1/Secret").with_options(max_concurrent_reconciles=2)
    assert (plain.workers, own.complete(_Noop()).workers) == (1, 2)
    assert (
        Manager(load_kubeconfig(kubeconfig)).controller().for_("v1/Pod").complete(_Noop()).workers
        == 4
    )


async def test_kill_stops_at_once_and_sends_nothing_more(kubeconfig: Path, api: Client) -> None:
    # As kill -9: a reconcile in progress is cancelled where it stands (its next line never
    # runs), the client refuses to send, and start() returns without the graceful wait.
    started, finished = asyncio.Event(), asyncio.Event()

    class Stuck(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            started.set()
            await asyncio.Event().wait()
            finished.set()
            return None

    mgr = Manager(load_kubeconfig(kubeconfig), graceful_shutdown_timeout=60)
    mgr.controller().for_(CM).complete(Stuck())
    task = asyncio.create_task(mgr.start())
    await eventually(lambda: mgr.running.is_set())
    await api.create(cm("k1"))
    await asyncio.wait_for(started.wait(), 10)
    mgr.kill()
    assert mgr.killed
    await asyncio.wait_for(task, 5)  # not the 60 s a graceful stop would give the reconcile
    assert not finished.is_set()
    with pytest.raises(ClientClosed):
        await mgr.api_reader.get(CM, "k1")
