"""Client-side interceptors: hooks that see each call of a client and answer for it, on a
plain Client and on the client a manager gives its controllers; the recipes of
docs/testing.md ("Faults"), each shown to change what the operator does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubeforge
from kubeforge import clock
from kubeforge.models.core_v1 import ConfigMap
from kubeforge.testing import (
    InterceptedCall,
    InterceptedClient,
    Interceptors,
    TestEnv,
    conflict,
    delay_by,
    eventually,
    fail_with,
    intercept,
    metric_value,
    not_found,
    observe,
    server_error,
    server_timeout,
    too_many_requests,
)
from tests.support.widgetoperator import (
    CONFIGMAP,
    WIDGET,
    WidgetReconciler,
    config_name,
    ready,
    setup_with,
    widget,
    widget_env,
)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[TestEnv]:
    async with widget_env(tmp_path / "crds") as started:
        yield started


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


# the wrapper ----------------------------------------------------------------------------------


async def test_each_verb_goes_to_its_hook_with_the_call(env: TestEnv) -> None:
    seen: list[tuple[str, str, str, str | None, str | None, bool]] = []

    def record(call: InterceptedCall, outcome: Any) -> None:
        seen.append((call.verb, call.method, call.kind, call.namespace, call.name, call.write))

    client = intercept(env.client, Interceptors(default=observe(record)))
    assert isinstance(client, InterceptedClient) and client.wrapped is env.client
    assert client.namespace == env.client.namespace  # not a verb: the wrapped client's own
    made = await client.create(configmap("one"))
    assert made["metadata"]["resourceVersion"]  # the object given became the stored one
    await client.get(CONFIGMAP, "one")
    await client.get_metadata(CONFIGMAP, "one")
    await client.list(CONFIGMAP)
    await client.patch(CONFIGMAP, "one", {"data": {"a": "b"}})
    await client.create(widget("w", 1))
    await client.update_status({**await client.get(WIDGET, "w"), "status": {"phase": "x"}})
    await client.patch(WIDGET, "w", {"status": {"phase": "y"}}, subresource="status")
    await client.update(configmap("one") | {"data": {"c": "d"}}, dry_run=True)
    await client.delete(CONFIGMAP, "one")
    assert seen == [
        ("create", "create", "v1/ConfigMap", None, "one", True),
        ("get", "get", "v1/ConfigMap", None, "one", False),
        ("get", "get_metadata", "v1/ConfigMap", None, "one", False),
        ("list", "list", "v1/ConfigMap", None, None, False),
        ("patch", "patch", "v1/ConfigMap", None, "one", True),
        ("create", "create", "example.com/v1/Widget", None, "w", True),
        ("get", "get", "example.com/v1/Widget", None, "w", False),
        ("update_status", "update_status", "example.com/v1/Widget", "faults", "w", True),
        ("patch_status", "patch", "example.com/v1/Widget", None, "w", True),
        ("update", "update", "v1/ConfigMap", None, "one", False),  # a dry run changes nothing
        ("delete", "delete", "v1/ConfigMap", None, "one", True),
    ]
    with pytest.raises(kubeforge.NotFound):
        await env.client.get(CONFIGMAP, "one")


async def test_a_verb_without_a_hook_goes_straight_through_and_layers_nest(env: TestEnv) -> None:
    order: list[str] = []

    def hook(name: str) -> Any:
        async def answer(client: Any, call: InterceptedCall) -> Any:
            order.append(name)
            return await call.proceed()

        return answer

    client = intercept(
        env.client, Interceptors(create=hook("outer")), Interceptors(create=hook("inner"))
    )
    await client.create(configmap("layered"))
    await client.get(CONFIGMAP, "layered")  # no get hook anywhere
    assert order == ["outer", "inner"]


async def test_typed_kinds_and_sync_reconcilers_go_through_the_hooks(env: TestEnv) -> None:
    kinds: list[tuple[str, str]] = []

    def record(call: InterceptedCall, outcome: Any) -> None:
        kinds.append((call.method, call.kind))

    client = intercept(env.client, Interceptors(default=observe(record)))
    made = await client.create(ConfigMap(metadata=kubeforge.ObjectMeta(name="typed")))
    assert isinstance(made, ConfigMap) and made.metadata.resource_version
    with pytest.raises(kubeforge.Conflict) as raised:
        await intercept(env.client, Interceptors(get=fail_with(conflict()))).get(ConfigMap, "typed")
    assert raised.value.status["details"]["kind"] == "configmaps"  # the typed class's plural
    assert kinds == [("create", "v1/ConfigMap")]

    # A plain `def` reconciler's blocking client goes through the same hooks.
    class Blocking(kubeforge.SyncReconciler):
        def reconcile(self, request: kubeforge.Request) -> None:
            self.client.get(WIDGET, request.name, namespace=request.namespace)

    def setup(manager: kubeforge.Manager) -> None:
        manager.controller().for_(WIDGET).named("blocking").complete(Blocking())

    seen: list[str] = []
    hooks = Interceptors(get=observe(lambda call, outcome: seen.append(call.name or "")))
    async with env.run_manager(setup, interceptors=hooks):
        await env.client.create(widget("sync", 1))
        await eventually(lambda: "sync" in seen)


async def test_fail_with_chooses_calls_by_kind_name_and_times(env: TestEnv) -> None:
    client = intercept(
        env.client,
        Interceptors(create=fail_with(conflict(), kind="ConfigMap", name="b", times=1)),
    )
    await client.create(configmap("a"))  # another name: through
    with pytest.raises(kubeforge.Conflict) as raised:
        await client.create(configmap("b"))
    status = raised.value.status
    assert status["reason"] == "Conflict" and status["code"] == 409
    assert status["details"] == {"name": "b", "kind": "configmaps"}
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "b": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    await client.create(configmap("b"))  # `times` was 1
    assert [c["metadata"]["name"] for c in await env.client.list(CONFIGMAP)] == ["a", "b"]


async def test_an_applied_failure_carries_the_call_out_first(env: TestEnv) -> None:
    client = intercept(env.client, Interceptors(create=fail_with(server_timeout(), applied=True)))
    with pytest.raises(kubeforge.ApiError) as raised:
        await client.create(configmap("landed"))
    assert raised.value.code == 504 and raised.value.reason == "Timeout"
    await env.client.get(CONFIGMAP, "landed")  # it happened all the same


def test_the_error_factories_answer_as_the_server_would() -> None:
    call = InterceptedCall("get", "get", "example.com/v1/Widget", "ns", "w", (), {}, None)
    busy = too_many_requests(retry_after=7)(call)
    assert isinstance(busy, kubeforge.ApiError) and busy.code == 429 and busy.retry_after == 7
    assert busy.reason == "TooManyRequests"
    unavailable = server_error(503, "etcd is down")(call)
    assert isinstance(unavailable, kubeforge.ApiError)
    assert (unavailable.code, unavailable.reason) == (503, "ServiceUnavailable")
    internal = server_error()(call)
    assert isinstance(internal, kubeforge.ApiError) and internal.code == 500
    assert internal.message == "Internal error occurred: injected server error"
    missing = not_found()(call)
    assert isinstance(missing, kubeforge.NotFound)
    assert missing.status["details"] == {"name": "w", "group": "example.com", "kind": "Widget"}
    with pytest.raises(ValueError, match="5xx"):
        server_error(404)


async def test_delay_by_waits_before_making_the_call(env: TestEnv) -> None:
    client = intercept(env.client, Interceptors(get=delay_by(0.3, name="slow")))
    await client.create(configmap("slow"))
    await client.create(configmap("quick"))
    started = clock.monotonic()
    await client.get(CONFIGMAP, "slow")
    assert clock.monotonic() - started >= 0.3
    started = clock.monotonic()
    await client.get(CONFIGMAP, "quick")
    assert clock.monotonic() - started < 0.3


# the manager's controllers, and the recipes -----------------------------------------------------


async def converge(env: TestEnv, interceptors: Interceptors) -> WidgetReconciler:
    """Run the widget operator with `interceptors` until widget `w` is ready."""
    reconciler = WidgetReconciler()
    async with env.run_manager(setup_with(reconciler), interceptors=interceptors) as manager:
        await env.client.create(widget("w", 2))
        await eventually(lambda: ready(env.client, "w", 2), timeout=15)
        errors = metric_value(manager, "controller_runtime_reconcile_errors_total")
        assert errors == len(reconciler.errors)
    return reconciler


async def test_a_conflict_on_the_status_write_is_retried(env: TestEnv) -> None:
    hook = fail_with(conflict(), kind=WIDGET, times=1)
    reconciler = await converge(env, Interceptors(update_status=hook))
    assert [type(e) for e in reconciler.errors] == [kubeforge.Conflict]
    assert len(reconciler.seen) >= 2  # the failed reconcile, then the retry that wrote


async def test_a_server_error_on_create_is_retried(env: TestEnv) -> None:
    reconciler = await converge(
        env, Interceptors(create=fail_with(server_error(503), kind="ConfigMap", times=2))
    )
    assert [e.code for e in reconciler.errors if isinstance(e, kubeforge.ApiError)] == [503, 503]


async def test_too_many_requests_reaches_the_reconciler_with_its_retry_after(
    env: TestEnv,
) -> None:
    reconciler = await converge(
        env, Interceptors(create=fail_with(too_many_requests(retry_after=3), times=1))
    )
    (error,) = reconciler.errors
    assert isinstance(error, kubeforge.ApiError) and error.retry_after == 3


async def test_a_timeout_after_the_create_landed_meets_already_exists(env: TestEnv) -> None:
    hook = fail_with(server_timeout(), kind="ConfigMap", times=1, applied=True)
    reconciler = await converge(env, Interceptors(create=hook))
    assert [e.code for e in reconciler.errors if isinstance(e, kubeforge.ApiError)] == [504]
    configs = await env.client.list(CONFIGMAP)
    assert [c["metadata"]["name"] for c in configs] == [config_name("w")]


async def test_not_found_after_a_create_as_a_cache_behind_its_writes(env: TestEnv) -> None:
    # The docs' recipe: the first read of each object this client created is NotFound.
    created: set[str] = set()

    async def remember(client: Any, call: InterceptedCall) -> Any:
        result = await call.proceed()
        created.add(call.name or "")
        return result

    async def not_yet(client: Any, call: InterceptedCall) -> Any:
        if call.name in created:
            created.discard(call.name)
            raise not_found()(call)
        return await call.proceed()

    # A reconciler that reads back what it created, as some do.
    class ReadsBack(WidgetReconciler):
        async def _reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
            await super()._reconcile(request)
            name = config_name(request.name)
            await self.client.get(CONFIGMAP, name, namespace=request.namespace)
            return None

    reconciler = ReadsBack()
    interceptors = Interceptors(create=remember, get=not_yet)
    async with env.run_manager(setup_with(reconciler), interceptors=interceptors):
        await env.client.create(widget("w", 2))
        await eventually(lambda: ready(env.client, "w", 2), timeout=15)
        await eventually(lambda: not created, timeout=15)
    assert [type(e) for e in reconciler.errors] == [kubeforge.NotFound]
