"""The kubeforge pytest plugin: a test environment with the project's CRDs, its controllers
and webhooks running, and kubectl pointed at it.

pytest loads it by itself (the `pytest11` entry point `kubeforge`) wherever kubeforge is
installed. ini options (relative paths are from the rootdir):

- `kubeforge_crd_paths`: directories or files of CRDs to install (default `config/crd/bases`).
- `kubeforge_setup`: `module:function` registering the project's controllers (default
  `main:setup`), used by the `manager` fixture.
- `kubeforge_kubectl_version`: prefer `kubectl.<version>` when installed (e.g. `1.33`).
- `kubeforge_as_service_account`: run the `manager` fixture's controllers (and managers a
  test starts with `config=kubeforge_manager_config`) as the project's ServiceAccount, with
  `config/rbac` installed (default false). A request the project's `@rbac` rules do not
  allow is then refused, and the test fails naming the missing rule.
- `kubeforge_controllers`: the built-in controllers the test cluster runs, as
  kube-controller-manager's `--controllers` (default `*`; `*,-job` leaves Jobs alone). The
  marker `@pytest.mark.kubeforge_controllers("*", "-job")` sets it for one test.

The `manager` fixture's controllers get their client through the interceptors the
`kubeforge_interceptors` fixture returns (none by default; override it in a test module or
conftest.py to fail, delay or watch their calls).

The marker `@pytest.mark.kubeforge_virtual_time` runs a test's `testenv` (and so `manager`) on
a VirtualClock (`testenv.clock`), which stands still until the test advances it
(`await testenv.clock.advance(hours=1)`); `start=` (an aware datetime) sets where it starts.

Every test works in a namespace of its own (`testenv.namespace`, `test-<name>-<random>`), the
default of the client, kubectl and the managers. Set KUBEFORGE_USE_EXISTING_CLUSTER=1 to run
the same tests against the current kubeconfig's cluster instead of a development cluster
started per test; what a test made there is removed after it (docs/testing.md).

`--kubeforge-timeline[=DIR]` writes the timeline of each failing test that used `testenv` (its
reconciles and the writes that woke them) as one HTML file (testing/timelines.py).

`--kubeforge-explore` explores each test that uses the `manager` fixture: it is run again
under perturbations learned from a reference run, and fails with what the oracles find
(testing/explore/; docs/testing.md, "Exploration"). `--kubeforge-explore-jobs`,
`--kubeforge-explore-budget` and `--kubeforge-explore-actions` tune it;
`--kubeforge-perturb=SPEC` replays one perturbation (what a finding's command does). The
marker `@pytest.mark.kubeforge_explore(skip=["crash"], reason="...")` leaves perturbations
out for one test (`kubeforge_explore(False)`: the test is not explored).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import re
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import pytest

from kubeforge._testing.explore.keys import EXPLORATION, EXPLORE_RUN

# Only pytest is imported up front: the rest loads when a test asks for a fixture.
if TYPE_CHECKING:
    from kubeforge._client.client import Client
    from kubeforge._client.config import ClusterConfig
    from kubeforge._cluster.options import ClusterOptions
    from kubeforge._runtime.manager import Manager
    from kubeforge._testing.env import TestEnv
    from kubeforge._testing.interceptors import Interceptors
    from kubeforge._testing.kubectl import Kubectl
    from kubeforge.clock import VirtualClock

__all__ = [
    "kubectl",
    "kubeforge_client",
    "kubeforge_cluster_options",
    "kubeforge_interceptors",
    "kubeforge_manager_config",
    "kubeforge_setup",
    "manager",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_runtestloop",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "testenv",
]

F = TypeVar("F", bound=Callable[..., Any])


def _async_fixture(function: F) -> F:
    """Declare an async fixture as pytest-asyncio's own, so that it works in its strict
    mode as well as in auto mode."""
    try:
        import pytest_asyncio
    except ImportError:  # without pytest-asyncio no async test runs anyway
        return cast(F, pytest.fixture(function))
    return cast(F, pytest_asyncio.fixture(function))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kubeforge_crd_paths",
        "directories (or files) of CRDs to install in the kubeforge test environment",
        type="linelist",
        default=["config/crd/bases"],
    )
    parser.addini(
        "kubeforge_setup",
        "module:function that registers the project's controllers with a manager",
        default="main:setup",
    )
    parser.addini(
        "kubeforge_kubectl_version",
        "run kubectl.<version> when it is installed (otherwise kubectl)",
        default="",
    )
    parser.addini(
        "kubeforge_as_service_account",
        "run the manager fixture as the project's ServiceAccount (config/rbac installed)",
        type="bool",
        default=False,
    )
    parser.addini(
        "kubeforge_controllers",
        "built-in controllers of the test cluster, as kube-controller-manager's --controllers",
        default="*",
    )
    group = parser.getgroup("kubeforge", "kubeforge exploration")
    group.addoption(
        "--kubeforge-explore",
        action="store_true",
        help="explore each test that uses the manager fixture under perturbations",
    )
    group.addoption(
        "--kubeforge-explore-jobs",
        metavar="N",
        default=None,
        help="runs at once while exploring (default: the number of CPUs, at most 4)",
    )
    group.addoption(
        "--kubeforge-explore-budget",
        metavar="N",
        default="60",
        help="perturbed runs per test at most (default 60)",
    )
    group.addoption(
        "--kubeforge-explore-actions",
        metavar="LIST",
        default=None,
        help="the perturbations to try, comma-separated "
        "(default crash,error,stale,coalesce,delete,revert,advance)",
    )
    group.addoption(
        "--kubeforge-perturb",
        metavar="SPEC",
        default=None,
        help="run each selected test under this one perturbation (a finding's replay)",
    )
    group.addoption("--kubeforge-explore-worker", default=None, help=argparse.SUPPRESS)
    parser.getgroup("kubeforge-timeline", "kubeforge timelines").addoption(
        "--kubeforge-timeline",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="write the timeline of each failing test that used the test cluster as one "
        "HTML file in DIR (default: next to --junitxml's report, else kubeforge-timelines/)",
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hook that renders a timeline (the console's plugin implements it)."""
    from kubeforge._testing.timelines import TimelineHooks

    pluginmanager.add_hookspecs(TimelineHooks)


