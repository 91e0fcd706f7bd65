"""A changed CustomResourceDefinition takes effect on the next request: what the write
path works out once per served type is worked out again for the new one."""

from __future__ import annotations

from typing import Any

import orjson

from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd


def _with_status(name: str) -> dict[str, Any]:
    return {**widget(name), "status": {"phase": "Ready"}}


async def test_a_status_subresource_added_later_applies_to_the_next_write(
    http: HTTPClient,
) -> None:
    crd = widget_crd()
    del crd["spec"]["versions"][0]["subresources"]
    reply = await http.post(CRDS, crd)
    assert reply.status == 201, reply.body
    # Without a status subresource, status is written like any other field.
    reply = await http.post(WIDGETS, _with_status("before"))
    assert reply.status == 201, reply.body
    assert reply.json()["status"] == {"phase": "Ready"}

    current = (await http.get(f"{CRDS}/widgets.example.com")).json()
    current["spec"]["versions"][0]["subresources"] = {"status": {}}
    reply = await http.put(f"{CRDS}/widgets.example.com", current)
    assert reply.status == 200, reply.body

    # With one, a create drops it, and /status is served.
    reply = await http.post(WIDGETS, _with_status("after"))
    assert reply.status == 201, reply.body
    assert "status" not in reply.json()
    reply = await http.get(f"{WIDGETS}/after/status")
    assert reply.status == 200, reply.body


async def test_a_new_storage_version_applies_to_the_next_write(http: HTTPClient) -> None:
    crd = widget_crd()
    v1 = crd["spec"]["versions"][0]
    v2 = {**orjson.loads(orjson.dumps(v1)), "name": "v2", "storage": False}
    crd["spec"]["versions"] = [v1, v2]
    reply = await http.post(CRDS, crd)
    assert reply.status == 201, reply.body
    reply = await http.post(WIDGETS, widget("first"))
    assert reply.status == 201, reply.body

    current = (await http.get(f"{CRDS}/widgets.example.com")).json()
    current["spec"]["versions"][0]["storage"] = False
    current["spec"]["versions"][1]["storage"] = True
    reply = await http.put(f"{CRDS}/widgets.example.com", current)
    assert reply.status == 200, reply.body

    reply = await http.post(WIDGETS, widget("second"))
    assert reply.status == 201, reply.body
    store = http.server.store
    gr = http.server.registry.get("example.com", "v1", "widgets")
    assert gr is not None
    first = store.get(gr.group_resource, "default", "first")
    second = store.get(gr.group_resource, "default", "second")
    assert first is not None and second is not None
    assert first.obj["apiVersion"] == "example.com/v1"
    assert second.obj["apiVersion"] == "example.com/v2"
    # An unchanged object stored in the older version is written again in the new one.
    got = (await http.get(f"{WIDGETS}/first")).json()
    reply = await http.put(f"{WIDGETS}/first", got)
    assert reply.status == 200, reply.body
    first = store.get(gr.group_resource, "default", "first")
    assert first is not None and first.obj["apiVersion"] == "example.com/v2"
