"""`make test-e2e` in projects as `kubeforge init`, `create api` and `create webhook` leave them:
their end-to-end suite (test/e2e) starts a development cluster of its own, deploys the manager
(the pod of its Deployment runs the project's code as a local process), checks the pod, its
RBAC, its metrics and its webhooks from outside, undeploys it and stops the cluster; when a
test fails, it shows the manager's log and still leaves nothing behind."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeforge.testing import USE_EXISTING_CLUSTER
from tests.cli.test_cli_scaffold import FERRYMAN_API, cli, run, scaffold

# What the suite of a project with the Frigate's webhooks (defaulting, validating, conversion
# to v2) and the cluster-scoped Ferryman runs: kubebuilder's checks of the manager, then of
# its webhooks.
WEBHOOK_PROJECT_TESTS = [
    "test_manager.py::test_the_controller_manager_pod_runs",
    "test_manager.py::test_the_manager_has_the_rights_config_rbac_grants_and_no_more",
    "test_manager.py::test_the_metrics_are_served_to_authorized_clients_only",
    "test_manager.py::test_every_controller_reconciles_the_samples",
    "test_webhooks.py::test_cert_manager_issued_the_webhook_serving_certificate",
    "test_webhooks.py::test_the_webhook_service_leads_to_the_manager",
    "test_webhooks.py::test_the_ca_is_injected_into_the_mutating_webhooks",
    "test_webhooks.py::test_the_frigate_v1_defaulter_admits_the_sample",
    "test_webhooks.py::test_the_frigate_v1_defaulter_refuses_an_unreadable_object",
    "test_webhooks.py::test_the_ca_is_injected_into_the_validating_webhooks",
    "test_webhooks.py::test_the_frigate_v1_validator_admits_the_sample",
    "test_webhooks.py::test_the_frigate_converts_between_its_versions_through_the_webhook",
]

FAILING_TEST = """
async def test_zz_a_check_that_fails(cluster: object) -> None:
    raise AssertionError("failed on purpose")
"""


async def make_test_e2e(project: Path, tmp: Path) -> tuple[int, str]:
    """`make test-e2e` in `project`, with this environment's Python and kubeforge, and `tmp` as
    its temporary directory: its exit status and output."""
    env = {k: v for k, v in os.environ.items() if k not in (USE_EXISTING_CLUSTER, "KUBECONFIG")}
    tools = (f"PYTHON={sys.executable}", f"KUBEFORGE={Path(sys.executable).parent / 'kubeforge'}")
    make = ("make", "--no-print-directory", "test-e2e", *tools)
    return await run(*make, cwd=project, timeout=240, env={**env, "TMPDIR": str(tmp)})


@pytest.fixture
def tmp() -> Iterator[Path]:
    """The temporary directory of a run: short, for the development cluster's Unix socket
    (its path has room for about a hundred bytes)."""
    with tempfile.TemporaryDirectory(prefix="e2e-") as path:
        yield Path(path)


def left_behind(tmp: Path) -> list[str]:
    """What the run left: files in its temporary directory, and processes (the development
    cluster, the manager, port-forwards) that still have it as theirs."""
    marker = f"TMPDIR={tmp}".encode()
    processes = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "environ").read_bytes().split(b"\0"):
                processes.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone meanwhile, or another user's
            continue
    return [str(p.relative_to(tmp)) for p in tmp.iterdir()] + processes


@pytest.mark.timeout(300)
async def test_the_e2e_suite_of_a_project_with_webhooks_passes(tmp_path: Path, tmp: Path) -> None:
    project = tmp_path / "fleet"
    scaffold(project)
    done = cli(*FERRYMAN_API, "--cluster", "--plural", "ferrymen", cwd=project)
    assert done.returncode == 0, (done.stdout, done.stderr)

    code, out = await make_test_e2e(project, tmp)

    assert code == 0, out
    for test in WEBHOOK_PROJECT_TESTS:
        assert f"test/e2e/{test} PASSED" in out, out
    assert f"{len(WEBHOOK_PROJECT_TESTS)} passed" in out, out
    assert left_behind(tmp) == []


@pytest.mark.timeout(300)
async def test_a_failing_e2e_test_shows_the_manager_log_and_leaves_nothing_behind(
    tmp_path: Path, tmp: Path
) -> None:
    project = tmp_path / "fleet"
    scaffold(project, webhook=False)
    # Without webhooks, `create webhook` has written no test_webhooks.py.
    assert sorted(p.name for p in (project / "test" / "e2e").glob("test_*.py")) == [
        "test_manager.py"
    ]
    (project / "test" / "e2e" / "test_zz_fails.py").write_text(FAILING_TEST)

    code, out = await make_test_e2e(project, tmp)

    assert code != 0, out
    assert "4 passed" in out and "1 failed" in out, out
    assert "test/e2e/test_zz_fails.py::test_zz_a_check_that_fails FAILED" in out, out
    # The failure shows what the manager logged: it reconciled the Frigate sample.
    assert "- manager log -" in out, out
    assert "reconciling Frigate" in out, out
    assert left_behind(tmp) == []
