"""Testing operators: TestEnv (the envtest equivalent), kubectl and waiting helpers, round
trips between versions (with Hypothesis strategies for objects), faults for reconcilers,
`kubeforge dev` in a process of its own, and a manager run as the project's ServiceAccount
to catch RBAC mistakes (`install_rbac`, `as_service_account`). The pytest plugin's fixtures
(`testenv`, `kubeforge_client`, `manager`, `kubectl`) come with the package. docs/testing.md
is the guide.

Names are loaded on first use: a test module importing `eventually` does not pay for
TestEnv's cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeforge._lazyload import lazy_exports

__all__ = [
    "USE_EXISTING_CLUSTER",
    "DevProcess",
    "DevProcessError",
    "FlakyReconciler",
    "InjectedFailure",
    "Kubectl",
    "KubectlError",
    "KubectlResult",
    "ServiceAccountRef",
    "TestEnv",
    "as_service_account",
    "assert_round_trips",
    "eventually",
    "find_kubectl",
    "install_rbac",
    "metric_sum",
    "metric_value",
    "object_metas",
    "objects",
]

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "USE_EXISTING_CLUSTER": "kubeforge._testing.env",
    "TestEnv": "kubeforge._testing.env",
    "DevProcess": "kubeforge._testing.devprocess",
    "DevProcessError": "kubeforge._testing.devprocess",
    "Kubectl": "kubeforge._testing.kubectl",
    "KubectlError": "kubeforge._testing.kubectl",
    "KubectlResult": "kubeforge._testing.kubectl",
    "find_kubectl": "kubeforge._testing.kubectl",
    "eventually": "kubeforge._testing.waiting",
    "FlakyReconciler": "kubeforge._testing.faults",
    "InjectedFailure": "kubeforge._testing.faults",
    "metric_sum": "kubeforge._testing.metrics",
    "metric_value": "kubeforge._testing.metrics",
    "assert_round_trips": "kubeforge._testing.roundtrip",
    "objects": "kubeforge._testing.strategies",
    "object_metas": "kubeforge._testing.strategies",
    "ServiceAccountRef": "kubeforge._runtime.serviceaccount",
    "install_rbac": "kubeforge._runtime.serviceaccount",
    "as_service_account": "kubeforge._runtime.serviceaccount",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge._runtime.serviceaccount import (
        ServiceAccountRef as ServiceAccountRef,
        as_service_account as as_service_account,
        install_rbac as install_rbac,
    )
    from kubeforge._testing.devprocess import (
        DevProcess as DevProcess,
        DevProcessError as DevProcessError,
    )
    from kubeforge._testing.env import (
        USE_EXISTING_CLUSTER as USE_EXISTING_CLUSTER,
        TestEnv as TestEnv,
    )
    from kubeforge._testing.faults import (
        FlakyReconciler as FlakyReconciler,
        InjectedFailure as InjectedFailure,
    )
    from kubeforge._testing.kubectl import (
        Kubectl as Kubectl,
        KubectlError as KubectlError,
        KubectlResult as KubectlResult,
        find_kubectl as find_kubectl,
    )
    from kubeforge._testing.metrics import metric_sum as metric_sum, metric_value as metric_value
    from kubeforge._testing.roundtrip import assert_round_trips as assert_round_trips
    from kubeforge._testing.strategies import object_metas as object_metas, objects as objects
    from kubeforge._testing.waiting import eventually as eventually
