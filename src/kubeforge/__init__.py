"""kubeforge: Kubernetes operators in Python, the kubebuilder way.

    import kubeforge

    class MachineReconciler(kubeforge.Reconciler):
        async def reconcile(self, req: kubeforge.Request) -> kubeforge.Result:
            machine = await self.client.get(Machine, req.name, namespace=req.namespace)
            ...
            return kubeforge.Result(requeue_after=5)

The root holds what a project writes every day: the names of a types file and a controller,
and the manager that runs them. The rest is in concept modules, one per concept:
`kubeforge.markers` (schema markers), `kubeforge.meta`, `kubeforge.conversion`,
`kubeforge.webhook`, `kubeforge.client`, `kubeforge.cache`, `kubeforge.handler`,
`kubeforge.predicate`, `kubeforge.source`, `kubeforge.workqueue`, `kubeforge.controller`,
`kubeforge.leaderelection`, `kubeforge.sharding` (a controller sharded across replicas),
`kubeforge.multicluster` (controllers that span clusters), `kubeforge.metrics`,
`kubeforge.events`, `kubeforge.logs`, `kubeforge.testing`, `kubeforge.cluster`,
`kubeforge.apiserver`, `kubeforge.clock` (the process's one source of time) and
`kubeforge.models`. A module with an underscore anywhere in its path
(`kubeforge._runtime.workqueue`) is internal.

Names are loaded on first use, so `import kubeforge` stays cheap for tools that need little.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeforge._lazyload import lazy_exports
from kubeforge._version import __version__

# Public names, by the module that defines them; each loads on first use.
_BY_MODULE: dict[str, str] = {
    # a types file
    "kubeforge._api.model": "Model",
    "kubeforge._api.resource": "Resource resource",
    "kubeforge._api.meta": "ObjectMeta Condition PrinterColumn Scale",
    # a controller
    "kubeforge._api.rbac": "rbac",
    "kubeforge._runtime.reconcile": (
        "Reconciler SyncReconciler ObjectReconciler SyncObjectReconciler Request Result "
        "TerminalError"
    ),
    "kubeforge._client.protocols": "ObjectClient SyncObjectClient",
    "kubeforge._client.client": "Client",
    "kubeforge._client.errors": (
        "ApiError AlreadyExists Conflict Invalid NotFound ignore_already_exists ignore_not_found"
    ),
    "kubeforge._client.retry": "retry_on_conflict",
    # what a reconcile does to objects (controller-runtime's controllerutil)
    "kubeforge._runtime.ownership": (
        "set_controller_reference set_owner_reference remove_owner_reference "
        "has_controller_reference get_controller_of get_reference AlreadyOwnedError"
    ),
    "kubeforge._runtime.finalizers": (
        "add_finalizer remove_finalizer has_finalizer with_finalizer ensure_finalizer "
        "release_finalizer"
    ),
    "kubeforge._runtime.conditions": (
        "set_status_condition find_status_condition remove_status_condition "
        "is_status_condition_true"
    ),
    "kubeforge._runtime.upsert": "create_or_update create_or_patch OperationResult",
    # running it
    "kubeforge._runtime.manager": "Manager",
    "kubeforge._cli.run": "manager_main",
    "kubeforge._client.config": "ClusterConfig load_config",
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items() for name in names.split()}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


# The same names for type checkers; `name as name` marks each one re-exported.
# tests/test_exports.py checks that the two lists agree.
if TYPE_CHECKING:
    from kubeforge._api.meta import (
        Condition as Condition,
        ObjectMeta as ObjectMeta,
        PrinterColumn as PrinterColumn,
        Scale as Scale,
    )
    from kubeforge._api.model import Model as Model
    from kubeforge._api.rbac import rbac as rbac
    from kubeforge._api.resource import Resource as Resource, resource as resource
    from kubeforge._cli.run import manager_main as manager_main
    from kubeforge._client.client import Client as Client
    from kubeforge._client.config import ClusterConfig as ClusterConfig, load_config as load_config
    from kubeforge._client.errors import (
        AlreadyExists as AlreadyExists,
        ApiError as ApiError,
        Conflict as Conflict,
        Invalid as Invalid,
        NotFound as NotFound,
        ignore_already_exists as ignore_already_exists,
        ignore_not_found as ignore_not_found,
    )
    from kubeforge._client.protocols import (
        ObjectClient as ObjectClient,
        SyncObjectClient as SyncObjectClient,
    )
    from kubeforge._client.retry import retry_on_conflict as retry_on_conflict
    from kubeforge._runtime.conditions import (
        find_status_condition as find_status_condition,
        is_status_condition_true as is_status_condition_true,
        remove_status_condition as remove_status_condition,
        set_status_condition as set_status_condition,
    )
    from kubeforge._runtime.finalizers import (
        add_finalizer as add_finalizer,
        ensure_finalizer as ensure_finalizer,
        has_finalizer as has_finalizer,
        release_finalizer as release_finalizer,
        remove_finalizer as remove_finalizer,
        with_finalizer as with_finalizer,
    )
    from kubeforge._runtime.manager import Manager as Manager
    from kubeforge._runtime.ownership import (
        AlreadyOwnedError as AlreadyOwnedError,
        get_controller_of as get_controller_of,
        get_reference as get_reference,
        has_controller_reference as has_controller_reference,
        remove_owner_reference as remove_owner_reference,
        set_controller_reference as set_controller_reference,
        set_owner_reference as set_owner_reference,
    )
    from kubeforge._runtime.reconcile import (
        ObjectReconciler as ObjectReconciler,
        Reconciler as Reconciler,
        Request as Request,
        Result as Result,
        SyncObjectReconciler as SyncObjectReconciler,
        SyncReconciler as SyncReconciler,
        TerminalError as TerminalError,
    )
    from kubeforge._runtime.upsert import (
        OperationResult as OperationResult,
        create_or_patch as create_or_patch,
        create_or_update as create_or_update,
    )
