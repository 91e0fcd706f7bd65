"""The pytest plugin, run on small projects with pytester: its fixtures, its ini options,
its usage errors, and the existing-cluster mode."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeforge._cli.project import _PACKAGES as PROJECT_PACKAGES
from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import USE_EXISTING_CLUSTER, eventually

pytest_plugins = ["pytester"]

GROUP = "demo.kubeforge.dev"

MAIN = f'''
import kubeforge

WIDGET = "{GROUP}/v1/Widget"


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request):
        try:
            widget = await self.client.get(WIDGET, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        if (widget.get("status") or {{}}).get("phase") != "Seen":
            await self.client.patch_status(
                WIDGET, request.name, {{"status": {{"phase": "Seen"}}}},
                namespace=request.namespace,
            )
        return None


def setup(manager):
    manager.controller().for_(WIDGET).named("widgets").complete(WidgetReconciler())
'''

# What the project's tests share: a Widget, and whether the controller has seen it.
WIDGETS = f'''
WIDGET = """
apiVersion: {GROUP}/v1
kind: Widget
metadata:
  name: first
"""


async def seen(client) -> bool:
    widget = await client.get("{GROUP}/v1/Widget", "first")
    return (widget.get("status") or {{}}).get("phase") == "Seen"
'''

WIDGET_TESTS = f'''
import kubeforge
from kubeforge.testing import Kubectl, TestEnv, eventually
from widgets import WIDGET, seen


async def test_the_controller_marks_widgets(
    testenv: TestEnv,
    kubeforge_client: kubeforge.Client,
    manager: kubeforge.Manager,
    kubectl: Kubectl,
    kubeforge_manager_config,
    request,
) -> None:
    assert request.config.pluginmanager.hasplugin("kubeforge")  # loaded by entry point
    assert kubeforge_manager_config is None  # without kubeforge_as_service_account: admin
    assert testenv.installed == ["widgets.{GROUP}"]
    assert kubeforge_client is testenv.client
    assert manager.running.is_set() and list(manager.controllers) == ["widgets"]
    await kubectl.apply(WIDGET)
    await eventually(lambda: seen(kubeforge_client), timeout=20)
    header, row = (await kubectl.run("get", "widgets")).rows()
    assert dict(zip(header, row)) == {{"NAME": "first", "PHASE": "Seen"}}


async def test_every_test_gets_a_fresh_cluster(kubeforge_client: kubeforge.Client) -> None:
    widgets = await kubeforge_client.list("{GROUP}/v1/Widget", all_namespaces=True)
    assert widgets.items == []
'''


def crd(kind: str) -> str:
    plural = f"{kind.lower()}s"
    return yaml.safe_dump(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {
                "group": GROUP,
                "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [
                            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}
                        ],
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
    )


def ini(**options: str) -> str:
    lines = ["[pytest]", "asyncio_default_fixture_loop_scope = function"]
    options.setdefault("asyncio_mode", "auto")
    lines += [f"{key} = {value}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def no_other_project_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester runs a project in this process, so a project another test loaded here
    (`kubeforge._cli.project.load_project` imports its `main` and packages) would be found in
    sys.modules instead of the one written for the test: each test imports its own."""
    for name in list(sys.modules):
        if name.partition(".")[0] in ("main", *PROJECT_PACKAGES):
            monkeypatch.delitem(sys.modules, name)


def project(pytester: pytest.Pytester, **options: str) -> Path:
    """A project as `kubeforge init` lays it out, with one CRD, main.setup, and what its
    tests share (widgets.py)."""
    bases = pytester.path / "config" / "crd" / "bases"
    bases.mkdir(parents=True)
    (bases / f"{GROUP}_widgets.yaml").write_text(crd("Widget"))
    (pytester.path / "main.py").write_text(MAIN)
    (pytester.path / "widgets.py").write_text(WIDGETS)
    (pytester.path / "pytest.ini").write_text(ini(**options))
    return pytester.path


def test_the_plugin_is_registered_as_an_entry_point() -> None:
    points = importlib.metadata.entry_points(group="pytest11")
    assert {p.name: p.value for p in points}.get("kubeforge") == "kubeforge._testing.plugin"


