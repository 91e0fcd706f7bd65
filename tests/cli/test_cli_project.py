"""A kubebuilder-layout project through the CLI: manifests, install, run, uninstall."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubeforge import Client, NotFound
from kubeforge.testing import Kubectl, eventually, find_kubectl
from tests.support import KUBEFORGE, kubeforge

GROUP = "demo.kubeforge.dev"
CRD_FILE = f"{GROUP}_widgets.yaml"
CRD_NAME = f"widgets.{GROUP}"

WIDGET = '''\
"""Widget: the test project's one kind."""

from typing import Annotated

import kubeforge
from kubeforge import markers


class WidgetSpec(kubeforge.Model):
    size: Annotated[int, markers.Minimum(1)] = 1
    """How big the widget is."""


class WidgetStatus(kubeforge.Model):
    observed_size: int = 0
    """The size the controller last saw."""


@kubeforge.resource(group="demo.kubeforge.dev", version="v1alpha1", short_names=["wd"])
class Widget(kubeforge.Resource[WidgetSpec, WidgetStatus]):
    """A widget, mirrored into a ConfigMap."""
'''

CONTROLLER = """\
import kubeforge
from api.v1alpha1 import Widget


@kubeforge.rbac(groups="demo.kubeforge.dev", resources="widgets", verbs=["get", "list", "watch"])
@kubeforge.rbac(
    groups=["demo.kubeforge.dev"], resources=["widgets/status"], verbs=["get", "update", "patch"]
)
@kubeforge.rbac(resources=["configmaps"], verbs=["get", "list", "watch", "create", "patch"])
class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request):
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        mirror = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": request.name + "-widget", "namespace": request.namespace},
            "data": {"size": str(widget.spec.size)},
        }
        kubeforge.set_controller_reference(widget, mirror)
        await self.client.apply(mirror, field_manager="widget-controller", force=True)
        await self.client.patch_status(
            Widget,
            request.name,
            {"status": {"observedSize": widget.spec.size}},
            namespace=request.namespace,
        )
        return None
"""

MAIN = """\
import kubeforge
from api.v1alpha1 import Widget
from controllers.widget import WidgetReconciler


def setup(manager: kubeforge.Manager) -> None:
    (
        manager.controller()
        .for_(Widget)
        .owns("v1/ConfigMap")
        .watches("apps/v1/Deployment", lambda deployment: [])
        .with_options(cache_sync_timeout=SYNC_TIMEOUT)
        .complete(WidgetReconciler())
    )
"""


def write_project(root: Path, *, sync_timeout: float = 30.0) -> Path:
    files = {
        "api/__init__.py": "",
        "api/v1alpha1/__init__.py": "from api.v1alpha1.widget import Widget\n",
        "api/v1alpha1/widget.py": WIDGET,
        "controllers/__init__.py": "",
        "controllers/widget.py": CONTROLLER,
        "main.py": MAIN.replace("SYNC_TIMEOUT", repr(sync_timeout)),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


async def kustomize(directory: Path) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        find_kubectl(),
        "kustomize",
        str(directory),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return list(yaml.safe_load_all(out))


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    config = root / "config"
    return {
        str(p.relative_to(config)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(config.rglob("*"))
        if p.is_file()
    }


def rules_of(role: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """A role's verbs by (group, resource)."""
    found: dict[tuple[str, str], list[str]] = {}
    for rule in role["rules"]:
        for resource in rule.get("resources", []):
            for group in rule.get("apiGroups", []):
                found[(group, resource)] = rule["verbs"]
    return found


# manifests ----------------------------------------------------------------------------------


async def test_manifests_writes_crds_and_rbac_and_a_second_run_changes_nothing(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path / "widgets")
    first = await kubeforge("manifests", "--dir", str(root))
    assert first.code == 0, first.err
    written = {line.split()[1] for line in first.out.splitlines() if line.startswith("wrote")}
    assert written == {
        f"config/crd/bases/{CRD_FILE}",
        "config/crd/kustomization.yaml",
        "config/crd/kustomizeconfig.yaml",
        "config/rbac/role.yaml",
        "config/rbac/service_account.yaml",
        "config/rbac/role_binding.yaml",
        "config/rbac/kustomization.yaml",
    }

    crd = yaml.safe_load((root / "config/crd/bases" / CRD_FILE).read_text())
    assert crd["metadata"]["name"] == CRD_NAME
    assert crd["spec"]["names"]["shortNames"] == ["wd"]
    [version] = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["size"]["minimum"] == 1
    kustomization = yaml.safe_load((root / "config/crd/kustomization.yaml").read_text())
    assert kustomization["resources"] == [f"bases/{CRD_FILE}"]

    roles = list(yaml.safe_load_all((root / "config/rbac/role.yaml").read_text()))
    assert [(r["kind"], r["metadata"]["name"]) for r in roles] == [("ClusterRole", "manager-role")]
    rules = rules_of(roles[0])
    # Declared with @rbac, merged with the get/list/watch every watched kind needs.
    assert rules[(GROUP, "widgets")] == ["get", "list", "watch"]
    assert rules[(GROUP, "widgets/status")] == ["get", "patch", "update"]
    assert rules[("", "configmaps")] == ["create", "get", "list", "patch", "watch"]
    assert rules[("apps", "deployments")] == ["get", "list", "watch"]
    # What the manager itself needs.
    assert rules[("coordination.k8s.io", "leases")] == [
        "create",
        "delete",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert rules[("", "events")] == rules[("events.k8s.io", "events")] == ["create", "patch"]

    before = snapshot(root)
    second = await kubeforge("manifests", "--dir", str(root))
    assert second.code == 0, second.err
    lines = [line for line in second.out.splitlines() if "config/" in line]
    assert len(lines) == len(before)
    assert all(line.startswith("unchanged") for line in lines), second.out
    assert snapshot(root) == before

    crds = await kustomize(root / "config/crd")
    assert [c["metadata"]["name"] for c in crds] == [CRD_NAME]
    rbac = await kustomize(root / "config/rbac")
    assert sorted(o["kind"] for o in rbac) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
    ]
    [binding] = [o for o in rbac if o["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == "manager-role"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "controller-manager", "namespace": "system"}
    ]


async def test_manifests_removes_crds_of_kinds_that_are_gone(tmp_path: Path) -> None:
    root = write_project(tmp_path / "widgets")
    gadget = root / "api/v1alpha1/gadget.py"
    gadget.write_text(
        WIDGET.replace("Widget", "Gadget").replace('short_names=["wd"]', 'short_names=["gd"]')
    )
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    bases = root / "config/crd/bases"
    assert sorted(p.name for p in bases.iterdir()) == [f"{GROUP}_gadgets.yaml", CRD_FILE]
    # Files the command did not generate stay where they are.
    (bases / "notes.yaml").write_text("kind: ConfigMap\n")
    extra = root / "config/crd/kustomization.yaml"
    kustomization = yaml.safe_load(extra.read_text())
    kustomization["commonLabels"] = {"team": "widgets"}
    extra.write_text(yaml.safe_dump(kustomization))

    gadget.unlink()
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 0, result.err
    assert f"removed    config/crd/bases/{GROUP}_gadgets.yaml" in result.out
    assert sorted(p.name for p in bases.iterdir()) == [CRD_FILE, "notes.yaml"]
    kustomization = yaml.safe_load(extra.read_text())
    assert kustomization["resources"] == [f"bases/{CRD_FILE}"]
    assert kustomization["commonLabels"] == {"team": "widgets"}


async def test_project_errors_name_the_file(tmp_path: Path) -> None:
    result = await kubeforge("manifests", "--dir", str(tmp_path))
    assert result.code == 1
    assert "no api/ directory" in result.err

    root = write_project(tmp_path / "widgets")
    controller = root / "controllers/widget.py"
    controller.write_text(CONTROLLER + "\nbroken = (\n")
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 1
    assert "controllers/widget.py:" in result.err
    assert "syntax error" in result.err
    assert "Traceback" not in result.err

    controller.write_text(
        CONTROLLER.replace("import kubeforge\n", "import kubeforge\nimport nope\n")
    )
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 1
    assert "controllers/widget.py:2: ModuleNotFoundError: No module named 'nope'" in result.err

    controller.write_text(CONTROLLER)
    main = root / "main.py"
    main.write_text(main.read_text().replace('.owns("v1/ConfigMap")', '.owns("ConfigMap")'))
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 1
    assert "main.py:" in result.err
    assert "setup(manager) failed" in result.err
    assert not (root / "config").exists()

    main.write_text("")
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 1
    assert "defines no setup(manager) function" in result.err


LOAD_TWICE = """\
import sys

import orjson

from kubeforge._cli.project import load_project

report = []
for root in sys.argv[1:]:
    project = load_project(root)
    report.append(
        {
            "groups": [c.__kubeforge__.gvk.group for c in project.resources],
            "reconcilers": [c.__name__ for c in project.reconcilers],
            "rules": len(project.rules),
            "watched": [[k.group, k.plural] for k in project.watched_kinds()],
            "root_on_path": root in sys.path,
        }
    )
sys.stdout.write(orjson.dumps(report).decode())
"""


async def test_projects_load_one_after_another_in_one_process(tmp_path: Path) -> None:
    # A process of its own: loading imports the projects' classes into it.
    first = write_project(tmp_path / "one")
    second = write_project(tmp_path / "two")
    widget = second / "api/v1alpha1/widget.py"
    widget.write_text(WIDGET.replace("demo.kubeforge.dev", "other.kubeforge.dev"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOAD_TWICE,
        str(first),
        str(second),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    one, two = orjson.loads(out)
    assert one["groups"] == [GROUP]
    assert two["groups"] == ["other.kubeforge.dev"]
    assert one["reconcilers"] == two["reconcilers"] == ["WidgetReconciler"]
    assert one["rules"] == two["rules"] == 3
    assert one["root_on_path"] is two["root_on_path"] is False
    assert two["watched"] == [
        ["", "configmaps"],
        ["apps", "deployments"],
        ["other.kubeforge.dev", "widgets"],
    ]


# against a cluster --------------------------------------------------------------------------


async def test_install_and_uninstall(tmp_path: Path, kubeconfig: Path, kubectl: Kubectl) -> None:
    root = write_project(tmp_path / "widgets")
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    dry = await kubectl.run("apply", "--dry-run=server", "-k", str(root / "config/crd"))
    assert "customresourcedefinition.apiextensions.k8s.io/" + CRD_NAME in dry.out
    missing = await kubectl.run("get", "crd", CRD_NAME, check=False)
    assert missing.code != 0

    installed = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert installed.code == 0, installed.err
    assert f"established  {CRD_NAME}" in installed.out
    shown = await kubectl.run("get", "crd", CRD_NAME, "-o", "yaml", "--show-managed-fields")
    crd = yaml.safe_load(shown.out)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert "kubeforge" in {m["manager"] for m in crd["metadata"]["managedFields"]}
    await kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: demo.kubeforge.dev/v1alpha1\nkind: Widget\n"
        "metadata: {name: blue}\nspec: {size: 2}\n",
    )
    listed = await kubectl.run("get", "widgets", "-o", "name")
    assert listed.out.split() == [f"widget.{GROUP}/blue"]

    removed = await kubeforge("uninstall", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert removed.code == 0, removed.err
    assert f"deleted      {CRD_NAME}" in removed.out
    assert (await kubectl.run("get", "crd", CRD_NAME, check=False)).code != 0
    gone = await kubeforge("uninstall", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert gone.code == 0, gone.err
    assert f"not found    {CRD_NAME}" in gone.out


async def test_install_without_manifests_or_cluster_fails_clearly(tmp_path: Path) -> None:
    root = write_project(tmp_path / "widgets")
    result = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(tmp_path / "kc"))
    assert result.code == 1
    assert "run `kubeforge manifests` first" in result.err
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    result = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(tmp_path / "kc"))
    assert result.code == 1
    assert "kc does not exist" in result.err
    assert "Traceback" not in result.err


async def test_run_reconciles_and_exits_0_on_sigterm(
    tmp_path: Path, kubeconfig: Path, kubectl: Kubectl, api: Client
) -> None:
    root = write_project(tmp_path / "widgets")
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    installed = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert installed.code == 0, installed.err
    await kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: demo.kubeforge.dev/v1alpha1\nkind: Widget\n"
        "metadata: {name: first}\nspec: {size: 3}\n",
    )
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "run",
        "--dir",
        str(root),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        "--leader-elect",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:

        async def mirrored_or_exited() -> bool:
            return proc.returncode is not None or await _has_mirror(api, "first-widget", "3")

        await eventually(mirrored_or_exited, timeout=60)
        assert proc.returncode is None, "kubeforge run exited early"
        cm = await api.get("v1/ConfigMap", "first-widget", namespace="default")
        [owner] = cm["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Widget", "first", True)

        async def status_written() -> bool:
            widget = await api.get(f"{GROUP}/v1alpha1/Widget", "first", namespace="default")
            return bool((widget.get("status") or {}).get("observedSize") == 3)

        await eventually(status_written, timeout=30)
        lease = await api.get(
            "coordination.k8s.io/v1/Lease", "widgets-leader-election", namespace="default"
        )
        assert lease["spec"]["holderIdentity"]

        # A change is reconciled too: the controller keeps running.
        await kubectl.run("patch", "widget", "first", "--type=merge", "-p", '{"spec": {"size": 5}}')
        await eventually(lambda: _has_mirror(api, "first-widget", "5"), timeout=30)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out.decode()
    assert b"controllers widget" in out


async def _has_mirror(api: Client, name: str, size: str) -> bool:
    try:
        cm = await api.get("v1/ConfigMap", name, namespace="default")
    except NotFound:
        return False
    return bool(cm.get("data") == {"size": size})


async def test_run_exits_1_when_the_caches_do_not_sync(tmp_path: Path, kubeconfig: Path) -> None:
    # The CRD is not installed: the Widget informer cannot list.
    root = write_project(tmp_path / "widgets", sync_timeout=1.0)
    result = await kubeforge(
        "run",
        "--dir",
        str(root),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
    )
    assert result.code == 1, result.out + result.err
    assert "caches did not sync" in result.err
    assert f"{GROUP}/v1alpha1/Widget" in result.err
    assert "Traceback" not in result.err


async def test_run_logs_json_lines_with_log_format_json(tmp_path: Path, kubeconfig: Path) -> None:
    root = write_project(tmp_path / "widgets", sync_timeout=1.0)
    result = await kubeforge(
        "run",
        "--dir",
        str(root),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        "--log-format",
        "json",
    )
    assert result.code == 1, result.out + result.err
    records = [json.loads(line) for line in result.err.splitlines() if line.startswith("{")]
    assert records, result.err
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["logger"] == "kubeforge.informer" and r["level"] == "warning" for r in records)
    bad = await kubeforge("run", "--dir", str(root), "--log-format", "xml")
    assert bad.code == 2 and "xml" in bad.err


async def test_run_exits_1_when_leadership_is_lost(
    tmp_path: Path, kubeconfig: Path, api: Client
) -> None:
    root = write_project(tmp_path / "widgets")
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    installed = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert installed.code == 0, installed.err
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "run",
        "--dir",
        str(root),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        "--leader-elect",
        "--leader-election-id",
        "widgets-lock",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    lease_kind = "coordination.k8s.io/v1/Lease"
    try:

        async def leading() -> bool:
            assert proc.returncode is None, "kubeforge run exited early"
            try:
                lease = await api.get(lease_kind, "widgets-lock", namespace="default")
            except NotFound:
                return False
            return bool(lease["spec"].get("holderIdentity"))

        await eventually(leading, timeout=60)
        # Another candidate takes the lease over: this one cannot renew and must stop.
        await api.patch(
            lease_kind,
            "widgets-lock",
            {"spec": {"holderIdentity": "another-candidate"}},
            namespace="default",
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 1, out.decode()
    assert b"error: leader election lost" in out
    assert b"Traceback" not in out


async def test_installing_again_updates_the_crd(
    tmp_path: Path, kubeconfig: Path, kubectl: Kubectl, api: Client
) -> None:
    root = write_project(tmp_path / "widgets")
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    first = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert first.code == 0, first.err

    # The type gains a field: manifests, then install again, serve it.
    widget = root / "api/v1alpha1/widget.py"
    widget.write_text(widget.read_text().replace("    size:", '    color: str = ""\n    size:'))
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    again = await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    assert again.code == 0, again.err
    assert f"established  {CRD_NAME}" in again.out
    await kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: demo.kubeforge.dev/v1alpha1\nkind: Widget\n"
        "metadata: {name: red}\nspec: {size: 2, color: red}\n",
    )
    red = await api.get(f"{GROUP}/v1alpha1/Widget", "red", namespace="default")
    assert red["spec"] == {"size": 2, "color": "red"}


async def _run_as_service_account(root: Path, kubeconfig: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "run",
        "--dir",
        str(root),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        "--as-service-account",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


async def test_run_as_service_account_works_with_the_generated_rbac(
    tmp_path: Path, kubeconfig: Path, kubectl: Kubectl, api: Client
) -> None:
    root = write_project(tmp_path / "widgets")
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    assert (
        await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    ).code == 0
    await kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: demo.kubeforge.dev/v1alpha1\nkind: Widget\n"
        "metadata: {name: first}\nspec: {size: 2}\n",
    )
    proc = await _run_as_service_account(root, kubeconfig)
    try:

        async def mirrored_or_exited() -> bool:
            return proc.returncode is not None or await _has_mirror(api, "first-widget", "2")

        await eventually(mirrored_or_exited, timeout=60)
        assert proc.returncode is None, "kubeforge run exited early"
        cm = await api.get("v1/ConfigMap", "first-widget", namespace="default")
        [entry] = cm["metadata"]["managedFields"]
        assert entry["manager"] == "widget-controller"
        account = await api.get("v1/ServiceAccount", "controller-manager", namespace="system")
        assert account["metadata"]["name"] == "controller-manager"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out.decode()
    assert b"running as service account system/controller-manager" in out
    assert b"forbidden" not in out


async def test_run_as_service_account_names_a_missing_rule(
    tmp_path: Path, kubeconfig: Path, kubectl: Kubectl
) -> None:
    root = write_project(tmp_path / "widgets")
    controller = root / "controllers" / "widget.py"
    controller.write_text(
        controller.read_text().replace(
            '@kubeforge.rbac(resources=["configmaps"], verbs=["get", "list", "watch", "create", '
            '"patch"])\n',
            "",
        )
    )
    assert (await kubeforge("manifests", "--dir", str(root))).code == 0
    assert (
        await kubeforge("install", "--dir", str(root), "--kubeconfig", str(kubeconfig))
    ).code == 0
    await kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: demo.kubeforge.dev/v1alpha1\nkind: Widget\n"
        "metadata: {name: first}\nspec: {size: 2}\n",
    )
    proc = await _run_as_service_account(root, kubeconfig)
    wanted = (
        b"the rule that would allow it: "
        b'@rbac(groups=[""], resources=["configmaps"], verbs=["patch"])'
    )
    seen = b""
    try:
        assert proc.stdout is not None

        async def read_until_named() -> None:
            nonlocal seen
            assert proc.stdout is not None
            while wanted not in seen:
                line = await proc.stdout.readline()
                if not line:
                    return
                seen += line

        await asyncio.wait_for(read_until_named(), 60)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    out = seen + rest
    assert wanted in out, out.decode()
    assert b"PATCH /api/v1/namespaces/default/configmaps/first-widget" in out
