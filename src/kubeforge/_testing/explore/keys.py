"""Where the plugin and the exploration meet, kept light: the plugin imports it whatever
the run, and the exploration's modules only when exploring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kubeforge._testing.explore.harness import Run

__all__ = ["EXPLORATION", "EXPLORE_RUN"]

EXPLORE_RUN: pytest.StashKey[Run] = pytest.StashKey()
"""The harness of the run a worker is doing, in the test item's stash."""

# Typed loosely: the exploration's module imports this one.
EXPLORATION: pytest.StashKey[Any] = pytest.StashKey()
"""The exploration (session.py) of an exploring pytest run, in its config's stash."""
