"""Built-in objects lose the empty maps and lists Go's encoder leaves out (`omitempty`), as a
typed round trip does; fields written even when empty, and custom objects' bodies, keep them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeforge.testing import Kubectl
from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget_crd

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
EMPTY_META = {"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []}


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **EMPTY_META},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {}},
                "spec": {
                    "nodeSelector": {},
                    "volumes": [],
                    "tolerations": [],
                    "securityContext": {},
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx",
                            "env": [],
                            "args": [],
                            "ports": [],
                            "resources": {"limits": {}, "requests": {}},
                        }
                    ],
                },
            },
        },
    }


def assert_deployment_without_empties(obj: dict[str, Any]) -> None:
    for key in EMPTY_META:
        assert key not in obj["metadata"]
    template = obj["spec"]["template"]
    assert "annotations" not in template["metadata"]
    spec = template["spec"]
    for key in ("nodeSelector", "volumes", "tolerations"):
        assert key not in spec
    # A struct is written even when empty.
    assert spec["securityContext"] == {}
    container = spec["containers"][0]
    for key in ("env", "args", "ports"):
        assert key not in container
    assert container["resources"] == {}


async def test_created_objects_drop_empty_maps_and_lists(http: HTTPClient) -> None:
    reply = await http.post(
        CMS,
        {"metadata": {"name": "empty", **EMPTY_META}, "data": {}, "binaryData": {}},
    )
    assert reply.status == 201
    for obj in (reply.json(), (await http.get(f"{CMS}/empty")).json()):
        assert "data" not in obj and "binaryData" not in obj
        for key in EMPTY_META:
            assert key not in obj["metadata"]
    reply = await http.post(DEPLOYS, deployment("web"))
    assert reply.status == 201, reply.body
    assert_deployment_without_empties(reply.json())
    assert_deployment_without_empties((await http.get(f"{DEPLOYS}/web")).json())


async def test_updates_patches_and_applies_drop_them_too(http: HTTPClient) -> None:
    assert (await http.post(DEPLOYS, deployment("web"))).status == 201
    current = (await http.get(f"{DEPLOYS}/web")).json()
    body = deployment("web")
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    reply = await http.put(f"{DEPLOYS}/web", body)
    assert reply.status == 200, reply.body
    assert_deployment_without_empties(reply.json())
    # Nothing changed, so neither did the generation.
    assert reply.json()["metadata"]["generation"] == current["metadata"]["generation"]
    reply = await http.patch(
        f"{DEPLOYS}/web",
        {"spec": {"template": {"spec": {"volumes": [], "nodeSelector": {}}}}},
        "application/merge-patch+json",
    )
    assert reply.status == 200
    assert_deployment_without_empties(reply.json())
    reply = await http.patch(
        f"{DEPLOYS}/web?fieldManager=tool", deployment("web"), "application/apply-patch+yaml"
    )
    assert reply.status == 200, reply.body
    assert_deployment_without_empties(reply.json())


async def test_fields_written_when_empty_keep_their_empty_value(http: HTTPClient) -> None:
    # ClusterRole.rules has no omitempty; EndpointSlice.endpoints is required.
    role = {"metadata": {"name": "nothing"}, "rules": []}
    reply = await http.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    assert reply.status == 201, reply.body
    assert reply.json()["rules"] == []
    slice_ = {"metadata": {"name": "none"}, "addressType": "IPv4", "endpoints": [], "ports": []}
    reply = await http.post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", slice_)
    assert reply.status == 201, reply.body
    assert reply.json()["endpoints"] == [] and reply.json()["ports"] == []


async def test_custom_objects_keep_empty_values_except_in_metadata(http: HTTPClient) -> None:
    assert (await http.post(CRDS, widget_crd())).status == 201
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", **EMPTY_META},
        "spec": {"size": 1, "extra": {"map": {}, "list": []}},
    }
    reply = await http.post(WIDGETS, widget)
    assert reply.status == 201, reply.body
    stored = (await http.get(f"{WIDGETS}/w")).json()
    assert stored["spec"]["extra"] == {"map": {}, "list": []}
    for key in EMPTY_META:
        assert key not in stored["metadata"]


MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: empty
  labels: {}
  annotations: {}
data: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {}
    spec:
      nodeSelector: {}
      volumes: []
      containers:
      - name: c
        image: nginx
        env: []
        args: []
"""


@pytest.mark.kubectl
async def test_kubectl_diff_of_an_unchanged_object_is_empty(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    # Client-side apply first, then the same manifest applied server-side, as when a
    # project moves to server-side apply; neither diff may show a change.
    for mode in ("--server-side=false", "--server-side=true"):
        await kubectl.run("apply", mode, "-f", str(manifest))
        result = await kubectl.run("diff", mode, "-f", str(manifest), check=False)
        assert (result.code, result.out) == (0, ""), result.out + result.err
