"""kubectl reading `/openapi/v2` (gnostic protobuf) with its default validation.

kubectl 1.27 and 1.28 fetch it before every `apply`, `create -f`, `diff` and `explain` (and
fail without it); every version validates `kind: List` files on the client against its
definitions and renders `explain --output=plaintext-openapiv2` from it. Each test keeps one
kubectl cache directory, so the HTTP cache revalidates the document by its ETag, as it would
against a cluster, while CRDs come and go.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeforge.testing import Kubectl
from tests.support import kubectl_for
from tests.support.crds import widget_crd

pytestmark = pytest.mark.kubectl

VERSIONS = ["1.27", "1.28", "1.33"]

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80, name: http}]
        resources: {limits: {cpu: 100m, memory: 64Mi}}
        livenessProbe: {httpGet: {port: http, path: /}}
      - name: sidecar
        image: busybox
"""

WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata:
  name: gizmo
spec:
  size: 3
  port: http
  note: null
  extra: {anything: [1, 2]}
"""


@pytest.fixture(params=VERSIONS)
def kc(request: pytest.FixtureRequest, kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return kubectl_for(kubeconfig, tmp_path / f"cache-{request.param}", request.param)


def manifest(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


async def test_apply_create_and_diff_builtin_kinds(kc: Kubectl, tmp_path: Path) -> None:
    cm = manifest(tmp_path, "cm.yaml", CONFIGMAP)
    assert "configmap/settings created" in (await kc.run("apply", "-f", cm)).out
    assert "configmap/settings unchanged" in (await kc.run("apply", "-f", cm)).out
    unchanged = await kc.run("diff", "-f", cm, check=False)
    assert (unchanged.code, unchanged.out) == (0, "")
    cm = manifest(tmp_path, "cm.yaml", CONFIGMAP.replace("blue", "green"))
    changed = await kc.run("diff", "-f", cm, check=False)
    assert changed.code == 1, changed.err
    assert "-  color: blue" in changed.out and "+  color: green" in changed.out
    assert "configmap/settings configured" in (await kc.run("apply", "-f", cm)).out

    # A strategic merge patch computed from the definitions' patch keys keeps the
    # containers kubectl did not touch, by name.
    deploy = manifest(tmp_path, "deploy.yaml", DEPLOYMENT)
    assert "deployment.apps/web created" in (await kc.run("apply", "-f", deploy)).out
    deploy = manifest(tmp_path, "deploy.yaml", DEPLOYMENT.replace("nginx:1.25", "nginx:1.27"))
    await kc.run("apply", "-f", deploy)
    images = await kc.run(
        "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].image}"
    )
    assert images.out == "nginx:1.27 busybox"

    other = manifest(tmp_path, "other.yaml", CONFIGMAP.replace("settings", "other"))
    assert "configmap/other created" in (await kc.run("create", "-f", other)).out
    text = CONFIGMAP.replace("settings", "bogus").replace("data:", "x: 1\ndata:")
    bogus = manifest(tmp_path, "bogus.yaml", text)
    refused = await kc.run("create", "-f", bogus, check=False)
    assert refused.code != 0 and 'unknown field "x"' in refused.err


async def test_custom_resources_of_a_crd_installed_later(kc: Kubectl, tmp_path: Path) -> None:
    # The cached document (no Widget yet) must be replaced once the CRD is established.
    await kc.run("apply", "-f", manifest(tmp_path, "cm.yaml", CONFIGMAP))
    await kc.run("apply", "-f", manifest(tmp_path, "crd.yaml", yaml.safe_dump(widget_crd())))
    await kc.run("wait", "--for=condition=established", "--timeout=20s", "crd/widgets.example.com")

    explained = await kc.run("explain", "widget.spec.size", "--output=plaintext-openapiv2")
    assert "<integer>" in explained.out
    widget = manifest(tmp_path, "w.yaml", WIDGET)
    assert "widget.example.com/gizmo created" in (await kc.run("apply", "-f", widget)).out
    assert "widget.example.com/gizmo unchanged" in (await kc.run("apply", "-f", widget)).out
    widget = manifest(tmp_path, "w.yaml", WIDGET.replace("size: 3", "size: 4"))
    changed = await kc.run("diff", "-f", widget, check=False)
    assert changed.code == 1 and "+  size: 4" in changed.out, changed.err
    assert "widget.example.com/gizmo configured" in (await kc.run("apply", "-f", widget)).out
    twin = manifest(tmp_path, "twin.yaml", WIDGET.replace("gizmo", "twin"))
    assert "widget.example.com/twin created" in (await kc.run("create", "-f", twin)).out
    bogus = manifest(tmp_path, "bogus.yaml", WIDGET.replace("gizmo", "bad") + "  wheels: 4\n")
    refused = await kc.run("create", "-f", bogus, check=False)
    assert refused.code != 0 and "spec.wheels" in refused.err


async def test_explain_builtin_and_custom_fields(kc: Kubectl, tmp_path: Path) -> None:
    await kc.run("apply", "-f", manifest(tmp_path, "crd.yaml", yaml.safe_dump(widget_crd())))
    await kc.run("wait", "--for=condition=established", "--timeout=20s", "crd/widgets.example.com")
    for output in ("plaintext", "plaintext-openapiv2"):
        image = await kc.run(
            "explain", "deployment.spec.template.spec.containers.image", f"--output={output}"
        )
        assert "image" in image.out and "<string>" in image.out, output
        assert "Container image name" in image.out, output
        size = (await kc.run("explain", "widget.spec.size", f"--output={output}")).out
        assert "size" in size and "<integer>" in size, output
        spec = (await kc.run("explain", "widget.spec", f"--output={output}")).out
        assert "color" in spec and "-required-" in spec, output


async def test_list_files_are_validated_against_the_definitions(
    kc: Kubectl, tmp_path: Path
) -> None:
    await kc.run("apply", "-f", manifest(tmp_path, "crd.yaml", yaml.safe_dump(widget_crd())))
    await kc.run("wait", "--for=condition=established", "--timeout=20s", "crd/widgets.example.com")
    items = [yaml.safe_load(text) for text in (CONFIGMAP, DEPLOYMENT, WIDGET)]
    listed = {"apiVersion": "v1", "kind": "List", "items": items}
    out = (await kc.run("apply", "-f", manifest(tmp_path, "list.yaml", yaml.safe_dump(listed)))).out
    assert "configmap/settings created" in out
    assert "deployment.apps/web created" in out
    assert "widget.example.com/gizmo created" in out

    items[0]["bogus"] = 1
    items[1]["spec"]["replicas"] = "two"
    items[2]["spec"]["wheels"] = 4
    bad = manifest(tmp_path, "bad.yaml", yaml.safe_dump(listed))
    refused = await kc.run("apply", "-f", bad, check=False)
    assert refused.code != 0
    assert 'unknown field "bogus" in io.k8s.api.core.v1.ConfigMap' in refused.err
    assert "spec.replicas" in refused.err
    assert 'unknown field "wheels" in com.example.v1.Widget.spec' in refused.err
