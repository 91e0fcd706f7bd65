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

from typing import TYPE_CHECKING

from kubeforge._version import __version__
from kubeforge._lazyload import lazy_exports

# Public names, by the module that defines them; each loads on first use.
_BY_MODULE: dict[str, str] = {
    # typed objects
    "kubeforge._api.model": "Model",
    "kubeforge._api.resource": "Resource resource registered_resources",
    "kubeforge._api.meta": (
        "ObjectMeta OwnerReference Condition LabelSelector GroupVersionKind ResourceInfo "
        "PrinterColumn Scale WebhookConversion PartialObjectMetadata ConditionStatus KubeObject "
        "HasMetadata"
    ),
    "kubeforge._api.rbac": "rbac",
    "kubeforge._api.machinery.fielderror": "FieldError",
    # versions and conversion
    "kubeforge._api.conversion": (
        "Hub Convertible ConversionError KindVersions convert kind_versions stash unstash"
    ),
    # webhook declarations and manifests
    "kubeforge._api.webhooks": (
        "admission_webhook MatchCondition WebhookRule WebhookSpec webhook_configurations"
    ),
    # schema markers
    "kubeforge._api.markers": (
        "AtLeastOneOf AtMostOneOf Default Description EmbeddedResource Enum Example ExactlyOneOf "
        "ExternalDocs Format Immutable IntOrString Items ListMapKeys ListType MapType Marker "
        "MaxItems MaxLength MaxProperties Maximum MinItems MinLength MinProperties Minimum "
        "MultipleOf Nullable Optional Pattern PreserveUnknownFields Required Rule Schemaless "
        "StructType Title Type UniqueItems markers"
    ),
    # client
    "kubeforge._client.client": "Client ObjectList",
    "kubeforge._client.protocols": (
        "Reader Writer StatusWriter ObjectClient SyncReader SyncWriter SyncStatusWriter "
        "SyncObjectClient"
    ),
    "kubeforge._client.config": "ClusterConfig ConfigError load_config load_kubeconfig",
    "kubeforge._client.auth": "ServiceAccountToken",
    "kubeforge._client.watch": "WatchEvent",
    "kubeforge._client.discovery": "NoKindMatch",
    "kubeforge._client.errors": (
        "ApiError AlreadyExists BadRequest Conflict Forbidden Gone Invalid NotFound "
        "TooManyRequests Unauthorized ignore_already_exists ignore_not_found"
    ),
    "kubeforge._client.retry": "Backoff retry_on_conflict",
    "kubeforge._client.storagemigration": "migrate_storage MigrationProgress MigrationError",
    # reconcile contract
    "kubeforge._runtime.reconcile": (
        "Reconciler SyncReconciler Request Result TerminalError ObjectReconciler "
        "SyncObjectReconciler"
    ),
    # runtime
    "kubeforge._runtime.manager": "Manager",
    "kubeforge._runtime.leaderelection": "LeadershipLost LeaderElector",
    "kubeforge._runtime.builder": "Builder",
    "kubeforge._runtime.controller": "Controller ControllerOptions PANICS",
    "kubeforge._runtime.cache": (
        "Cache CacheOptions NotCached ALL_NAMESPACES FieldSelectorUnverified"
    ),
    "kubeforge._runtime.cached_client": "CachedClient SyncClient",
    "kubeforge._runtime.informer": "Informer HandlerFuncs strip_managed_fields",
    "kubeforge._runtime.store": "Store",
    "kubeforge._runtime.workqueue": "WorkQueue ShutDown LOW_PRIORITY",
    "kubeforge._runtime.ratelimiter": "RateLimiter ItemExponentialBackoff BucketRateLimiter MaxOf",
    "kubeforge._runtime.source": "Channel",
    "kubeforge._runtime.handler": (
        "EnqueueRequestForObject EnqueueRequestForOwner EnqueueRequestsFromMapFunc"
    ),
    "kubeforge._runtime.predicate": (
        "Predicate Funcs GenerationChanged LabelsChanged AnnotationsChanged ResourceVersionChanged "
        "LabelSelectorPredicate all_of any_of negate"
    ),
    "kubeforge._runtime.metrics": "Metrics",
    "kubeforge._runtime.events": "EventRecorder",
    "kubeforge._runtime.logs": (
        "reconcile_logger ReconcileLogger ReconcileContext current_reconcile configure_logging"
    ),
    # admission and conversion webhooks
    "kubeforge._webhook.review": "AdmissionRequest AdmissionResponse AdmissionReview UserInfo",
    "kubeforge._webhook.admission": "AdmissionHandler Denied InvalidObject admission_request",
    "kubeforge._webhook.typed": "Defaulter Validator Warnings",
    "kubeforge._webhook.builder": "WebhookBuilder",
    "kubeforge._webhook.server": "WebhookServer RegisteredWebhook",
    "kubeforge._webhook.certwatcher": "CertificateError",
    "kubeforge._webhook.conversion": "ConversionWebhook",
    "kubeforge._runtime.localwebhooks": (
        "LocalServing WebhookRegistration register_webhook_server registered_while_serving "
        "serve_locally"
    ),
    "kubeforge._runtime.serviceaccount": "ServiceAccountRef install_rbac as_service_account",
    # object helpers
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
    # a project's manager command (its container's entrypoint)
    "kubeforge._cli.run": "manager_main",
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items() for name in names.split()}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


