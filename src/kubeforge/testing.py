"""Testing operators: TestEnv (the envtest equivalent), kubectl and waiting helpers, round
trips between versions (with Hypothesis strategies for objects), faults for reconcilers,
`kubeforge dev` in a process of its own, and a manager run as the project's ServiceAccount
to catch RBAC mistakes (`install_rbac`, `as_service_account`). The pytest plugin's fixtures
(`testenv`, `kubeforge_client`, `manager`, `kubectl`) come with the package. docs/testing.md
is the guide.

Faults by hand: client interceptors (`intercept`, `Interceptors`, with the hooks `fail_with`,
`delay_by`, `observe` and the API errors `conflict`, `not_found`, `server_error`,
`too_many_requests`, `server_timeout`), the test cluster's `ServerFaults` (`testenv.faults`)
and its `WriteRecord`, and crash points (`run_manager(crash_after_writes=...)`, raising
`ManagerCrashed`).

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
    "Fault",
    "FlakyReconciler",
    "InjectedFailure",
    "InterceptedCall",
    "InterceptedClient",
    "Interceptors",
    "Kubectl",
    "KubectlError",
    "KubectlResult",
    "ManagerCrashed",
    "RecordedWrite",
    "ServerFaults",
    "ServiceAccountRef",
    "TestEnv",
    "WriteRecord",
    "as_service_account",
    "assert_round_trips",
    "conflict",
    "delay_by",
    "eventually",
    "fail_with",
    "find_kubectl",
    "install_rbac",
    "intercept",
    "metric_sum",
    "metric_value",
    "not_found",
    "object_metas",
    "objects",
    "observe",
    "server_error",
    "server_timeout",
    "too_many_requests",
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
    "InterceptedCall": "kubeforge._testing.interceptors",
    "InterceptedClient": "kubeforge._testing.interceptors",
    "Interceptors": "kubeforge._testing.interceptors",
    "intercept": "kubeforge._testing.interceptors",
    "fail_with": "kubeforge._testing.interceptors",
    "delay_by": "kubeforge._testing.interceptors",
    "observe": "kubeforge._testing.interceptors",
    "conflict": "kubeforge._testing.interceptors",
    "not_found": "kubeforge._testing.interceptors",
    "server_error": "kubeforge._testing.interceptors",
    "too_many_requests": "kubeforge._testing.interceptors",
    "server_timeout": "kubeforge._testing.interceptors",
    "ServerFaults": "kubeforge._testing.serverfaults",
    "Fault": "kubeforge._testing.serverfaults",
    "WriteRecord": "kubeforge._testing.serverfaults",
    "RecordedWrite": "kubeforge._testing.serverfaults",
    "ManagerCrashed": "kubeforge._testing.crashpoints",
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
    from kubeforge._testing.crashpoints import ManagerCrashed as ManagerCrashed
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
    from kubeforge._testing.interceptors import (
        InterceptedCall as InterceptedCall,
        InterceptedClient as InterceptedClient,
        Interceptors as Interceptors,
        conflict as conflict,
        delay_by as delay_by,
        fail_with as fail_with,
        intercept as intercept,
        not_found as not_found,
        observe as observe,
        server_error as server_error,
        server_timeout as server_timeout,
        too_many_requests as too_many_requests,
    )
    from kubeforge._testing.kubectl import (
        Kubectl as Kubectl,
        KubectlError as KubectlError,
        KubectlResult as KubectlResult,
        find_kubectl as find_kubectl,
    )
    from kubeforge._testing.metrics import metric_sum as metric_sum, metric_value as metric_value
    from kubeforge._testing.roundtrip import assert_round_trips as assert_round_trips
    from kubeforge._testing.serverfaults import (
        Fault as Fault,
        RecordedWrite as RecordedWrite,
        ServerFaults as ServerFaults,
        WriteRecord as WriteRecord,
    )
    from kubeforge._testing.strategies import object_metas as object_metas, objects as objects
    from kubeforge._testing.waiting import eventually as eventually