def test_a_project_test_uses_every_fixture(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(test_widgets=WIDGET_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)


INTERCEPTED_TESTS = """
import pytest

from kubeforge.testing import Interceptors, conflict, eventually, fail_with
from widgets import WIDGET, seen

FAILED = []


@pytest.fixture
def kubeforge_interceptors():
    conflict_once = fail_with(conflict(), times=1)

    async def hook(client, call):
        try:
            return await conflict_once(client, call)
        except Exception as exc:
            FAILED.append(exc)
            raise

    return Interceptors(patch_status=hook)


async def test_the_controller_retries_a_conflict(manager, kubectl, kubeforge_client) -> None:
    await kubectl.apply(WIDGET)
    await eventually(lambda: seen(kubeforge_client), timeout=20)
    assert [type(error).__name__ for error in FAILED] == ["Conflict"]


async def test_other_tests_get_their_own_interceptors(manager) -> None:
    assert manager.client.interceptors.patch_status is not None
"""


def test_the_manager_fixture_takes_the_interceptors_fixture(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(test_intercepted=INTERCEPTED_TESTS)
    pytester.runpytest().assert_outcomes(passed=2)


def test_the_fixtures_come_from_the_plugin(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(test_widgets=WIDGET_TESTS)
    result = pytester.runpytest("-p", "no:kubeforge")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*fixture 'testenv' not found*"])


def test_the_fixtures_work_in_strict_asyncio_mode(pytester: pytest.Pytester) -> None:
    project(pytester, asyncio_mode="strict")
    pytester.makepyfile(
        test_strict=f"""
import pytest


@pytest.mark.asyncio
async def test_strict(testenv, manager) -> None:
    assert testenv.installed == ["widgets.{GROUP}"]
    assert manager.running.is_set()
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_ini_options_are_honoured(pytester: pytest.Pytester) -> None:
    # The default places hold something that must not be used.
    project(pytester)
    (pytester.path / "main.py").write_text("raise RuntimeError('main must not be imported')\n")
    (pytester.path / "crds").mkdir()
    (pytester.path / "crds" / "widgets.yaml").write_text(crd("Widget"))
    (pytester.path / "more").mkdir()
    (pytester.path / "more" / "gadgets.yaml").write_text(crd("Gadget"))
    (pytester.path / "config" / "crd" / "bases" / f"{GROUP}_widgets.yaml").write_text(
        crd("Unwanted")
    )
    (pytester.path / "app").mkdir()
    (pytester.path / "app" / "__init__.py").write_text("")
    (pytester.path / "app" / "controllers.py").write_text(
        MAIN + "\n\nasync def register(manager):\n    setup(manager)\n"
    )
    (pytester.path / "pytest.ini").write_text(
        ini(
            kubeforge_crd_paths="\n    crds/widgets.yaml\n    more",
            kubeforge_setup="app.controllers:register",
            kubeforge_kubectl_version="1.31",
        )
    )
    pytester.makepyfile(
        test_options=f"""
from pathlib import Path


async def test_options(testenv, manager, kubectl) -> None:
    assert sorted(testenv.installed) == ["gadgets.{GROUP}", "widgets.{GROUP}"]
    assert list(manager.controllers) == ["widgets"]
    assert Path(kubectl.binary).name == "kubectl.1.31"
    version = await kubectl.json("version", "--client")
    assert version["clientVersion"]["minor"] == "31"
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "kubeforge_setup",
            "main.setup",
            "kubeforge_setup must name a function as module:function (like main:setup)",
        ),
        (
            "kubeforge_controllers",
            "*,-jobs",
            'kubeforge_controllers: "jobs" is not in the list of known controllers',
        ),
    ],
)
def test_a_malformed_option_is_a_usage_error(
    pytester: pytest.Pytester, option: str, value: str, message: str
) -> None:
    project(pytester, **{option: value})
    pytester.makepyfile(test_nothing="def test_nothing() -> None:\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


USES_MANAGER = "async def test_it(manager) -> None:\n    pass\n"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing_module:setup", "kubeforge_setup = missing_module:setup: no module named*"),
        ("main:nothing", "kubeforge_setup = main:nothing: main has no function 'nothing'"),
    ],
)
def test_a_setup_that_cannot_be_found_says_so(
    pytester: pytest.Pytester, setup: str, message: str
) -> None:
    project(pytester, kubeforge_setup=setup)
    pytester.makepyfile(test_it=USES_MANAGER)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"E*UsageError: {message}"])


