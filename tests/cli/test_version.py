"""`kubeforge version`: the release from its one place (kubeforge/_version.py, which the
package metadata is built from too), the Kubernetes API version served, Python and the
platform, as `kubebuilder version` prints its build information."""

from __future__ import annotations

import platform
import sys
from importlib.metadata import version

from kubeforge import __version__
from kubeforge._apiserver.config import ServerConfig
from tests.cli.test_cli_scaffold import cli
from tests.support import ROOT


def test_version_prints_the_release_python_and_the_platform() -> None:
    done = cli("version", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"kubeforge: {__version__}",
        f"Kubernetes API: v{ServerConfig().kubernetes_version} "
        "(served by `kubeforge dev` and the test environment)",
        f"Python: {platform.python_version()} ({platform.python_implementation()}, "
        f"{sys.executable})",
        f"Platform: {sys.platform}/{platform.machine()}",
    ]


def test_the_installed_metadata_carries_the_same_release() -> None:
    assert version("kubeforge") == __version__
    assert f'__version__ = "{__version__}"' in (ROOT / "src/kubeforge/_version.py").read_text()
