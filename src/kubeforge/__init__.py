"""kubeforge: Kubernetes operators in Python, the kubebuilder way.

    import kubeforge

    class MachineReconciler(kubeforge.Reconciler):
        async def reconcile(self, req: kubeforge.Request) -> kubeforge.Result:
            machine = await self.client.get(Machine, req.name, namespace=req.namespace)
            ...
            return kubeforge.Result(requeue_after=5)

Names are loaded on first use, so `import kubeforge` stays cheap for tools that need little.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    # typed objects
    "Model": "kubeforge.api.model",
    "Resource": "kubeforge.api.resource",
    "ObjectMeta": "kubeforge.api.meta",
    "OwnerReference": "kubeforge.api.meta",
    "Condition": "kubeforge.api.meta",
    "LabelSelector": "kubeforge.api.meta",
    "GroupVersionKind": "kubeforge.api.meta",
    "ResourceInfo": "kubeforge.api.meta",
    # client
    "Client": "kubeforge.client.client",
    "ObjectList": "kubeforge.client.client",
    "ClusterConfig": "kubeforge.client.config",
    "ConfigError": "kubeforge.client.config",
    "load_config": "kubeforge.client.config",
    "load_kubeconfig": "kubeforge.client.config",
    "WatchEvent": "kubeforge.client.watch",
    "NoKindMatch": "kubeforge.client.discovery",
    "ApiError": "kubeforge.client.errors",
    "AlreadyExists": "kubeforge.client.errors",
    "BadRequest": "kubeforge.client.errors",
    "Conflict": "kubeforge.client.errors",
    "Forbidden": "kubeforge.client.errors",
    "Gone": "kubeforge.client.errors",
    "Invalid": "kubeforge.client.errors",
    "NotFound": "kubeforge.client.errors",
    "TooManyRequests": "kubeforge.client.errors",
    "Unauthorized": "kubeforge.client.errors",
    "ignore_already_exists": "kubeforge.client.errors",
    "ignore_not_found": "kubeforge.client.errors",
    "Backoff": "kubeforge.client.retry",
    "retry_on_conflict": "kubeforge.client.retry",
    # reconcile contract
    "Reconciler": "kubeforge.runtime.reconcile",
    "SyncReconciler": "kubeforge.runtime.reconcile",
    "Request": "kubeforge.runtime.reconcile",
    "Result": "kubeforge.runtime.reconcile",
    "TerminalError": "kubeforge.runtime.reconcile",
    # runtime
    "Manager": "kubeforge.runtime.manager",
    "LeadershipLost": "kubeforge.runtime.leaderelection",
    "LeaderElector": "kubeforge.runtime.leaderelection",
    "Builder": "kubeforge.runtime.builder",
    "Controller": "kubeforge.runtime.controller",
    "ControllerOptions": "kubeforge.runtime.controller",
    "Cache": "kubeforge.runtime.cache",
    "CacheOptions": "kubeforge.runtime.cache",
    "NotCached": "kubeforge.runtime.cache",
    "CachedClient": "kubeforge.runtime.cached_client",
    "SyncClient": "kubeforge.runtime.cached_client",
    "Informer": "kubeforge.runtime.informer",
    "HandlerFuncs": "kubeforge.runtime.informer",
    "strip_managed_fields": "kubeforge.runtime.informer",
    "Store": "kubeforge.runtime.store",
    "WorkQueue": "kubeforge.runtime.workqueue",
    "ShutDown": "kubeforge.runtime.workqueue",
    "LOW_PRIORITY": "kubeforge.runtime.workqueue",
    "EnqueueRequestForObject": "kubeforge.runtime.handler",
    "EnqueueRequestForOwner": "kubeforge.runtime.handler",
    "EnqueueRequestsFromMapFunc": "kubeforge.runtime.handler",
    "Predicate": "kubeforge.runtime.predicate",
    "Funcs": "kubeforge.runtime.predicate",
    "GenerationChanged": "kubeforge.runtime.predicate",
    "LabelsChanged": "kubeforge.runtime.predicate",
    "AnnotationsChanged": "kubeforge.runtime.predicate",
    "ResourceVersionChanged": "kubeforge.runtime.predicate",
    "LabelSelectorPredicate": "kubeforge.runtime.predicate",
    "all_of": "kubeforge.runtime.predicate",
    "any_of": "kubeforge.runtime.predicate",
    "negate": "kubeforge.runtime.predicate",
    "Metrics": "kubeforge.runtime.metrics",
    "EventRecorder": "kubeforge.runtime.events",
    # helpers
    "set_controller_reference": "kubeforge.runtime.ownership",
    "set_owner_reference": "kubeforge.runtime.ownership",
    "remove_owner_reference": "kubeforge.runtime.ownership",
    "has_controller_reference": "kubeforge.runtime.ownership",
    "AlreadyOwnedError": "kubeforge.runtime.ownership",
    "add_finalizer": "kubeforge.runtime.finalizers",
    "remove_finalizer": "kubeforge.runtime.finalizers",
    "has_finalizer": "kubeforge.runtime.finalizers",
    "set_status_condition": "kubeforge.runtime.conditions",
    "find_status_condition": "kubeforge.runtime.conditions",
    "remove_status_condition": "kubeforge.runtime.conditions",
    "is_status_condition_true": "kubeforge.runtime.conditions",
    "create_or_update": "kubeforge.runtime.upsert",
    "create_or_patch": "kubeforge.runtime.upsert",
    "OperationResult": "kubeforge.runtime.upsert",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kubeforge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge.api.meta import (
        Condition,
        GroupVersionKind,
        LabelSelector,
        ObjectMeta,
        OwnerReference,
        ResourceInfo,
    )
    from kubeforge.api.model import Model
    from kubeforge.api.resource import Resource
    from kubeforge.client.client import Client, ObjectList
    from kubeforge.client.config import ClusterConfig, ConfigError, load_config, load_kubeconfig
    from kubeforge.client.discovery import NoKindMatch
    from kubeforge.client.errors import (
        AlreadyExists,
        ApiError,
        BadRequest,
        Conflict,
        Forbidden,
        Gone,
        Invalid,
        NotFound,
        TooManyRequests,
        Unauthorized,
        ignore_already_exists,
        ignore_not_found,
    )
    from kubeforge.client.retry import Backoff, retry_on_conflict
    from kubeforge.client.watch import WatchEvent
    from kubeforge.runtime.builder import Builder
    from kubeforge.runtime.cache import Cache, CacheOptions, NotCached
    from kubeforge.runtime.cached_client import CachedClient, SyncClient
    from kubeforge.runtime.conditions import (
        find_status_condition,
        is_status_condition_true,
        remove_status_condition,
        set_status_condition,
    )
    from kubeforge.runtime.controller import Controller, ControllerOptions
    from kubeforge.runtime.events import EventRecorder
    from kubeforge.runtime.finalizers import add_finalizer, has_finalizer, remove_finalizer
    from kubeforge.runtime.handler import (
        EnqueueRequestForObject,
        EnqueueRequestForOwner,
        EnqueueRequestsFromMapFunc,
    )
    from kubeforge.runtime.informer import HandlerFuncs, Informer, strip_managed_fields
    from kubeforge.runtime.leaderelection import LeaderElector, LeadershipLost
    from kubeforge.runtime.manager import Manager
    from kubeforge.runtime.metrics import Metrics
    from kubeforge.runtime.ownership import (
        AlreadyOwnedError,
        has_controller_reference,
        remove_owner_reference,
        set_controller_reference,
        set_owner_reference,
    )
    from kubeforge.runtime.predicate import (
        AnnotationsChanged,
        Funcs,
        GenerationChanged,
        LabelsChanged,
        LabelSelectorPredicate,
        Predicate,
        ResourceVersionChanged,
        all_of,
        any_of,
        negate,
    )
    from kubeforge.runtime.reconcile import (
        Reconciler,
        Request,
        Result,
        SyncReconciler,
        TerminalError,
    )
    from kubeforge.runtime.store import Store
    from kubeforge.runtime.upsert import OperationResult, create_or_patch, create_or_update
    from kubeforge.runtime.workqueue import LOW_PRIORITY, ShutDown, WorkQueue