def test_an_import_error_inside_the_setup_module_is_not_hidden(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    (pytester.path / "main.py").write_text("import not_installed_dependency\n")
    pytester.makepyfile(test_it=USES_MANAGER)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*No module named 'not_installed_dependency'*"])
    result.stdout.no_fnmatch_line("*UsageError*")


EXISTING_TESTS = f'''
import os

import kubeforge
from kubeforge.testing import eventually
from widgets import WIDGET, seen


async def test_existing(testenv, kubectl, manager) -> None:
    assert testenv.cluster is None
    assert testenv.config.server == os.environ["OUTSIDE_SERVER"]
    assert sorted(testenv.installed) == ["gadgets.{GROUP}", "widgets.{GROUP}"]
    await kubectl.run("create", "configmap", "made-by-kubectl")
    await kubectl.apply(WIDGET)
    await eventually(lambda: seen(testenv.client), timeout=20)


async def test_cluster_scoped(kubeforge_client: kubeforge.Client) -> None:
    # Created, not applied: a second run fails unless the first one's is gone.
    gadget = {{"apiVersion": "{GROUP}/v1", "kind": "Gadget", "metadata": {{"name": "only"}}}}
    await kubeforge_client.create(gadget)
'''


async def test_the_same_suite_runs_twice_against_one_existing_cluster(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    project(pytester)
    gadgets = yaml.safe_load(crd("Gadget"))
    gadgets["spec"]["scope"] = "Cluster"
    bases = pytester.path / "config" / "crd" / "bases"
    (bases / f"{GROUP}_gadgets.yaml").write_text(yaml.safe_dump(gadgets))
    pytester.makepyfile(test_existing=EXISTING_TESTS)
    async with DevCluster() as outside:
        assert outside.client is not None
        kubeconfig = outside.write_kubeconfig(tmp_path / "kubeconfig")
        env: dict[str, Any] = {
            **os.environ,
            USE_EXISTING_CLUSTER: "1",
            "KUBECONFIG": str(kubeconfig),
            "OUTSIDE_SERVER": outside.url,
        }
        for _ in range(2):
            # A process of its own: the cluster keeps serving from this event loop meanwhile.
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                cwd=pytester.path,
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 90)
            assert proc.returncode == 0, out.decode()
            assert b"2 passed" in out
        # Each test worked in a namespace of its own, deleted after it; the cluster-scoped
        # Gadget the test made went too. The CRDs stay installed.
        client = outside.client

        async def only_the_cluster_namespaces() -> bool:
            names = {n["metadata"]["name"] for n in await client.list("v1/Namespace")}
            assert not [n for n in names if n.startswith("test-")], names
            return True

        await eventually(only_the_cluster_namespaces, timeout=30)
        assert list(await client.list(f"{GROUP}/v1/Gadget")) == []
        configmaps = await client.list("v1/ConfigMap", all_namespaces=True)
        assert "made-by-kubectl" not in {c["metadata"]["name"] for c in configmaps}
        await client.get("apiextensions.k8s.io/v1/CustomResourceDefinition", f"gadgets.{GROUP}")


NAMESPACE_TESTS = """
SEEN = []


async def test_one(testenv, kubectl, kubeforge_client) -> None:
    await check(testenv, kubectl, kubeforge_client, "test-one-")


async def test_two(testenv, kubectl, kubeforge_client) -> None:
    await check(testenv, kubectl, kubeforge_client, "test-two-")


async def check(testenv, kubectl, client, prefix) -> None:
    namespace = testenv.namespace
    assert namespace.startswith(prefix) and len(namespace) == len(prefix) + 6
    SEEN.append(namespace)
    assert len(set(SEEN)) == len(SEEN)
    assert client.namespace == namespace
    await client.get("v1/Namespace", namespace)
    current = await kubectl.run("config", "view", "--minify", "-o", "jsonpath={..namespace}")
    assert current.out == namespace
    await kubectl.run("create", "configmap", "mine")
    await client.get("v1/ConfigMap", "mine")
"""


def test_each_test_works_in_a_namespace_of_its_own(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(test_namespaces=NAMESPACE_TESTS)
    pytester.runpytest().assert_outcomes(passed=2)


CONTROLLER_TESTS = '''
import pytest

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "by-hand"},
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}],
            }
        }
    },
}
ACTIVE = {"status": {"active": 2, "startTime": "2030-01-01T00:00:00Z"}}
REPLICA_SET = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: witness}
spec:
  replicas: 1
  selector: {matchLabels: {app: witness}}
  template:
    metadata: {labels: {app: witness}}
    spec: {containers: [{name: web, image: nginx}]}
"""


async def test_the_ini_option(testenv) -> None:
    assert "deployment-controller" not in testenv.cluster.controllers
    assert "job-controller" in testenv.cluster.controllers


@pytest.mark.kubeforge_controllers("*", "-job")
async def test_the_marker(testenv, kubectl) -> None:
    assert "deployment-controller" in testenv.cluster.controllers
    client = testenv.client
    await client.create(JOB)
    await client.patch_status("batch/v1/Job", "by-hand", ACTIVE, patch_type="merge")
    # The witness: the ReplicaSet controller, the scheduler and a node run a pod.
    await kubectl.run("create", "-f", "-", stdin=REPLICA_SET)
    await kubectl.run("wait", "--for=jsonpath={.status.readyReplicas}=1", "replicaset/witness")
    assert (await client.get("batch/v1/Job", "by-hand"))["status"] == ACTIVE["status"]
    assert list(await client.list("v1/Pod", label_selector="job-name=by-hand")) == []
'''


def test_built_in_controllers_are_chosen_by_ini_option_and_marker(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, kubeforge_controllers="*,-deployment")
    pytester.makepyfile(test_controllers=CONTROLLER_TESTS)
    pytester.runpytest().assert_outcomes(passed=2)


VIRTUAL_TIME_TESTS = f'''
from datetime import UTC, datetime, timedelta

import pytest

from kubeforge import clock
from kubeforge.testing import eventually
from widgets import WIDGET, seen

NEW_YEAR = datetime(2031, 1, 1, tzinfo=UTC)


@pytest.mark.kubeforge_virtual_time
async def test_the_marker(testenv, manager, kubectl) -> None:
    assert isinstance(testenv.clock, clock.VirtualClock) and clock.get() is testenv.clock
    await kubectl.apply(WIDGET)
    await eventually(lambda: seen(testenv.client))
    before = testenv.clock.now()
    await testenv.clock.advance(minutes=5)
    assert testenv.clock.now() - before == timedelta(minutes=5)
    widget = await testenv.client.get("{GROUP}/v1/Widget", "first")
    assert widget["metadata"]["creationTimestamp"] == before.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.kubeforge_virtual_time(start=NEW_YEAR)
async def test_a_start(testenv) -> None:
    assert testenv.clock.now() == NEW_YEAR
    made = await testenv.client.create(
        {{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "new-year"}}}}
    )
    assert made["metadata"]["creationTimestamp"] == "2031-01-01T00:00:00Z"


async def test_without_the_marker(testenv) -> None:
    assert isinstance(testenv.clock, clock.RealClock)
    assert isinstance(clock.get(), clock.RealClock)
    with pytest.raises(RuntimeError, match="cannot be advanced"):
        await testenv.clock.advance(seconds=1)


@pytest.mark.kubeforge_virtual_time(start="2031-01-01")
async def test_a_bad_start(testenv) -> None:
    pass
'''


def test_the_virtual_time_marker_runs_a_tests_cluster_and_manager_on_a_virtual_clock(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.makepyfile(test_virtual=VIRTUAL_TIME_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*start must be an aware datetime, not '2031-01-01'*"])


BARE_CONFTEST = """
import pytest

from kubeforge._cluster.options import ClusterOptions


@pytest.fixture
def kubeforge_cluster_options() -> ClusterOptions:
    return ClusterOptions.bare()
"""

BARE_TESTS = f"""
async def test_bare(testenv, kubectl) -> None:
    assert testenv.installed == ["widgets.{GROUP}"]
    assert testenv.cluster.controllers == frozenset() and testenv.cluster.nodes == []
    nodes = await kubectl.run("get", "nodes")
    assert "No resources found" in nodes.err
"""


def test_the_cluster_options_fixture_can_ask_for_a_bare_api_server(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.makeconftest(BARE_CONFTEST)
    pytester.makepyfile(test_bare=BARE_TESTS)
    pytester.runpytest().assert_outcomes(passed=1)


RBAC = f"""
apiVersion: v1
kind: ServiceAccount
metadata:
  name: controller-manager
  namespace: demo-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups: [{GROUP}]
  resources: [widgets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: manager-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: manager-role
subjects:
- kind: ServiceAccount
  name: controller-manager
  namespace: demo-system
"""

OWN_MANAGER_TESTS = """
import logging

from kubeforge.testing import eventually
from widgets import WIDGET

ACCOUNT = "system:serviceaccount:demo-system:controller-manager"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record)


async def test_own_manager(testenv, kubectl, kubeforge_setup, kubeforge_manager_config) -> None:
    assert kubeforge_manager_config is not None
    records = Records()
    logger = logging.getLogger("kubeforge.rbac")
    logger.addHandler(records)
    try:
        async with testenv.run_manager(kubeforge_setup, config=kubeforge_manager_config) as manager:
            review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            me = await manager.client.create(review)
            assert me["status"]["userInfo"]["username"] == ACCOUNT
            await kubectl.apply(WIDGET)
            await eventually(lambda: bool(records.seen), timeout=20)
    finally:
        logger.removeHandler(records)
"""


def test_managers_a_test_starts_run_as_the_account_and_report_refusals(
    pytester: pytest.Pytester,
) -> None:
    # With kubeforge_as_service_account, kubeforge_manager_config is the account's settings:
    # a manager a test starts with them is refused what config/rbac does not grant (here the
    # status subresource), and the test fails naming the rule, as with the manager fixture.
    project(pytester, kubeforge_as_service_account="true")
    rbac = pytester.path / "config" / "rbac"
    rbac.mkdir(parents=True)
    (rbac / "rbac.yaml").write_text(RBAC)
    pytester.makepyfile(test_own=OWN_MANAGER_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the manager's service account was refused*",
            f"*PATCH /apis/{GROUP}/v1/namespaces/test-own-manager-*/widgets/first/status*",
        ]
    )
    needs = f'needs @rbac(groups=["{GROUP}"], resources=["widgets/status"], verbs=["patch"])'
    assert needs in result.stdout.str()