# The same names for type checkers; `name as name` marks each one re-exported.
# tests/unit/test_exports.py checks that the two lists agree.
if TYPE_CHECKING:
    from kubeforge._api.conversion import (
        ConversionError as ConversionError,
        Convertible as Convertible,
        Hub as Hub,
        KindVersions as KindVersions,
        convert as convert,
        kind_versions as kind_versions,
        stash as stash,
        unstash as unstash,
    )
    from kubeforge._api.machinery.fielderror import FieldError as FieldError
    from kubeforge._api.markers import (
        AtLeastOneOf as AtLeastOneOf,
        AtMostOneOf as AtMostOneOf,
        Default as Default,
        Description as Description,
        EmbeddedResource as EmbeddedResource,
        Enum as Enum,
        ExactlyOneOf as ExactlyOneOf,
        Example as Example,
        ExternalDocs as ExternalDocs,
        Format as Format,
        Immutable as Immutable,
        IntOrString as IntOrString,
        Items as Items,
        ListMapKeys as ListMapKeys,
        ListType as ListType,
        MapType as MapType,
        Marker as Marker,
        Maximum as Maximum,
        MaxItems as MaxItems,
        MaxLength as MaxLength,
        MaxProperties as MaxProperties,
        Minimum as Minimum,
        MinItems as MinItems,
        MinLength as MinLength,
        MinProperties as MinProperties,
        MultipleOf as MultipleOf,
        Nullable as Nullable,
        Optional as Optional,
        Pattern as Pattern,
        PreserveUnknownFields as PreserveUnknownFields,
        Required as Required,
        Rule as Rule,
        Schemaless as Schemaless,
        StructType as StructType,
        Title as Title,
        Type as Type,
        UniqueItems as UniqueItems,
        markers as markers,
    )
    from kubeforge._api.meta import (
        Condition as Condition,
        ConditionStatus as ConditionStatus,
        GroupVersionKind as GroupVersionKind,
        HasMetadata as HasMetadata,
        KubeObject as KubeObject,
        LabelSelector as LabelSelector,
        ObjectMeta as ObjectMeta,
        OwnerReference as OwnerReference,
        PartialObjectMetadata as PartialObjectMetadata,
        PrinterColumn as PrinterColumn,
        ResourceInfo as ResourceInfo,
        Scale as Scale,
        WebhookConversion as WebhookConversion,
    )
    from kubeforge._api.model import Model as Model
    from kubeforge._api.rbac import rbac as rbac
    from kubeforge._api.resource import (
        Resource as Resource,
        registered_resources as registered_resources,
        resource as resource,
    )
    from kubeforge._api.webhooks import (
        MatchCondition as MatchCondition,
        WebhookRule as WebhookRule,
        WebhookSpec as WebhookSpec,
        admission_webhook as admission_webhook,
        webhook_configurations as webhook_configurations,
    )
    from kubeforge._cli.run import manager_main as manager_main
    from kubeforge._client.auth import ServiceAccountToken as ServiceAccountToken
    from kubeforge._client.client import Client as Client, ObjectList as ObjectList
    from kubeforge._client.config import (
        ClusterConfig as ClusterConfig,
        ConfigError as ConfigError,
        load_config as load_config,
        load_kubeconfig as load_kubeconfig,
    )
    from kubeforge._client.discovery import NoKindMatch as NoKindMatch
    from kubeforge._client.errors import (
        AlreadyExists as AlreadyExists,
        ApiError as ApiError,
        BadRequest as BadRequest,
        Conflict as Conflict,
        Forbidden as Forbidden,
        Gone as Gone,
        Invalid as Invalid,
        NotFound as NotFound,
        TooManyRequests as TooManyRequests,
        Unauthorized as Unauthorized,
        ignore_already_exists as ignore_already_exists,
        ignore_not_found as ignore_not_found,
    )
    from kubeforge._client.protocols import (
        ObjectClient as ObjectClient,
        Reader as Reader,
        StatusWriter as StatusWriter,
        SyncObjectClient as SyncObjectClient,
        SyncReader as SyncReader,
        SyncStatusWriter as SyncStatusWriter,
        SyncWriter as SyncWriter,
        Writer as Writer,
    )
    from kubeforge._client.retry import Backoff as Backoff, retry_on_conflict as retry_on_conflict
    from kubeforge._client.storagemigration import (
        MigrationError as MigrationError,
        MigrationProgress as MigrationProgress,
        migrate_storage as migrate_storage,
    )
    from kubeforge._client.watch import WatchEvent as WatchEvent
    from kubeforge._runtime.builder import Builder as Builder
    from kubeforge._runtime.cache import (
        ALL_NAMESPACES as ALL_NAMESPACES,
        Cache as Cache,
        CacheOptions as CacheOptions,
        FieldSelectorUnverified as FieldSelectorUnverified,
        NotCached as NotCached,
    )
    from kubeforge._runtime.cached_client import (
        CachedClient as CachedClient,
        SyncClient as SyncClient,
    )
    from kubeforge._runtime.conditions import (
        find_status_condition as find_status_condition,
        is_status_condition_true as is_status_condition_true,
        remove_status_condition as remove_status_condition,
        set_status_condition as set_status_condition,
    )
    from kubeforge._runtime.controller import (
        PANICS as PANICS,
        Controller as Controller,
        ControllerOptions as ControllerOptions,
    )
    from kubeforge._runtime.events import EventRecorder as EventRecorder
    from kubeforge._runtime.finalizers import (
        add_finalizer as add_finalizer,
        ensure_finalizer as ensure_finalizer,
        has_finalizer as has_finalizer,
        release_finalizer as release_finalizer,
        remove_finalizer as remove_finalizer,
        with_finalizer as with_finalizer,
    )
    from kubeforge._runtime.handler import (
        EnqueueRequestForObject as EnqueueRequestForObject,
        EnqueueRequestForOwner as EnqueueRequestForOwner,
        EnqueueRequestsFromMapFunc as EnqueueRequestsFromMapFunc,
    )
    from kubeforge._runtime.informer import (
        HandlerFuncs as HandlerFuncs,
        Informer as Informer,
        strip_managed_fields as strip_managed_fields,
    )
    from kubeforge._runtime.leaderelection import (
        LeaderElector as LeaderElector,
        LeadershipLost as LeadershipLost,
    )
    from kubeforge._runtime.localwebhooks import (
        LocalServing as LocalServing,
        WebhookRegistration as WebhookRegistration,
        register_webhook_server as register_webhook_server,
        registered_while_serving as registered_while_serving,
        serve_locally as serve_locally,
    )
    from kubeforge._runtime.logs import (
        ReconcileContext as ReconcileContext,
        ReconcileLogger as ReconcileLogger,
        configure_logging as configure_logging,
        current_reconcile as current_reconcile,
        reconcile_logger as reconcile_logger,
    )
    from kubeforge._runtime.manager import Manager as Manager
    from kubeforge._runtime.metrics import Metrics as Metrics
    from kubeforge._runtime.ownership import (
        AlreadyOwnedError as AlreadyOwnedError,
        get_controller_of as get_controller_of,
        get_reference as get_reference,
        has_controller_reference as has_controller_reference,
        remove_owner_reference as remove_owner_reference,
        set_controller_reference as set_controller_reference,
        set_owner_reference as set_owner_reference,
    )
    from kubeforge._runtime.predicate import (
        AnnotationsChanged as AnnotationsChanged,
        Funcs as Funcs,
        GenerationChanged as GenerationChanged,
        LabelsChanged as LabelsChanged,
        LabelSelectorPredicate as LabelSelectorPredicate,
        Predicate as Predicate,
        ResourceVersionChanged as ResourceVersionChanged,
        all_of as all_of,
        any_of as any_of,
        negate as negate,
    )
    from kubeforge._runtime.ratelimiter import (
        BucketRateLimiter as BucketRateLimiter,
        ItemExponentialBackoff as ItemExponentialBackoff,
        MaxOf as MaxOf,
        RateLimiter as RateLimiter,
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
    from kubeforge._runtime.serviceaccount import (
        ServiceAccountRef as ServiceAccountRef,
        as_service_account as as_service_account,
        install_rbac as install_rbac,
    )
    from kubeforge._runtime.source import Channel as Channel
    from kubeforge._runtime.store import Store as Store
    from kubeforge._runtime.upsert import (
        OperationResult as OperationResult,
        create_or_patch as create_or_patch,
        create_or_update as create_or_update,
    )
    from kubeforge._runtime.workqueue import (
        LOW_PRIORITY as LOW_PRIORITY,
        ShutDown as ShutDown,
        WorkQueue as WorkQueue,
    )
    from kubeforge._webhook.admission import (
        AdmissionHandler as AdmissionHandler,
        Denied as Denied,
        InvalidObject as InvalidObject,
        admission_request as admission_request,
    )
    from kubeforge._webhook.builder import WebhookBuilder as WebhookBuilder
    from kubeforge._webhook.certwatcher import CertificateError as CertificateError
    from kubeforge._webhook.conversion import ConversionWebhook as ConversionWebhook
    from kubeforge._webhook.review import (
        AdmissionRequest as AdmissionRequest,
        AdmissionResponse as AdmissionResponse,
        AdmissionReview as AdmissionReview,
        UserInfo as UserInfo,
    )
    from kubeforge._webhook.server import (
        RegisteredWebhook as RegisteredWebhook,
        WebhookServer as WebhookServer,
    )
    from kubeforge._webhook.typed import (
        Defaulter as Defaulter,
        Validator as Validator,
        Warnings as Warnings,
    )
