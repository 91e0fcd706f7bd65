"""Real kubectl (1.29, 1.31, 1.33) against the embedded server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
import yaml

from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import kubectl_for
from tests.support.crds import widget_crd

pytestmark = pytest.mark.kubectl

VERSIONS = ["1.29", "1.31", "1.33"]

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: demo
data:
  color: blue
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
"""

WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata:
  name: gizmo
spec:
  size: 3
"""


@pytest.fixture(params=VERSIONS)
def kc(request: pytest.FixtureRequest, kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return kubectl_for(kubeconfig, tmp_path / f"cache-{request.param}", request.param)


async def install_widgets(kc: Kubectl, tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(widget_crd()))
    await kc.run("apply", "-f", str(crd))
    await kc.run("wait", "--for=condition=established", "--timeout=20s", "crd/widgets.example.com")


async def test_apply_get_yaml_patch_label_delete_builtin(kc: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CONFIGMAP)
    out = (await kc.run("apply", "-f", str(manifest))).out
    assert "configmap/settings created" in out
    out = (await kc.run("apply", "-f", str(manifest))).out
    assert "configmap/settings unchanged" in out

    table = (await kc.run("get", "configmaps")).out
    header, *rows = table.strip().splitlines()
    assert header.split() == ["NAME", "DATA", "AGE"]
    assert any(r.split()[:2] == ["settings", "1"] for r in rows)

    doc = yaml.safe_load((await kc.run("get", "cm", "settings", "-o", "yaml")).out)
    assert doc["data"] == {"color": "blue"}
    annotations = doc["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations

    await kc.run("patch", "cm", "settings", "--type", "merge", "-p", '{"data":{"size":"L"}}')
    await kc.run(
        "patch",
        "cm",
        "settings",
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/data/color","value":"red"}]',
    )
    await kc.run("patch", "cm", "settings", "-p", '{"data":{"shape":"round"}}')  # strategic
    data = orjson.loads((await kc.run("get", "cm", "settings", "-o", "json")).out)["data"]
    assert data == {"color": "red", "size": "L", "shape": "round"}

    await kc.run("label", "cm", "settings", "tier=gold")
    labels = (await kc.run("get", "cm", "-l", "tier=gold", "-o", "name")).out.split()
    assert labels == ["configmap/settings"]
    shown = (await kc.run("get", "cm", "settings", "--show-labels")).out
    assert "tier=gold" in shown

    out = (await kc.run("delete", "cm", "settings")).out
    assert 'configmap "settings" deleted' in out
    missing = await kc.run("get", "cm", "settings", check=False)
    assert missing.code != 0 and "NotFound" in missing.err


async def test_deployment_apply_edit_style_patch_and_wait(kc: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(DEPLOYMENT)
    await kc.run("apply", "-f", str(manifest))
    manifest.write_text(DEPLOYMENT.replace("nginx:1.25", "nginx:1.27"))
    out = (await kc.run("apply", "-f", str(manifest))).out
    assert "deployment.apps/web configured" in out
    image = (
        await kc.run(
            "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
        )
    ).out
    assert image == "nginx:1.27"
    header = (await kc.run("get", "deployments")).out.splitlines()[0].split()
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    await kc.run("scale", "deploy", "web", "--replicas=4")
    replicas = (await kc.run("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}")).out
    assert replicas == "4"
    out = (await kc.run("delete", "-f", str(manifest), "--wait=true")).out
    assert "deleted" in out


async def test_wait_for_condition_and_delete(
    kc: Kubectl, tmp_path: Path, server: APIServer
) -> None:
    await install_widgets(kc, tmp_path)
    manifest = tmp_path / "w.yaml"
    manifest.write_text(WIDGET)
    await kc.run("apply", "-f", str(manifest))
    waiter = asyncio.create_task(
        kc.run("wait", "--for=jsonpath={.status.phase}=Ready", "--timeout=20s", "widget/gizmo")
    )
    await kc.run(
        "patch",
        "widget",
        "gizmo",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Ready"}}',
    )
    result = await waiter
    assert "condition met" in result.out
    deleted = await kc.run("delete", "widget", "gizmo", "--timeout=20s")
    assert 'widget.example.com "gizmo" deleted' in deleted.out


async def test_custom_resource_columns_and_short_names(kc: Kubectl, tmp_path: Path) -> None:
    await install_widgets(kc, tmp_path)
    manifest = tmp_path / "w.yaml"
    manifest.write_text(WIDGET)
    out = (await kc.run("apply", "-f", str(manifest))).out
    assert "widget.example.com/gizmo created" in out
    table = (await kc.run("get", "wd")).out.strip().splitlines()
    assert table[0].split() == ["NAME", "SIZE", "COLOR", "PHASE", "AGE"]
    assert table[1].split()[:3] == ["gizmo", "3", "red"]
    every = (await kc.run("get", "all")).out
    assert "widget.example.com/gizmo" in every
    await kc.run("patch", "widget", "gizmo", "--type=merge", "-p", '{"spec":{"size":5}}')
    size = (await kc.run("get", "widgets", "gizmo", "-o", "jsonpath={.spec.size}")).out
    assert size == "5"
    bad = await kc.run(
        "patch", "widget", "gizmo", "--type=merge", "-p", '{"spec":{"size":50}}', check=False
    )
    assert bad.code != 0 and "spec.size" in bad.err
    invalid = tmp_path / "bad.yaml"
    invalid.write_text(WIDGET.replace("size: 3", 'size: "three"'))
    rejected = await kc.run("apply", "-f", str(invalid), check=False)
    assert rejected.code != 0 and "spec.size" in rejected.err


async def test_get_watch_prints_changes(kc: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CONFIGMAP)
    await kc.run("apply", "-f", str(manifest))
    proc = await kc.start("get", "cm", "settings", "-w", "--output-watch-events")
    assert proc.stdout is not None
    lines: list[str] = []

    async def read_until(count: int) -> None:
        while len(lines) < count:
            line = await asyncio.wait_for(proc.stdout.readline(), 20)  # type: ignore[union-attr]
            if not line:
                break
            lines.append(line.decode())

    try:
        await read_until(2)  # header + ADDED
        await kc.run("label", "cm", "settings", "seen=yes")
        await read_until(3)
    finally:
        proc.kill()
        await proc.wait()
    assert lines[0].split()[:2] == ["EVENT", "NAME"]
    assert lines[1].split()[:2] == ["ADDED", "settings"]
    assert lines[2].split()[:2] == ["MODIFIED", "settings"]


async def test_api_resources_and_explain(kc: Kubectl, tmp_path: Path) -> None:
    await install_widgets(kc, tmp_path)
    listing = (await kc.run("api-resources")).out
    rows = {line.split()[0]: line.split() for line in listing.splitlines()[1:]}
    assert rows["deployments"][1] == "deploy"
    assert rows["widgets"][1] == "wd"
    assert "example.com/v1" in rows["widgets"]
    explained = (await kc.run("explain", "deployment.spec.replicas")).out
    assert "replicas" in explained and "integer" in explained
    crd_doc = (await kc.run("explain", "widget.spec")).out
    assert "size" in crd_doc and "color" in crd_doc


async def test_create_and_replace_and_dry_run(
    kc: Kubectl, tmp_path: Path, server: APIServer
) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CONFIGMAP)
    before = server.store.revision
    out = (await kc.run("create", "-f", str(manifest), "--dry-run=server")).out
    assert "created (server dry run)" in out
    assert server.store.revision == before
    await kc.run("create", "-f", str(manifest))
    manifest.write_text(CONFIGMAP.replace("blue", "green"))
    await kc.run("replace", "-f", str(manifest))
    color = (await kc.run("get", "cm", "settings", "-o", "jsonpath={.data.color}")).out
    assert color == "green"
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(CONFIGMAP.replace("data:", "bogus: 1\ndata:").replace("settings", "other"))
    strict = await kc.run("create", "-f", str(unknown), check=False)
    assert strict.code != 0 and 'unknown field "bogus"' in strict.err


async def test_server_side_apply(kc: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CONFIGMAP)
    out = (await kc.run("apply", "--server-side", "-f", str(manifest))).out
    assert "serverside-applied" in out
    manifest.write_text(CONFIGMAP.replace("blue", "green"))
    await kc.run("apply", "--server-side", "-f", str(manifest))
    shared = await kc.run("apply", "--server-side", "--field-manager=other", "-f", str(manifest))
    assert shared.code == 0  # same values: shared ownership, no conflict
    manifest.write_text(CONFIGMAP.replace("blue", "purple"))
    conflict = await kc.run(
        "apply", "--server-side", "--field-manager=other", "-f", str(manifest), check=False
    )
    assert conflict.code != 0 and "conflict" in conflict.err.lower()


async def test_namespaces_and_all_namespaces(kc: Kubectl) -> None:
    await kc.run(
        "apply", "-f", "-", stdin="apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"
    )
    ns = (await kc.run("get", "ns")).out
    assert "team-a" in ns and "kube-system" in ns
    await kc.run("apply", "-n", "team-a", "-f", "-", stdin=CONFIGMAP)
    everything = (await kc.run("get", "cm", "-A")).out
    assert "team-a" in everything and "settings" in everything

    async def gone() -> bool:
        result = await kc.run("get", "cm", "-n", "team-a", "settings", check=False)
        return result.code != 0

    await kc.run("delete", "cm", "-n", "team-a", "settings")
    await eventually(gone)
