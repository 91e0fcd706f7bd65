"""The console's endpoints over a test cluster: kinds and counts, a kind's list with its
printer columns, an object's page, the timeline of the built-in controllers' reconciles,
and the live stream."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from kubeforge._testing.env import TestEnv
from kubeforge.testing import eventually
from tests.support.builtin_objects import deployment as builtin_deployment
from tests.support.console import ConsoleSession, console_session


def deployment(replicas: int = 2) -> dict[str, Any]:
    """The Deployment `web`."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", **builtin_deployment(replicas=replicas)}


async def count_of(browser: ConsoleSession, key: str, namespace: str) -> int:
    status, overview = await browser.get("/api/overview")
    assert status == 200
    kind = next(k for k in overview["kinds"] if k["key"] == key)
    return int(kind["namespaces"].get(namespace, 0))


async def test_kinds_are_counted_per_namespace_live(testenv: TestEnv) -> None:
    namespace = testenv.namespace
    async with console_session(testenv) as browser:
        # The namespace's kube-root-ca.crt is there from the start.
        before = await count_of(browser, "v1/ConfigMap", namespace)
        for i in range(3):
            await testenv.client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}}
            )

        async def three() -> bool:
            return await count_of(browser, "v1/ConfigMap", namespace) == before + 3

        await eventually(three)
        _, overview = await browser.get("/api/overview")
        assert namespace in overview["namespaces"]
        assert overview["managers"] == ["kube-controller-manager"]


async def test_a_kind_is_listed_with_the_printer_columns_kubectl_shows(testenv: TestEnv) -> None:
    await testenv.client.create(deployment())
    async with console_session(testenv) as browser:
        status, listed = await browser.get(
            "/api/list", kind="apps/v1/Deployment", namespace=testenv.namespace
        )
        assert status == 200
        names = [c["name"] for c in listed["columns"]]
        assert names[:5] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
        assert [row["name"] for row in listed["rows"]] == ["web"]
        status, _ = await browser.get("/api/list", kind="example.com/v1/Nothing")
        assert status == 404


async def test_an_object_page_folds_managed_fields_and_hides_secret_values(
    testenv: TestEnv,
) -> None:
    await testenv.client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "stringData": {"password": "hunter2"},
        }
    )
    async with console_session(testenv) as browser:
        status, page = await browser.get(
            "/api/object", kind="v1/Secret", namespace=testenv.namespace, name="creds"
        )
        assert status == 200
        assert "managedFields" not in page["yaml"]
        assert "hunter2" not in page["yaml"] and "aHVudGVyMg==" not in page["yaml"]
        assert "password" in page["yaml"]
        assert [m["manager"] for m in page["managedFields"]] == ["kubeforge-testenv"]
        assert "data.password" in page["managedFields"][0]["fields"]
        status, _ = await browser.get(
            "/api/object", kind="v1/Secret", namespace=testenv.namespace, name="none"
        )
        assert status == 404


async def test_a_deployment_page_shows_its_conditions_events_and_what_it_owns(
    testenv: TestEnv,
) -> None:
    await testenv.client.create(deployment())
    async with console_session(testenv) as browser:

        async def complete() -> dict[str, Any]:
            status, page = await browser.get(
                "/api/object", kind="apps/v1/Deployment", namespace=testenv.namespace, name="web"
            )
            assert status == 200
            kinds = sorted(n["shortKind"] for n in page["graph"]["nodes"])
            assert kinds == ["Deployment", "Pod", "Pod", "ReplicaSet"], kinds
            assert page["events"], page["events"]
            return page

        page = await eventually(complete)
        assert {c["type"] for c in page["conditions"]} >= {"Available", "Progressing"}
        assert page["events"][0]["reason"] == "ScalingReplicaSet"
        nodes = {n["id"]: n for n in page["graph"]["nodes"]}
        deployment_uid = next(i for i, n in nodes.items() if n["shortKind"] == "Deployment")
        replica_set = next(i for i, n in nodes.items() if n["shortKind"] == "ReplicaSet")
        edges = {(e["from"], e["to"]): e for e in page["graph"]["edges"]}
        assert edges[deployment_uid, replica_set]["controller"] is True
        assert sum(1 for owner, _ in edges if owner == replica_set) == 2


async def test_the_timeline_links_a_write_to_the_reconciles_it_woke(testenv: TestEnv) -> None:
    async with console_session(testenv) as browser:
        await testenv.client.create(deployment(replicas=1))

        async def linked() -> list[dict[str, Any]]:
            _, document = await browser.get("/api/timeline")
            entries = document["entries"]
            by_seq = {e["seq"]: e for e in entries}
            woken = [
                e
                for e in entries
                if e["type"] == "reconcile"
                and e["controller"] == "replicaset"
                and any(
                    by_seq.get((t.get("from") or {}).get("reconcile", -1), {}).get("controller")
                    == "deployment"
                    for t in e["triggers"]
                )
            ]
            assert woken
            return entries

        entries = await eventually(linked)
        first = next(
            e
            for e in entries
            if e["type"] == "reconcile" and e["controller"] == "deployment" and e["name"] == "web"
        )
        # The test's own create woke it: a change made by the test's field manager.
        source = next(e for e in entries if e["seq"] == first["triggers"][0]["from"]["change"])
        assert source["manager"] == "kubeforge-testenv"
        assert source["event"] == "ADDED"
        assert first["wait"] is not None and first["wait"] >= 0
        assert any(w["verb"] == "create" and "ReplicaSet" in w["kind"] for w in first["writes"])


async def test_the_stream_sends_the_history_then_what_changes(testenv: TestEnv) -> None:
    async with console_session(testenv) as browser:
        url = browser.console.url + "/api/stream"
        async with browser.session.get(url) as stream:
            assert stream.headers["Content-Type"] == "text/event-stream"

            async def next_event() -> tuple[str, Any]:
                lines: list[bytes] = []
                while True:
                    line = await asyncio.wait_for(stream.content.readline(), 10)
                    if line == b"\n":
                        if lines:
                            break
                        continue
                    if not line.startswith(b":"):
                        lines.append(line.rstrip(b"\n"))
                fields = dict(line.split(b": ", 1) for line in lines)
                return fields[b"event"].decode(), orjson.loads(fields[b"data"])

            name, first = await next_event()
            assert name == "timeline"
            assert "entries" in first
            await testenv.client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen"}}
            )
            while True:
                name, batch = await next_event()
                if name == "changes" and any(c["name"] == "seen" for c in batch["changes"]):
                    break
