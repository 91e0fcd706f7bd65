"""The project as a whole: its CRDs install and setup(manager) starts the manager."""

from __future__ import annotations

from pathlib import Path

import kubeforge
from kubeforge.testing import TestEnv

BASES = Path(__file__).resolve().parents[1] / "config" / "crd" / "bases"


async def test_the_manager_starts_with_the_project_crds(
    testenv: TestEnv, manager: kubeforge.Manager
) -> None:
    # The plugin installed every CRD of config/crd/bases (and waited until each was
    # established), then ran setup(manager) and started the manager with its caches synced.
    assert len(testenv.installed) == len(list(BASES.glob("*.yaml")))
    assert manager.synced
