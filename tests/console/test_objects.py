"""An object's ownership graph with its garbage-collection state: owners held by
finalizers or deleted in the foreground, and children whose owner is gone."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._testing.env import TestEnv
from kubeforge.testing import eventually
from tests.support.console import console_session


def config_map(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


# The collector would delete the orphan at once: the graph is looked at without it.
@pytest.mark.kubeforge_controllers("*", "-garbagecollector")
async def test_the_graph_shows_what_holds_an_owner_and_which_child_lost_its_own(
    testenv: TestEnv,
) -> None:
    client = testenv.client
    parent = await client.create(
        config_map("parent", finalizers=["foregroundDeletion", "example.com/hold"])
    )

    def owned_by(uid: str, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    await client.create(
        config_map("child", ownerReferences=[owned_by(parent["metadata"]["uid"], "parent")])
    )
    await client.create(config_map("stray", ownerReferences=[owned_by("0000-gone", "vanished")]))
    await client.delete("v1/ConfigMap", "parent")
    async with console_session(testenv) as browser:

        async def graph_of(name: str) -> dict[str, Any]:
            status, page = await browser.get(
                "/api/object", kind="v1/ConfigMap", namespace=testenv.namespace, name=name
            )
            assert status == 200
            graph: dict[str, Any] = page["graph"]
            return graph

        async def parent_deleting() -> dict[str, Any]:
            graph = await graph_of("child")
            owner = next(n for n in graph["nodes"] if n["name"] == "parent")
            assert owner["gc"]["deleting"], owner
            return graph

        graph = await eventually(parent_deleting)
        owner = next(n for n in graph["nodes"] if n["name"] == "parent")
        assert owner["gc"]["foreground"] is True
        assert owner["gc"]["heldBy"] == ["example.com/hold"]
        child = next(n for n in graph["nodes"] if n["name"] == "child")
        assert child["root"] is True and child["orphan"] is False
        [edge] = graph["edges"]
        assert edge["blockOwnerDeletion"] is True

        graph = await graph_of("parent")
        assert [n["name"] for n in graph["nodes"]] == ["parent", "child"]

        graph = await graph_of("stray")
        missing = next(n for n in graph["nodes"] if n["name"] == "vanished")
        assert missing["missing"] is True
        stray = next(n for n in graph["nodes"] if n["name"] == "stray")
        assert stray["orphan"] is True
