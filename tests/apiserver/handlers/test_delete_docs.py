"""The delete calls docs/runtime.md shows (propagation policy, preconditions, grace period,
dry run), run as written against an API server that collects garbage; and the preconditions
refusing a stale delete, as kube-apiserver's Preconditions check does."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import kubeforge
from kubeforge import Client
from kubeforge.apiserver import APIServer
from kubeforge.client import load_kubeconfig
from kubeforge.models import ConfigMap, Container, Deployment, Job, Pod
from kubeforge.testing import eventually
from tests.support import ROOT


def documented_example() -> str:
    """The code block of docs/runtime.md's "Calls" section that deletes things."""
    text = (ROOT / "docs" / "runtime.md").read_text()
    section = text.split("### Calls", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    [example] = [b for b in blocks if "preconditions=" in b and "nightly" in b]
    return example


async def run_example(client: Client) -> None:
    source = "async def example(client):\n" + textwrap.indent(documented_example(), "    ")
    names: dict[str, Any] = {
        "kubeforge": kubeforge,
        "ConfigMap": ConfigMap,
        "Deployment": Deployment,
        "Job": Job,
        "Pod": Pod,
    }
    exec(compile(source, "docs/runtime.md", "exec"), names)
    await names["example"](client)


def pod_template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [Container(name="c", image="busybox").to_dict()]},
    }


@pytest.fixture
async def api(gc_server: APIServer, tmp_path: Path) -> Any:
    async with Client(load_kubeconfig(gc_server.write_kubeconfig(tmp_path / "kc"))) as client:
        yield client


async def test_the_documented_deletes_do_what_the_docs_say(api: Client) -> None:
    template = pod_template()
    await api.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "nightly"},
            "spec": {
                "template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}
            },
        },
        namespace="default",
    )
    deployment = await api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template},
        },
        namespace="default",
    )
    owned = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": deployment["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owned", "ownerReferences": [owned]},
        },
        namespace="default",
    )
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0"},
            "spec": template["spec"],
        },
        namespace="default",
    )
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"app": "web"}},
        },
        namespace="default",
    )

    await run_example(api)

    async def gone(kind: str, name: str) -> bool:
        return await kubeforge.ignore_not_found(api.get(kind, name, namespace="default")) is None

    assert await gone("batch/v1/Job", "nightly")
    assert await gone("v1/Pod", "web-0")  # no grace period: at once
    assert not await gone("v1/ConfigMap", "c")  # a dry run
    # Foreground: the Deployment waits for what it owns, then goes.
    await eventually(lambda: gone("v1/ConfigMap", "owned"), timeout=10)
    await eventually(lambda: gone("apps/v1/Deployment", "web"), timeout=10)


async def test_preconditions_refuse_a_changed_or_recreated_object(api: Client) -> None:
    created = await api.create(
        ConfigMap(metadata=kubeforge.ObjectMeta(name="p")), namespace="default"
    )
    uid, version = created.metadata.uid, created.metadata.resource_version
    created.data = {"k": "v"}
    await api.update(created)
    with pytest.raises(kubeforge.Conflict):
        await api.delete(
            ConfigMap, "p", namespace="default", preconditions={"resourceVersion": version}
        )
    with pytest.raises(kubeforge.Conflict):
        await api.delete(ConfigMap, "p", namespace="default", preconditions={"uid": "another"})
    # None asks nothing of that field: the uid alone holds.
    answer = await api.delete_object(created, preconditions={"uid": uid, "resourceVersion": None})
    assert answer["kind"] == "Status" and answer["status"] == "Success"