CONTROLLERS_MARKER = "kubeforge_controllers"
VIRTUAL_TIME_MARKER = "kubeforge_virtual_time"


def pytest_configure(config: pytest.Config) -> None:
    """Reject a malformed `kubeforge_setup` or `kubeforge_controllers` before any test
    runs; declare the markers."""
    _split_setup(str(config.getini("kubeforge_setup")))
    _controllers(str(config.getini("kubeforge_controllers")), where="kubeforge_controllers")
    config.addinivalue_line(
        "markers",
        f"{CONTROLLERS_MARKER}(*entries): the built-in controllers of this test's cluster, as "
        "kube-controller-manager's --controllers (e.g. '*', '-job')",
    )
    config.addinivalue_line(
        "markers",
        f"{VIRTUAL_TIME_MARKER}(start=None): run this test's cluster and manager on a virtual "
        "clock that only the test moves (testenv.clock.advance(...))",
    )
    config.addinivalue_line(
        "markers",
        "kubeforge_explore(explore=True, skip=(), reason=''): how --kubeforge-explore treats "
        "this test: False leaves it unexplored, skip= names perturbations not to try",
    )
    worker = config.getoption("kubeforge_explore_worker", None)
    exploring = config.getoption("kubeforge_explore", False) or config.getoption(
        "kubeforge_perturb", None
    )
    if exploring and worker is None:
        from kubeforge._testing.explore.session import Exploration

        config.stash[EXPLORATION] = Exploration(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the exploration's workers."""
    exploration = config.stash.get(EXPLORATION, None)
    if exploration is not None:
        exploration.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """In an exploration's worker: run the tests asked for, one run at a time."""
    pipes = session.config.getoption("kubeforge_explore_worker", None)
    if pipes is None or session.config.option.collectonly:
        return None
    from kubeforge._testing.explore.session import worker_loop

    config = session.config

    def load_setup() -> Callable[[Manager], Any]:
        return _load_setup(_root(config), str(config.getini("kubeforge_setup")))

    worker_loop(session, str(pipes), load_setup)
    return True


def pytest_collection_finish(session: pytest.Session) -> None:
    """While exploring, start the workers as soon as there is something to explore."""
    exploration = session.config.stash.get(EXPLORATION, None)
    if exploration is None:
        return
    from kubeforge._testing.explore.session import explorable

    explored = [item for item in session.items if explorable(item)]
    if not explored:
        return
    if session.config.pluginmanager.hasplugin("timeout"):
        # pytest-timeout's limit is for one run of a test (the workers keep it); exploring
        # one here runs it many times over.
        for item in explored:
            item.add_marker(pytest.mark.timeout(0))
    exploration.start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """While exploring: a test that runs the project's controllers is explored, and its
    report is the exploration's."""
    exploration = item.config.stash.get(EXPLORATION, None)
    if exploration is None:
        return None
    from kubeforge._testing.explore.session import explorable

    if not explorable(item):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    explored = exploration.explore(item)
    keywords = dict.fromkeys(item.keywords, 1)
    whens: tuple[Literal["setup", "call", "teardown"], ...] = ("setup", "call", "teardown")
    for when in whens:
        failed = when == "call" and not explored.passed
        report = pytest.TestReport(
            item.nodeid,
            item.location,
            keywords,  # type: ignore[arg-type]
            "failed" if failed else "passed",
            explored.text if failed else None,
            when,
            duration=explored.row.seconds if when == "call" else 0.0,
        )
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The exploration's summary table."""
    exploration = config.stash.get(EXPLORATION, None)
    if exploration is not None and exploration.rows:
        terminalreporter.write_sep("=", "kubeforge exploration")
        terminalreporter.write_line(exploration.summary())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """In an exploration's run, the test's body runs inside the run's harness."""
    run = item.stash.get(EXPLORE_RUN, None)
    function = getattr(item, "obj", None)
    if run is None or function is None or not inspect.iscoroutinefunction(function):
        return (yield)
    item.obj = run.wrap(function)  # type: ignore[attr-defined]
    try:
        return (yield)
    finally:
        item.obj = function  # type: ignore[attr-defined]


def _controllers(*entries: str, where: str) -> tuple[str, ...]:
    """Controllers list entries, checked (a usage error names where they come from)."""
    # Only the names module: loading the plugin must not import the cluster.
    from kubeforge._cluster.controllernames import enabled_controllers

    try:
        enabled_controllers(entries)
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    return entries


def _root(config: pytest.Config) -> Path:
    return Path(str(config.rootpath))


def _split_setup(target: str) -> tuple[str, list[str]]:
    module, sep, attribute = target.strip().partition(":")
    names = attribute.split(".")
    if not (
        sep
        and all(part.isidentifier() for part in module.split("."))
        and all(name.isidentifier() for name in names)
    ):
        raise pytest.UsageError(
            f"kubeforge_setup must name a function as module:function (like main:setup), "
            f"not {target!r}"
        )
    return module, names


def _load_setup(root: Path, target: str) -> Callable[[Manager], Any]:
    """The function `kubeforge_setup` names, imported with the rootdir on sys.path."""
    __tracebackhide__ = True  # a usage error is about the ini file, not this code
    module_name, names = _split_setup(target)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        found: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise pytest.UsageError(
                f"kubeforge_setup = {target}: no module named {module_name!r} "
                f"(looked in {root} and on sys.path)"
            ) from None
        raise  # the module exists but one of its own imports failed
    for name in names:
        found = getattr(found, name, None)
    if not callable(found):
        raise pytest.UsageError(
            f"kubeforge_setup = {target}: {module_name} has no function {'.'.join(names)!r}"
        )
    return cast("Callable[[Manager], Any]", found)


@pytest.fixture
def kubeforge_cluster_options(request: pytest.FixtureRequest) -> ClusterOptions:
    """The ClusterOptions of the test's development cluster: the built-in controllers of
    the `kubeforge_controllers` marker, else of the ini option. Override the fixture for
    anything else (`ClusterOptions.bare()` for an API server alone)."""
    from kubeforge._cluster.options import ClusterOptions

    marker = request.node.get_closest_marker(CONTROLLERS_MARKER)
    if marker is not None:
        entries = _controllers(*marker.args, where=f"@pytest.mark.{CONTROLLERS_MARKER}")
    else:
        ini = str(request.config.getini("kubeforge_controllers"))
        entries = _controllers(ini, where="kubeforge_controllers")
    return ClusterOptions(controllers=entries)


def _namespace_for(test: str) -> str:
    """A namespace of the test's own: its name as a DNS label, and a random part, since a
    cluster may still be deleting the namespace of an earlier run."""
    slug = re.sub(r"[^a-z0-9]+", "-", test.lower().removeprefix("test_")).strip("-")
    parts = ["test", slug[:40].rstrip("-"), secrets.token_hex(3)]
    return "-".join(part for part in parts if part)


def _virtual_time(request: pytest.FixtureRequest) -> bool | VirtualClock:
    """The clock the test's marker asks for: False without the marker."""
    marker = request.node.get_closest_marker(VIRTUAL_TIME_MARKER)
    if marker is None:
        return False
    from kubeforge.clock import VirtualClock

    where = f"@pytest.mark.{VIRTUAL_TIME_MARKER}"
    if marker.args or set(marker.kwargs) - {"start"}:
        raise pytest.UsageError(f"{where} takes only start= (an aware datetime)")
    start = marker.kwargs.get("start")
    if start is None:
        return True
    if not isinstance(start, datetime) or start.tzinfo is None:
        raise pytest.UsageError(f"{where}: start must be an aware datetime, not {start!r}")
    return VirtualClock(start)


@_async_fixture
async def testenv(
    request: pytest.FixtureRequest, kubeforge_cluster_options: ClusterOptions
) -> AsyncIterator[TestEnv]:
    """A started test environment (a fresh development cluster per test), whose client,
    kubectl and managers work in a namespace of the test's own; on a virtual clock with the
    `kubeforge_virtual_time` marker."""
    from kubeforge._testing.env import TestEnv

    root = _root(request.config)
    paths = [root / p for p in request.config.getini("kubeforge_crd_paths")]
    settings: dict[str, Any] = {
        "crd_paths": paths,
        "options": kubeforge_cluster_options,
        "namespace": _namespace_for(request.node.name),
        "virtual_time": _virtual_time(request),
    }
    run = request.node.stash.get(EXPLORE_RUN, None)
    if run is None:
        env = TestEnv(**settings)
    else:
        from kubeforge._testing.explore.supervisor import ExploringEnv

        env = ExploringEnv(run, **settings)
        run.begin(env)
    async with env:
        if run is None and request.config.getoption("kubeforge_timeline", None) is not None:
            from kubeforge._testing.timelines import TIMELINE, record_timeline

            request.node.stash[TIMELINE] = record_timeline(env)
        yield env


@pytest.fixture
def kubeforge_client(testenv: TestEnv) -> Client:
    """The test environment's client."""
    return testenv.client


@pytest.fixture
def kubeforge_setup(request: pytest.FixtureRequest) -> Callable[[Manager], Any]:
    """The function `kubeforge_setup` names (a usage error when there is none)."""
    __tracebackhide__ = True
    return _load_setup(_root(request.config), str(request.config.getini("kubeforge_setup")))


class _Refusals(logging.Handler):
    """Collects what the `kubeforge.rbac` logger reports: requests RBAC refused."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.found: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        rule = getattr(record, "rbac_rule", None)
        if rule is not None:
            entry = (str(getattr(record, "rbac_request", "")), str(rule))
            if entry not in self.found:
                self.found.append(entry)

    def summary(self) -> str:
        lines = [f"  {request}\n    needs {rule}" for request, rule in self.found]
        return (
            "the manager's service account was refused (add the rule to the reconciler and "
            "run `kubeforge manifests`):\n" + "\n".join(lines)
        )


_REFUSALS = pytest.StashKey[_Refusals]()


@_async_fixture
async def kubeforge_manager_config(
    testenv: TestEnv, request: pytest.FixtureRequest
) -> AsyncIterator[ClusterConfig | None]:
    """The connection settings `manager` runs with, for a test's own
    `testenv.run_manager(setup, config=kubeforge_manager_config)`: with
    `kubeforge_as_service_account`, the project's ServiceAccount's (config/rbac installed),
    and any request RBAC refuses fails the test, naming the missing rule; otherwise None
    (the environment's admin settings)."""
    if not request.config.getini("kubeforge_as_service_account"):
        yield None
        return
    config = await testenv.service_account_config(_root(request.config) / "config" / "rbac")
    refusals = _Refusals()
    request.node.stash[_REFUSALS] = refusals
    logger = logging.getLogger("kubeforge.rbac")
    logger.addHandler(refusals)
    try:
        yield config
    finally:
        logger.removeHandler(refusals)
    if refusals.found:
        pytest.fail(refusals.summary(), pytrace=False)


@pytest.fixture
def kubeforge_interceptors() -> Interceptors | Sequence[Interceptors]:
    """The interceptors the `manager` fixture's controllers get their client through: none.
    Override it to inject client-side faults into the project's controllers:

        @pytest.fixture
        def kubeforge_interceptors():
            return Interceptors(update_status=fail_with(conflict(), times=1))
    """
    return ()


@_async_fixture
async def manager(
    kubeforge_setup: Callable[[Manager], Any],
    testenv: TestEnv,
    kubeforge_manager_config: ClusterConfig | None,
    kubeforge_interceptors: Interceptors | Sequence[Interceptors],
) -> AsyncIterator[Manager]:
    """The project's controllers (kubeforge_setup), running against `testenv` (as the
    project's ServiceAccount when `kubeforge_as_service_account` is set, their client
    through `kubeforge_interceptors`), and its webhooks, served on this machine and
    registered with the cluster."""
    async with testenv.run_manager(
        kubeforge_setup, config=kubeforge_manager_config, interceptors=kubeforge_interceptors
    ) as running:
        try:
            yield running
        finally:
            # On an existing cluster: while the controllers still run, so that they take
            # their finalizers off what the test made.
            await testenv.clean_up()


_TIMELINE_WRITTEN = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing test whose manager was refused says which RBAC rules were missing; with
    --kubeforge-timeline, a failing test's timeline is written and its report names it."""
    outcome = yield
    report = outcome.get_result()
    refusals = item.stash.get(_REFUSALS, None)
    if report.failed and refusals is not None and refusals.found:
        report.sections.append(("kubeforge RBAC refusals", refusals.summary()))
    if report.failed and not item.stash.get(_TIMELINE_WRITTEN, False):
        from kubeforge._testing.timelines import TIMELINE, timeline_dir, write_timeline

        timeline = item.stash.get(TIMELINE, None)
        directory = timeline_dir(item.config)
        if timeline is None or directory is None:
            return
        item.stash[_TIMELINE_WRITTEN] = True
        about = f"failed in {report.when}; {len(timeline)} entries"
        path = write_timeline(
            item.config, directory, item.nodeid, timeline.document(), item.nodeid, about
        )
        if path is not None:
            report.sections.append(("kubeforge timeline", f"file://{path.resolve()}"))


@pytest.fixture
def kubectl(testenv: TestEnv, tmp_path: Path, request: pytest.FixtureRequest) -> Kubectl:
    """kubectl pointed at `testenv`, in its namespace (for an existing cluster: through the
    kubeconfig files the environment connected with)."""
    from kubeforge._testing.kubectl import Kubectl

    version = str(request.config.getini("kubeforge_kubectl_version")).strip() or None
    kubeconfig = testenv.kubeconfig_variable(tmp_path / "kubeconfig")
    cache = tmp_path / "kubectl-cache"
    cache.mkdir(exist_ok=True)
    found = Kubectl(kubeconfig, version=version, cache_dir=cache)
    run = request.node.stash.get(EXPLORE_RUN, None)
    return found if run is None else run.gate(found)
