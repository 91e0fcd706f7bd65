"""DevProcess: `kubeforge dev` in a process of its own, ready before the test goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeforge.testing import DevProcess, DevProcessError


async def test_a_dev_process_that_exits_first_fails_at_once_with_its_output(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    dev = DevProcess("--controllers", "*,-cronjobs", kubeconfig=kubeconfig, timeout=60)
    with pytest.raises(DevProcessError) as failed:
        await dev.start()
    assert str(failed.value) == "kubeforge dev did not become ready: it exited with status 1"
    assert 'error: --controllers: "cronjobs" is not in the list of known' in failed.value.output
    assert dev.returncode == 1 and not kubeconfig.exists()


async def test_a_dev_process_answers_once_started_and_stops_in_order(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("left by an earlier run\n")
    async with DevProcess(kubeconfig=kubeconfig) as dev:
        assert dev.returncode is None
        assert "current-context: kubeforge" in kubeconfig.read_text()
    assert dev.returncode == 0
    assert "kubeforge development cluster running at https://127.0.0.1:" in dev.output
    assert dev.output.endswith("stopping the cluster\n")
