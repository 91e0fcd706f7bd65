"""Testing operators: TestEnv (the envtest equivalent), kubectl and waiting helpers, round
trips between versions (with Hypothesis strategies for objects), `kubeforge dev` in a process
of its own, and the pytest plugin (fixtures `testenv`, `kubeforge_client`, `manager`,
`kubectl`).

Names are loaded on first use: pytest loads the plugin in every run of any project where
kubeforge is installed, and that must not cost the import of the client and runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeforge.lazyload import lazy_exports

__all__ = [
    "USE_EXISTING_CLUSTER",
    "DevProcess",
    "DevProcessError",
    "FlakyReconciler",
    "InjectedFailure",
    "Kubectl",
    "KubectlError",
    "KubectlResult",
    "TestEnv",
    "assert_round_trips",
    "eventually",
    "find_kubectl",
    "metric_sum",
    "metric_value",
    "object_metas",
    "objects",
]

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "USE_EXISTING_CLUSTER": "kubeforge.testing.env",
    "TestEnv": "kubeforge.testing.env",
    "DevProcess": "kubeforge.testing.devprocess",
    "DevProcessError": "kubeforge.testing.devprocess",
    "Kubectl": "kubeforge.testing.kubectl",
    "KubectlError": "kubeforge.testing.kubectl",
    "KubectlResult": "kubeforge.testing.kubectl",
    "find_kubectl": "kubeforge.testing.kubectl",
    "eventually": "kubeforge.testing.waiting",
    "FlakyReconciler": "kubeforge.testing.faults",
    "InjectedFailure": "kubeforge.testing.faults",
    "metric_sum": "kubeforge.testing.metrics",
    "metric_value": "kubeforge.testing.metrics",
    "assert_round_trips": "kubeforge.testing.roundtrip",
    "objects": "kubeforge.testing.strategies",
    "object_metas": "kubeforge.testing.strategies",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge.testing.devprocess import (
        DevProcess as DevProcess,
        DevProcessError as DevProcessError,
    )
    from kubeforge.testing.env import (
        USE_EXISTING_CLUSTER as USE_EXISTING_CLUSTER,
        TestEnv as TestEnv,
    )
    from kubeforge.testing.faults import (
        FlakyReconciler as FlakyReconciler,
        InjectedFailure as InjectedFailure,
    )
    from kubeforge.testing.kubectl import (
        Kubectl as Kubectl,
        KubectlError as KubectlError,
        KubectlResult as KubectlResult,
        find_kubectl as find_kubectl,
    )
    from kubeforge.testing.metrics import metric_sum as metric_sum, metric_value as metric_value
    from kubeforge.testing.roundtrip import assert_round_trips as assert_round_trips
    from kubeforge.testing.strategies import object_metas as object_metas, objects as objects
    from kubeforge.testing.waiting import eventually as eventually
