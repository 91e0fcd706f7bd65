"""A commit is the last step of a write: it reaches storage, memory and every watcher, or
none of them; nothing that happens while telling others about it undoes or hides it."""

from __future__ import annotations

import asyncio
from typing import Any

from kubeforge._apiserver.types.resource import GroupResource
from kubeforge.apiserver import APIServer
from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
CONFIGMAPS = GroupResource("", "configmaps")


def configmap(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


class Broken(RuntimeError):
    """Raised on purpose by a watch predicate or an observer."""


def explode(*_: Any) -> bool:
    raise Broken("this watcher cannot take events")


async def test_a_watcher_that_fails_to_take_an_event_harms_nothing_else(
    server: APIServer, http: HTTPClient
) -> None:
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    # One watcher whose delivery raises (its predicate fails on every object) ...
    faulty = server.store.watch(CONFIGMAPS, None, explode, int(rv))

    async def watch() -> list[str]:
        events = await http.watch_lines(
            f"{CMS}?watch=true&resourceVersion={rv}",
            lambda ev: ev[-1]["object"]["metadata"]["name"] == "second",
        )
        return [e["object"]["metadata"]["name"] for e in events]

    # ... and healthy ones.
    watchers = [asyncio.create_task(watch()) for _ in range(3)]
    created = await http.post(CMS, configmap("first"))
    assert created.status == 201, created.body
    assert (await http.post(CMS, configmap("second"))).status == 201
    for events in await asyncio.gather(*watchers):
        assert events == ["first", "second"]
    assert faulty.closed  # ended, so its client would resume or re-list
    assert (await http.get(f"{CMS}/first")).status == 200


async def test_an_observer_that_fails_leaves_the_commit_standing(
    server: APIServer, http: HTTPClient
) -> None:
    heard: list[str] = []

    def failing(*_: Any) -> None:
        raise Broken("this observer fails")

    def listening(rt: Any, kind: str, new: Any, old: Any) -> None:
        heard.append(f"{kind} {new.key[1]}")

    server.commits.observers[:0] = [failing]
    server.commits.observers.append(listening)
    reply = await http.post(CMS, configmap("kept"))
    assert reply.status == 201, reply.body
    assert (await http.get(f"{CMS}/kept")).status == 200
    assert "ADDED kept" in heard


async def test_a_malformed_stored_object_never_breaks_lists_watches_or_deletes(
    server: APIServer, http: HTTPClient
) -> None:
    # There is no way to store one through the API; this plants one as a corrupted or older
    # data directory might hold it.
    for name, meta in [
        ("odd-labels", {"labels": "oops"}),
        ("odd-values", {"labels": {"app": ["x"], "n": {"a": 1}}}),
        ("odd-finalizers", {"finalizers": "abc"}),
    ]:
        planted = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        planted["metadata"].update(namespace="default", **meta)
        server.store.create(CONFIGMAPS, planted)
    for selector in ("app%3Dx", "app", "!app", "app+in+(x)", "n%3E1", "app!%3Dx"):
        listed = await http.get(f"{CMS}?labelSelector={selector}")
        assert listed.status == 200, (selector, listed.body)
    events = await http.watch_lines(
        f"{CMS}?watch=true&labelSelector=app!%3Dx",
        lambda ev: {e["object"]["metadata"]["name"] for e in ev} >= {"odd-labels", "odd-values"},
    )
    assert all(e["type"] == "ADDED" for e in events)
    for name in ("odd-labels", "odd-values", "odd-finalizers"):
        deleted = await http.delete(f"{CMS}/{name}")
        assert deleted.status == 200, deleted.body
        assert (await http.get(f"{CMS}/{name}")).status == 404
