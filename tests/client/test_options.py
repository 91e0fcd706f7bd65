"""The verbs' options as values (docs/runtime.md's "Calls"): the documented example run as
written, and the options every client takes reaching the server the same way."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest

import kubeforge
from kubeforge import Client, Conflict
from kubeforge._api.machinery.selectors import LabelSelector
from kubeforge.client import DeleteOptions, ListOptions
from kubeforge.models import ConfigMap, Namespace
from tests.support import ROOT


def documented_example() -> str:
    """The code block of docs/runtime.md's "Calls" section that keeps options as a value."""
    text = (ROOT / "docs" / "runtime.md").read_text()
    section = text.split("### Calls", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    [example] = [b for b in blocks if "takeover" in b]
    return example


async def run_example(client: Client) -> None:
    source = "async def example(client):\n" + textwrap.indent(documented_example(), "    ")
    names: dict[str, Any] = {"ConfigMap": ConfigMap}
    exec(compile(source, "docs/runtime.md", "exec"), names)
    await names["example"](client)


def managers(obj: dict[str, Any]) -> dict[str, str]:
    return {m["manager"]: m["operation"] for m in obj["metadata"].get("managedFields") or []}


async def test_the_documented_options_value_applies_by_force_in_each_namespace(
    api: Client,
) -> None:
    await api.create(Namespace(metadata=kubeforge.ObjectMeta(name="staging")))
    owned = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"mode": "slow"},
    }
    for namespace in ("default", "staging"):
        await api.patch(
            ConfigMap,
            "settings",
            owned,
            namespace=namespace,
            patch_type="apply",
            field_manager="operator",
        )
    # Without force, the other manager's field is a conflict.
    with pytest.raises(Conflict):
        await api.patch(
            ConfigMap,
            "settings",
            {**owned, "data": {"mode": "fast"}},
            namespace="default",
            patch_type="apply",
            field_manager="migrator",
        )

    await run_example(api)

    for namespace in ("default", "staging"):
        stored = await api.get("v1/ConfigMap", "settings", namespace=namespace)
        assert stored["data"] == {"mode": "fast"}
        assert managers(stored) == {"migrator": "Apply"}


async def test_a_list_options_value_and_a_parsed_selector_list_the_same(api: Client) -> None:
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web")):
        await api.create(
            ConfigMap(metadata=kubeforge.ObjectMeta(name=name, labels={"tier": tier})),
            namespace="default",
        )
    web: ListOptions = {"namespace": "default", "label_selector": "tier=web"}
    parsed: ListOptions = {
        "namespace": "default",
        "label_selector": LabelSelector.parse("tier=web"),
    }
    assert [c.metadata.name for c in await api.list(ConfigMap, **web)] == ["a", "c"]
    assert [c.metadata.name for c in await api.list(ConfigMap, **parsed)] == ["a", "c"]
    assert [m.metadata.name for m in await api.list_metadata(ConfigMap, **web)] == ["a", "c"]


async def test_delete_object_takes_the_namespace_as_create_does(api: Client) -> None:
    await api.create(Namespace(metadata=kubeforge.ObjectMeta(name="other")))
    for namespace in ("default", "other"):
        await api.create(ConfigMap(metadata=kubeforge.ObjectMeta(name="twin")), namespace=namespace)
    twin = ConfigMap(metadata=kubeforge.ObjectMeta(name="twin", namespace="default"))
    dry: DeleteOptions = {"namespace": "other", "dry_run": True}
    await api.delete_object(twin, **dry)
    await api.get(ConfigMap, "twin", namespace="other")  # a dry run deletes nothing
    await api.delete_object(twin, namespace="other")
    assert await kubeforge.ignore_not_found(api.get(ConfigMap, "twin", namespace="other")) is None
    await api.get(ConfigMap, "twin", namespace="default")
