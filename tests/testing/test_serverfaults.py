"""Server-side faults: the test cluster answering chosen requests with errors or late,
dropping, expiring, delaying and coalescing watch streams, serving a reader an older
revision, and recording each user's writes; each shown to change what a client, kubectl or
the small widget operator sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubeforge
from kubeforge import clock
from kubeforge.client import Gone
from kubeforge.testing import TestEnv, eventually, metric_sum
from tests.support import connect, kubectl_for
from tests.support.widgetoperator import (
    CONFIGMAP,
    NAMESPACE,
    WIDGET,
    WidgetReconciler,
    config_name,
    ready,
    setup_with,
    widget,
    widget_env,
)

CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[TestEnv]:
    async with widget_env(tmp_path / "crds") as started:
        yield started


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def open_watches(env: TestEnv, resource: str, user: str | None) -> set[Any]:
    return {
        watcher
        for watcher, call in env.faults.server.watches.active.items()
        if call.rt.plural == resource and call.user.name == user and not watcher.closed
    }


# failures and delays --------------------------------------------------------------------------


async def test_a_failure_is_answered_as_a_kube_status_with_retry_after(env: TestEnv) -> None:
    assert env.cluster is not None
    fault = env.faults.fail(
        verb="create", resource="configmaps", status=429, retry_after=2, times=1
    )
    async with connect(env.cluster.server) as http:
        refused = await http.post(CONFIGMAPS, configmap("a"))
        assert refused.status == 429
        assert refused.headers["Retry-After"] == "2"
        status = refused.json()
        assert (status["reason"], status["code"]) == ("TooManyRequests", 429)
        assert status["details"] == {"retryAfterSeconds": 2}
        assert status["message"] == "injected failure of create configmaps"
        assert (await http.post(CONFIGMAPS, configmap("a"))).status == 201
    assert fault.hits == 1 and not fault.active


async def test_the_client_waits_retry_after_and_tries_again(env: TestEnv) -> None:
    await env.client.create(configmap("busy"))
    fault = env.faults.fail(verb="update", name="busy", status=429, retry_after=1, times=1)
    started = clock.monotonic()
    await env.client.update(configmap("busy", key="value"))
    assert clock.monotonic() - started >= 1.0
    assert fault.hits == 1
    assert (await env.client.get(CONFIGMAP, "busy"))["data"] == {"key": "value"}


async def test_kubectl_hears_the_injected_error(env: TestEnv, tmp_path: Path) -> None:
    kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "home")
    env.faults.fail(verb="list", resource="configmaps", status=503, message="etcd is down")
    result = await kubectl.run("get", "configmaps", check=False)
    assert result.code != 0
    assert "Error from server (ServiceUnavailable): etcd is down" in result.err


async def test_failures_choose_requests_by_verb_resource_name_and_user(env: TestEnv) -> None:
    env.faults.fail(verb="create", resource="configmaps", user="someone-else")
    env.faults.fail(verb="get", name="other", status=403)
    env.faults.fail(verb="patch", resource="widgets.example.com", status=404)
    await env.client.create(configmap("mine"))  # the admin is not someone-else
    await env.client.get(CONFIGMAP, "mine")
    with pytest.raises(kubeforge.ApiError) as raised:
        await env.client.get(CONFIGMAP, "other")
    assert (raised.value.code, raised.value.reason) == (403, "Forbidden")
    await env.client.create(widget("w", 1))
    with pytest.raises(kubeforge.NotFound) as missing:
        await env.client.patch(WIDGET, "w", {"spec": {"size": 2}})
    assert missing.value.message == 'widgets.example.com "w" not found'


async def test_an_applied_failure_commits_before_it_answers(env: TestEnv) -> None:
    env.faults.fail(verb="create", status=504, applied=True, times=1)
    with pytest.raises(kubeforge.ApiError) as raised:
        await env.client.create(configmap("landed"))
    assert (raised.value.code, raised.value.reason) == (504, "Timeout")
    await env.client.get(CONFIGMAP, "landed")


async def test_a_conflict_from_the_server_is_retried_by_the_operator(env: TestEnv) -> None:
    fault = env.faults.fail(
        verb="update", resource="widgets", subresource="status", status=409, times=1
    )
    reconciler = WidgetReconciler()
    async with env.run_manager(setup_with(reconciler)):
        await env.client.create(widget("w", 2))
        await eventually(lambda: ready(env.client, "w", 2), timeout=15)
    assert fault.hits == 1
    assert [type(e) for e in reconciler.errors] == [kubeforge.Conflict]


async def test_a_delay_answers_late(env: TestEnv) -> None:
    await env.client.create(configmap("slow"))
    await env.client.create(configmap("quick"))
    fault = env.faults.delay(0.3, verb="get", name="slow")
    started = clock.monotonic()
    await env.client.get(CONFIGMAP, "slow")
    assert clock.monotonic() - started >= 0.3
    started = clock.monotonic()
    await env.client.get(CONFIGMAP, "quick")
    assert clock.monotonic() - started < 0.3
    assert fault.hits == 1


async def test_faults_come_out_with_their_block_or_clear(env: TestEnv) -> None:
    router = env.faults.server.router
    assert router.faults is None  # nothing installed: no hook in the request path
    with env.faults.fail(verb="get", name="x") as fault:
        assert router.faults is not None and fault.active
    assert router.faults is None and not fault.active
    record = env.faults.record_writes()
    delay = env.faults.delay_watches(1.0)
    assert env.faults.installed == [record, delay]
    env.faults.clear()
    assert env.faults.installed == [] and not record.active and not delay.active
    assert router.faults is None and env.faults.server.watches.faults is None


# watches --------------------------------------------------------------------------------------


async def test_a_dropped_watch_is_watched_again(env: TestEnv) -> None:
    async with env.run_manager(setup_with(WidgetReconciler())):
        await env.client.create(widget("a", 1))
        await eventually(lambda: ready(env.client, "a", 1), timeout=15)
        before = open_watches(env, "widgets", env.manager_user)
        assert len(before) == 1
        dropped = env.faults.drop_watches(resource="widgets", user=env.manager_user)
        assert dropped.hits == 1 and not dropped.active
        # The informer watches again, from where it was, and goes on reconciling.
        await eventually(lambda: bool(open_watches(env, "widgets", env.manager_user) - before))
        await env.client.create(widget("b", 2))
        await eventually(lambda: ready(env.client, "b", 2), timeout=15)


async def test_an_expired_watch_makes_the_informer_list_again(env: TestEnv) -> None:
    server = env.faults.server

    def lists() -> float:
        return metric_sum(server, "apiserver_request_total", verb="LIST", resource="widgets")

    async with env.run_manager(setup_with(WidgetReconciler())) as manager:
        created = await env.client.create(widget("a", 1))
        await eventually(lambda: ready(env.client, "a", 1), timeout=15)
        listed = lists()
        expired = env.faults.expire_watches(resource="widgets", user=env.manager_user)
        assert expired.hits == 1  # the informer's open watch ended with 410 Gone
        await eventually(lambda: lists() > listed)  # ... and it listed again
        await env.client.create(widget("b", 2))
        await eventually(lambda: ready(env.client, "b", 2), timeout=15)
        # A watch resuming from before the compaction is refused the same way.
        old = created["metadata"]["resourceVersion"]
        with pytest.raises(Gone):
            async for _ in manager.api_reader.watch(WIDGET, resource_version=old):
                pass
        assert expired.hits == 2
        expired.remove()  # the history is there: the same watch now starts
        types = []
        async for event in manager.api_reader.watch(WIDGET, resource_version=old):
            types.append(event.type)
            if len(types) == 2:
                break
        assert types == ["MODIFIED", "ADDED"]  # a's status, then b


async def test_delayed_watch_events_arrive_late_and_in_order(env: TestEnv) -> None:
    since = (await env.client.list(CONFIGMAP)).resource_version
    delayed = env.faults.delay_watches(0.4, resource="configmaps")
    arrived: list[tuple[str, float]] = []

    async def watch() -> None:
        async for event in env.client.watch(CONFIGMAP, resource_version=since):
            if event.type != "BOOKMARK":
                arrived.append((event.object["metadata"]["name"], clock.monotonic()))
            if len(arrived) == 3:
                return

    reading = asyncio.create_task(watch())
    await eventually(lambda: bool(open_watches(env, "configmaps", "kubeforge-admin")))
    written = clock.monotonic()
    for name in ("one", "two", "three"):
        await env.client.create(configmap(name))
    await asyncio.wait_for(reading, 10)
    assert [name for name, _ in arrived] == ["one", "two", "three"]
    assert all(at - written >= 0.4 for _, at in arrived)
    assert delayed.hits == 3


async def test_coalesced_events_show_only_the_final_state(env: TestEnv) -> None:
    coalescing = env.faults.coalesce_events(resource="configmaps", name=["x", "brief"])
    seen: list[tuple[str, str, dict[str, str]]] = []

    async def watch() -> None:
        since = (await env.client.list(CONFIGMAP)).resource_version
        async for event in env.client.watch(CONFIGMAP, resource_version=since):
            if event.type != "BOOKMARK":
                meta, data = event.object["metadata"], event.object.get("data") or {}
                seen.append((event.type, meta["name"], data))

    reading = asyncio.create_task(watch())
    try:
        await eventually(lambda: bool(open_watches(env, "configmaps", "kubeforge-admin")))
        await env.client.create(configmap("x", step="1"))
        for step in ("2", "3"):
            await env.client.patch(CONFIGMAP, "x", {"data": {"step": step}})
        await env.client.create(configmap("brief"))
        await env.client.delete(CONFIGMAP, "brief")
        await env.client.create(configmap("later"))  # not chosen: it goes out at once
        await eventually(lambda: bool(seen))
        assert seen == [("ADDED", "later", {})]
        coalescing.remove()
        await eventually(lambda: len(seen) == 2)
        assert seen[1] == ("ADDED", "x", {"step": "3"})  # one event, in its final state
        await env.client.create(configmap("last"))
        await eventually(lambda: len(seen) == 3)
        assert [name for _, name, _ in seen] == ["later", "x", "last"]  # `brief` never shows
    finally:
        reading.cancel()
    assert coalescing.hits == 5


async def test_a_stale_reader_is_served_an_older_revision(env: TestEnv) -> None:
    async with env.run_manager(setup_with(WidgetReconciler())) as manager:
        await env.client.create(widget("w", 1))
        await eventually(lambda: ready(env.client, "w", 1), timeout=15)
        stale = env.faults.stale_reads(user=env.manager_user, resource="widgets")
        await env.client.patch(WIDGET, "w", {"spec": {"size": 4}})
        # The manager's user reads the widget as it was; everyone else as it is.
        reader = manager.api_reader
        assert (await reader.get(WIDGET, "w"))["spec"]["size"] == 1
        listed = await reader.list(WIDGET)
        assert [item["spec"]["size"] for item in listed] == [1]
        assert listed.resource_version == str(stale.revision)
        assert (await env.client.get(WIDGET, "w"))["spec"]["size"] == 4
        # Its cache holds the old widget back too, while later changes of other kinds
        # reach it: the operator goes on acting on the stale view.
        await env.client.create(configmap("barrier"))
        await eventually(lambda: _cached(manager, CONFIGMAP, "barrier"))
        assert manager.client.cache.get(WIDGET, "w", namespace=NAMESPACE)["spec"]["size"] == 1
        assert await ready(env.client, "w", 1)
        stale.remove()  # the view catches up, and so does the operator
        await eventually(lambda: ready(env.client, "w", 4), timeout=15)
    assert stale.hits >= 3


def _cached(manager: kubeforge.Manager, kind: str, name: str) -> bool:
    try:
        manager.client.cache.get(kind, name, namespace=NAMESPACE)
    except kubeforge.NotFound:
        return False
    return True


# the write record ------------------------------------------------------------------------------


async def test_the_write_record_lists_each_users_writes_in_order(env: TestEnv) -> None:
    everyone = env.faults.record_writes()
    by_manager = env.faults.record_writes(user=env.manager_user)
    async with env.run_manager(setup_with(WidgetReconciler())):
        await env.client.create(configmap("dry"), dry_run=True)  # not a write
        made = await env.client.create(widget("w", 2))
        await eventually(lambda: ready(env.client, "w", 2), timeout=15)
    config = await env.client.get(CONFIGMAP, config_name("w"))
    status = await env.client.get(WIDGET, "w")
    assert [
        (w.verb, w.qualified_resource, w.kind, w.namespace, w.name, w.subresource)
        for w in by_manager
    ] == [
        ("create", "configmaps", "v1/ConfigMap", NAMESPACE, "w-config", ""),
        ("update", "widgets.example.com", "example.com/v1/Widget", NAMESPACE, "w", "status"),
    ]
    assert [w.resource_version for w in by_manager] == [
        config["metadata"]["resourceVersion"],
        status["metadata"]["resourceVersion"],
    ]
    assert {w.user for w in by_manager} == {"kubeforge-manager"}
    assert {w.field_manager for w in by_manager} == {"kubeforge"}  # its user agent's name
    first = everyone.writes[0]
    assert (first.verb, first.name, first.user, first.field_manager) == (
        "create",
        "w",
        "kubeforge-admin",
        "kubeforge-testenv",
    )
    assert first.resource_version == made["metadata"]["resourceVersion"]
    assert everyone.by(user="kubeforge-manager") == by_manager.writes
    by_manager.remove()
    await env.client.delete(WIDGET, "w")
    assert len(by_manager) == 2 and everyone.writes[-1].verb == "delete"


async def test_on_virtual_time_delays_are_the_clocks(tmp_path: Path) -> None:
    # A minute's delay of a request and of a watch's events passes when the test advances
    # the clock, not in real time.
    async with TestEnv(crd_paths=[], virtual_time=True, namespace=NAMESPACE) as env:
        assert isinstance(env.clock, clock.VirtualClock)
        await env.client.create(configmap("slow"))
        since = (await env.client.list(CONFIGMAP)).resource_version
        env.faults.delay(60, verb="get", name="slow")
        env.faults.delay_watches(60, resource="configmaps")
        seen: list[str] = []

        async def watch() -> None:
            async for event in env.client.watch(CONFIGMAP, resource_version=since):
                if event.type != "BOOKMARK":
                    seen.append(event.object["metadata"]["name"])

        reading = asyncio.create_task(watch())
        getting = asyncio.create_task(env.client.get(CONFIGMAP, "slow"))
        try:
            await env.client.create(configmap("later"))
            await env.clock.advance(seconds=59)
            assert seen == [] and not getting.done()
            real = asyncio.get_running_loop().time()
            await env.clock.advance(seconds=1)
            await eventually(lambda: seen == ["later"] and getting.done())
            assert asyncio.get_running_loop().time() - real < 30
            assert (await getting)["metadata"]["name"] == "slow"
        finally:
            reading.cancel()
            getting.cancel()
