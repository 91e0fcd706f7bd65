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
from kubeforge.lazyload import lazy_exports

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
    "PrinterColumn": "kubeforge.api.meta",
    "Scale": "kubeforge.api.meta",
    "WebhookConversion": "kubeforge.api.meta",
    "resource": "kubeforge.api.resource",
    "registered_resources": "kubeforge.api.resource",
    "rbac": "kubeforge.api.rbac",
    "FieldError": "kubeforge.api.fielderror",
    # versions and conversion
    "Hub": "kubeforge.api.conversion",
    "Convertible": "kubeforge.api.conversion",
    "ConversionError": "kubeforge.api.conversion",
    "KindVersions": "kubeforge.api.conversion",
    "convert": "kubeforge.api.conversion",
    "kind_versions": "kubeforge.api.conversion",
    "stash": "kubeforge.api.conversion",
    "unstash": "kubeforge.api.conversion",
    # webhook declarations and manifests
    "admission_webhook": "kubeforge.api.webhooks",
    "MatchCondition": "kubeforge.api.webhooks",
    "WebhookRule": "kubeforge.api.webhooks",
    "WebhookSpec": "kubeforge.api.webhooks",
    "webhook_configurations": "kubeforge.api.webhooks",
    # schema markers
    "AtLeastOneOf": "kubeforge.api.markers",
    "AtMostOneOf": "kubeforge.api.markers",
    "Default": "kubeforge.api.markers",
    "Description": "kubeforge.api.markers",
    "EmbeddedResource": "kubeforge.api.markers",
    "Enum": "kubeforge.api.markers",
    "Example": "kubeforge.api.markers",
    "ExactlyOneOf": "kubeforge.api.markers",
    "ExternalDocs": "kubeforge.api.markers",
    "Format": "kubeforge.api.markers",
    "Immutable": "kubeforge.api.markers",
    "IntOrString": "kubeforge.api.markers",
    "Items": "kubeforge.api.markers",
    "ListMapKeys": "kubeforge.api.markers",
    "ListType": "kubeforge.api.markers",
    "MapType": "kubeforge.api.markers",
    "Marker": "kubeforge.api.markers",
    "MaxItems": "kubeforge.api.markers",
    "MaxLength": "kubeforge.api.markers",
    "MaxProperties": "kubeforge.api.markers",
    "Maximum": "kubeforge.api.markers",
    "MinItems": "kubeforge.api.markers",
    "MinLength": "kubeforge.api.markers",
    "MinProperties": "kubeforge.api.markers",
    "Minimum": "kubeforge.api.markers",
    "MultipleOf": "kubeforge.api.markers",
    "Nullable": "kubeforge.api.markers",
    "Optional": "kubeforge.api.markers",
    "Pattern": "kubeforge.api.markers",
    "PreserveUnknownFields": "kubeforge.api.markers",
    "Required": "kubeforge.api.markers",
    "Rule": "kubeforge.api.markers",
    "Schemaless": "kubeforge.api.markers",
    "StructType": "kubeforge.api.markers",
    "Title": "kubeforge.api.markers",
    "Type": "kubeforge.api.markers",
    "UniqueItems": "kubeforge.api.markers",
    "markers": "kubeforge.api.markers",
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
    "ServiceAccountToken": "kubeforge.client.auth",
    "Backoff": "kubeforge.client.retry",
    "retry_on_conflict": "kubeforge.client.retry",
    "migrate_storage": "kubeforge.client.storagemigration",
    "MigrationProgress": "kubeforge.client.storagemigration",
    "MigrationError": "kubeforge.client.storagemigration",
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
    # admission webhooks
    "AdmissionRequest": "kubeforge.webhook.review",
    "AdmissionResponse": "kubeforge.webhook.review",
    "AdmissionReview": "kubeforge.webhook.review",
    "UserInfo": "kubeforge.webhook.review",
    "AdmissionHandler": "kubeforge.webhook.admission",
    "Denied": "kubeforge.webhook.admission",
    "InvalidObject": "kubeforge.webhook.admission",
    "admission_request": "kubeforge.webhook.admission",
    "Defaulter": "kubeforge.webhook.typed",
    "Validator": "kubeforge.webhook.typed",
    "Warnings": "kubeforge.webhook.typed",
    "WebhookBuilder": "kubeforge.webhook.builder",
    "WebhookServer": "kubeforge.webhook.server",
    "RegisteredWebhook": "kubeforge.webhook.server",
    "CertificateError": "kubeforge.webhook.certwatcher",
    "ConversionWebhook": "kubeforge.webhook.conversion",
    "LocalServing": "kubeforge.runtime.localwebhooks",
    "WebhookRegistration": "kubeforge.runtime.localwebhooks",
    "register_webhook_server": "kubeforge.runtime.localwebhooks",
    "registered_while_serving": "kubeforge.runtime.localwebhooks",
    "serve_locally": "kubeforge.runtime.localwebhooks",
    "ServiceAccountRef": "kubeforge.runtime.serviceaccount",
    "install_rbac": "kubeforge.runtime.serviceaccount",
    "as_service_account": "kubeforge.runtime.serviceaccount",
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
    "PartialObjectMetadata": "kubeforge.api.meta",
    "ConditionStatus": "kubeforge.api.meta",
    "KubeObject": "kubeforge.api.meta",
    "HasMetadata": "kubeforge.api.meta",
    "Reader": "kubeforge.client.protocols",
    "Writer": "kubeforge.client.protocols",
    "StatusWriter": "kubeforge.client.protocols",
    "ObjectClient": "kubeforge.client.protocols",
    "SyncReader": "kubeforge.client.protocols",
    "SyncWriter": "kubeforge.client.protocols",
    "SyncStatusWriter": "kubeforge.client.protocols",
    "SyncObjectClient": "kubeforge.client.protocols",
    "ObjectReconciler": "kubeforge.runtime.reconcile",
    "SyncObjectReconciler": "kubeforge.runtime.reconcile",
    "Channel": "kubeforge.runtime.source",
    "ALL_NAMESPACES": "kubeforge.runtime.cache",
    "FieldSelectorUnverified": "kubeforge.runtime.cache",
    "with_finalizer": "kubeforge.runtime.finalizers",
    "ensure_finalizer": "kubeforge.runtime.finalizers",
    "release_finalizer": "kubeforge.runtime.finalizers",
    "reconcile_logger": "kubeforge.runtime.logs",
    "ReconcileLogger": "kubeforge.runtime.logs",
    "ReconcileContext": "kubeforge.runtime.logs",
    "current_reconcile": "kubeforge.runtime.logs",
    "configure_logging": "kubeforge.runtime.logs",
    "RateLimiter": "kubeforge.runtime.ratelimiter",
    "ItemExponentialBackoff": "kubeforge.runtime.ratelimiter",
    "BucketRateLimiter": "kubeforge.runtime.ratelimiter",
    "MaxOf": "kubeforge.runtime.ratelimiter",
    "PANICS": "kubeforge.runtime.controller",
    # a project's manager command (its container's entrypoint)
    "manager_main": "kubeforge.cli.run",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge.api.conversion import ConversionError as ConversionError
    from kubeforge.api.conversion import Convertible as Convertible
    from kubeforge.api.conversion import Hub as Hub
    from kubeforge.api.conversion import KindVersions as KindVersions
    from kubeforge.api.conversion import convert as convert
    from kubeforge.api.conversion import kind_versions as kind_versions
    from kubeforge.api.conversion import stash as stash
    from kubeforge.api.conversion import unstash as unstash
    from kubeforge.api.fielderror import FieldError as FieldError
    from kubeforge.api.markers import (
        AtLeastOneOf as AtLeastOneOf,
    )
    from kubeforge.api.markers import (
        AtMostOneOf as AtMostOneOf,
    )
    from kubeforge.api.markers import (
        Default as Default,
    )
    from kubeforge.api.markers import (
        Description as Description,
    )
    from kubeforge.api.markers import (
        EmbeddedResource as EmbeddedResource,
    )
    from kubeforge.api.markers import (
        Enum as Enum,
    )
    from kubeforge.api.markers import (
        ExactlyOneOf as ExactlyOneOf,
    )
    from kubeforge.api.markers import (
        Example as Example,
    )
    from kubeforge.api.markers import (
        ExternalDocs as ExternalDocs,
    )
    from kubeforge.api.markers import (
        Format as Format,
    )
    from kubeforge.api.markers import (
        Immutable as Immutable,
    )
    from kubeforge.api.markers import (
        IntOrString as IntOrString,
    )
    from kubeforge.api.markers import (
        Items as Items,
    )
    from kubeforge.api.markers import (
        ListMapKeys as ListMapKeys,
    )
    from kubeforge.api.markers import (
        ListType as ListType,
    )
    from kubeforge.api.markers import (
        MapType as MapType,
    )
    from kubeforge.api.markers import (
        Marker as Marker,
    )
    from kubeforge.api.markers import (
        Maximum as Maximum,
    )
    from kubeforge.api.markers import (
        MaxItems as MaxItems,
    )
    from kubeforge.api.markers import (
        MaxLength as MaxLength,
    )
    from kubeforge.api.markers import (
        MaxProperties as MaxProperties,
    )
    from kubeforge.api.markers import (
        Minimum as Minimum,
    )
    from kubeforge.api.markers import (
        MinItems as MinItems,
    )
    from kubeforge.api.markers import (
        MinLength as MinLength,
    )
    from kubeforge.api.markers import (
        MinProperties as MinProperties,
    )
    from kubeforge.api.markers import (
        MultipleOf as MultipleOf,
    )
    from kubeforge.api.markers import (
        Nullable as Nullable,
    )
    from kubeforge.api.markers import (
        Optional as Optional,
    )
    from kubeforge.api.markers import (
        Pattern as Pattern,
    )
    from kubeforge.api.markers import (
        PreserveUnknownFields as PreserveUnknownFields,
    )
    from kubeforge.api.markers import (
        Required as Required,
    )
    from kubeforge.api.markers import (
        Rule as Rule,
    )
    from kubeforge.api.markers import (
        Schemaless as Schemaless,
    )
    from kubeforge.api.markers import (
        StructType as StructType,
    )
    from kubeforge.api.markers import (
        Title as Title,
    )
    from kubeforge.api.markers import (
        Type as Type,
    )
    from kubeforge.api.markers import (
        UniqueItems as UniqueItems,
    )
    from kubeforge.api.markers import (
        markers as markers,
    )
    from kubeforge.api.meta import (
        Condition as Condition,
    )
    from kubeforge.api.meta import ConditionStatus as ConditionStatus
    from kubeforge.api.meta import (
        GroupVersionKind as GroupVersionKind,
    )
    from kubeforge.api.meta import HasMetadata as HasMetadata
    from kubeforge.api.meta import KubeObject as KubeObject
    from kubeforge.api.meta import (
        LabelSelector as LabelSelector,
    )
    from kubeforge.api.meta import (
        ObjectMeta as ObjectMeta,
    )
    from kubeforge.api.meta import (
        OwnerReference as OwnerReference,
    )
    from kubeforge.api.meta import PartialObjectMetadata as PartialObjectMetadata
    from kubeforge.api.meta import (
        PrinterColumn as PrinterColumn,
    )
    from kubeforge.api.meta import (
        ResourceInfo as ResourceInfo,
    )
    from kubeforge.api.meta import (
        Scale as Scale,
    )
    from kubeforge.api.meta import (
        WebhookConversion as WebhookConversion,
    )
    from kubeforge.api.model import Model as Model
    from kubeforge.api.rbac import rbac as rbac
    from kubeforge.api.resource import (
        Resource as Resource,
    )
    from kubeforge.api.resource import (
        registered_resources as registered_resources,
    )
    from kubeforge.api.resource import (
        resource as resource,
    )
    from kubeforge.api.webhooks import MatchCondition as MatchCondition
    from kubeforge.api.webhooks import WebhookRule as WebhookRule
    from kubeforge.api.webhooks import WebhookSpec as WebhookSpec
    from kubeforge.api.webhooks import admission_webhook as admission_webhook
    from kubeforge.api.webhooks import webhook_configurations as webhook_configurations
    from kubeforge.cli.run import manager_main as manager_main
    from kubeforge.client.auth import ServiceAccountToken as ServiceAccountToken
    from kubeforge.client.client import Client as Client
    from kubeforge.client.client import ObjectList as ObjectList
    from kubeforge.client.config import (
        ClusterConfig as ClusterConfig,
    )
    from kubeforge.client.config import (
        ConfigError as ConfigError,
    )
    from kubeforge.client.config import (
        load_config as load_config,
    )
    from kubeforge.client.config import (
        load_kubeconfig as load_kubeconfig,
    )
    from kubeforge.client.discovery import NoKindMatch as NoKindMatch
    from kubeforge.client.errors import (
        AlreadyExists as AlreadyExists,
    )
    from kubeforge.client.errors import (
        ApiError as ApiError,
    )
    from kubeforge.client.errors import (
        BadRequest as BadRequest,
    )
    from kubeforge.client.errors import (
        Conflict as Conflict,
    )
    from kubeforge.client.errors import (
        Forbidden as Forbidden,
    )
    from kubeforge.client.errors import (
        Gone as Gone,
    )
    from kubeforge.client.errors import (
        Invalid as Invalid,
    )
    from kubeforge.client.errors import (
        NotFound as NotFound,
    )
    from kubeforge.client.errors import (
        TooManyRequests as TooManyRequests,
    )
    from kubeforge.client.errors import (
        Unauthorized as Unauthorized,
    )
    from kubeforge.client.errors import (
        ignore_already_exists as ignore_already_exists,
    )
    from kubeforge.client.errors import (
        ignore_not_found as ignore_not_found,
    )
    from kubeforge.client.protocols import ObjectClient as ObjectClient
    from kubeforge.client.protocols import Reader as Reader
    from kubeforge.client.protocols import StatusWriter as StatusWriter
    from kubeforge.client.protocols import SyncObjectClient as SyncObjectClient
    from kubeforge.client.protocols import SyncReader as SyncReader
    from kubeforge.client.protocols import SyncStatusWriter as SyncStatusWriter
    from kubeforge.client.protocols import SyncWriter as SyncWriter
    from kubeforge.client.protocols import Writer as Writer
    from kubeforge.client.retry import Backoff as Backoff
    from kubeforge.client.retry import retry_on_conflict as retry_on_conflict
    from kubeforge.client.storagemigration import MigrationError as MigrationError
    from kubeforge.client.storagemigration import MigrationProgress as MigrationProgress
    from kubeforge.client.storagemigration import migrate_storage as migrate_storage
    from kubeforge.client.watch import WatchEvent as WatchEvent
    from kubeforge.runtime.builder import Builder as Builder
    from kubeforge.runtime.cache import ALL_NAMESPACES as ALL_NAMESPACES
    from kubeforge.runtime.cache import (
        Cache as Cache,
    )
    from kubeforge.runtime.cache import (
        CacheOptions as CacheOptions,
    )
    from kubeforge.runtime.cache import FieldSelectorUnverified as FieldSelectorUnverified
    from kubeforge.runtime.cache import (
        NotCached as NotCached,
    )
    from kubeforge.runtime.cached_client import (
        CachedClient as CachedClient,
    )
    from kubeforge.runtime.cached_client import (
        SyncClient as SyncClient,
    )
    from kubeforge.runtime.conditions import (
        find_status_condition as find_status_condition,
    )
    from kubeforge.runtime.conditions import (
        is_status_condition_true as is_status_condition_true,
    )
    from kubeforge.runtime.conditions import (
        remove_status_condition as remove_status_condition,
    )
    from kubeforge.runtime.conditions import (
        set_status_condition as set_status_condition,
    )
    from kubeforge.runtime.controller import PANICS as PANICS
    from kubeforge.runtime.controller import (
        Controller as Controller,
    )
    from kubeforge.runtime.controller import (
        ControllerOptions as ControllerOptions,
    )
    from kubeforge.runtime.events import EventRecorder as EventRecorder
    from kubeforge.runtime.finalizers import (
        add_finalizer as add_finalizer,
    )
    from kubeforge.runtime.finalizers import ensure_finalizer as ensure_finalizer
    from kubeforge.runtime.finalizers import (
        has_finalizer as has_finalizer,
    )
    from kubeforge.runtime.finalizers import release_finalizer as release_finalizer
    from kubeforge.runtime.finalizers import (
        remove_finalizer as remove_finalizer,
    )
    from kubeforge.runtime.finalizers import with_finalizer as with_finalizer
    from kubeforge.runtime.handler import (
        EnqueueRequestForObject as EnqueueRequestForObject,
    )
    from kubeforge.runtime.handler import (
        EnqueueRequestForOwner as EnqueueRequestForOwner,
    )
    from kubeforge.runtime.handler import (
        EnqueueRequestsFromMapFunc as EnqueueRequestsFromMapFunc,
    )
    from kubeforge.runtime.informer import (
        HandlerFuncs as HandlerFuncs,
    )
    from kubeforge.runtime.informer import (
        Informer as Informer,
    )
    from kubeforge.runtime.informer import (
        strip_managed_fields as strip_managed_fields,
    )
    from kubeforge.runtime.leaderelection import (
        LeaderElector as LeaderElector,
    )
    from kubeforge.runtime.leaderelection import (
        LeadershipLost as LeadershipLost,
    )
    from kubeforge.runtime.localwebhooks import LocalServing as LocalServing
    from kubeforge.runtime.localwebhooks import WebhookRegistration as WebhookRegistration
    from kubeforge.runtime.localwebhooks import (
        register_webhook_server as register_webhook_server,
    )
    from kubeforge.runtime.localwebhooks import (
        registered_while_serving as registered_while_serving,
    )
    from kubeforge.runtime.localwebhooks import serve_locally as serve_locally
    from kubeforge.runtime.logs import ReconcileContext as ReconcileContext
    from kubeforge.runtime.logs import ReconcileLogger as ReconcileLogger
    from kubeforge.runtime.logs import configure_logging as configure_logging
    from kubeforge.runtime.logs import current_reconcile as current_reconcile
    from kubeforge.runtime.logs import reconcile_logger as reconcile_logger
    from kubeforge.runtime.manager import Manager as Manager
    from kubeforge.runtime.metrics import Metrics as Metrics
    from kubeforge.runtime.ownership import (
        AlreadyOwnedError as AlreadyOwnedError,
    )
    from kubeforge.runtime.ownership import (
        has_controller_reference as has_controller_reference,
    )
    from kubeforge.runtime.ownership import (
        remove_owner_reference as remove_owner_reference,
    )
    from kubeforge.runtime.ownership import (
        set_controller_reference as set_controller_reference,
    )
    from kubeforge.runtime.ownership import (
        set_owner_reference as set_owner_reference,
    )
    from kubeforge.runtime.predicate import (
        AnnotationsChanged as AnnotationsChanged,
    )
    from kubeforge.runtime.predicate import (
        Funcs as Funcs,
    )
    from kubeforge.runtime.predicate import (
        GenerationChanged as GenerationChanged,
    )
    from kubeforge.runtime.predicate import (
        LabelsChanged as LabelsChanged,
    )
    from kubeforge.runtime.predicate import (
        LabelSelectorPredicate as LabelSelectorPredicate,
    )
    from kubeforge.runtime.predicate import (
        Predicate as Predicate,
    )
    from kubeforge.runtime.predicate import (
        ResourceVersionChanged as ResourceVersionChanged,
    )
    from kubeforge.runtime.predicate import (
        all_of as all_of,
    )
    from kubeforge.runtime.predicate import (
        any_of as any_of,
    )
    from kubeforge.runtime.predicate import (
        negate as negate,
    )
    from kubeforge.runtime.ratelimiter import BucketRateLimiter as BucketRateLimiter
    from kubeforge.runtime.ratelimiter import ItemExponentialBackoff as ItemExponentialBackoff
    from kubeforge.runtime.ratelimiter import MaxOf as MaxOf
    from kubeforge.runtime.ratelimiter import RateLimiter as RateLimiter
    from kubeforge.runtime.reconcile import ObjectReconciler as ObjectReconciler
    from kubeforge.runtime.reconcile import (
        Reconciler as Reconciler,
    )
    from kubeforge.runtime.reconcile import (
        Request as Request,
    )
    from kubeforge.runtime.reconcile import (
        Result as Result,
    )
    from kubeforge.runtime.reconcile import SyncObjectReconciler as SyncObjectReconciler
    from kubeforge.runtime.reconcile import (
        SyncReconciler as SyncReconciler,
    )
    from kubeforge.runtime.reconcile import (
        TerminalError as TerminalError,
    )
    from kubeforge.runtime.serviceaccount import ServiceAccountRef as ServiceAccountRef
    from kubeforge.runtime.serviceaccount import as_service_account as as_service_account
    from kubeforge.runtime.serviceaccount import install_rbac as install_rbac
    from kubeforge.runtime.source import Channel as Channel
    from kubeforge.runtime.store import Store as Store
    from kubeforge.runtime.upsert import (
        OperationResult as OperationResult,
    )
    from kubeforge.runtime.upsert import (
        create_or_patch as create_or_patch,
    )
    from kubeforge.runtime.upsert import (
        create_or_update as create_or_update,
    )
    from kubeforge.runtime.workqueue import (
        LOW_PRIORITY as LOW_PRIORITY,
    )
    from kubeforge.runtime.workqueue import (
        ShutDown as ShutDown,
    )
    from kubeforge.runtime.workqueue import (
        WorkQueue as WorkQueue,
    )
    from kubeforge.webhook.admission import AdmissionHandler as AdmissionHandler
    from kubeforge.webhook.admission import Denied as Denied
    from kubeforge.webhook.admission import InvalidObject as InvalidObject
    from kubeforge.webhook.admission import admission_request as admission_request
    from kubeforge.webhook.builder import WebhookBuilder as WebhookBuilder
    from kubeforge.webhook.certwatcher import CertificateError as CertificateError
    from kubeforge.webhook.conversion import ConversionWebhook as ConversionWebhook
    from kubeforge.webhook.review import AdmissionRequest as AdmissionRequest
    from kubeforge.webhook.review import AdmissionResponse as AdmissionResponse
    from kubeforge.webhook.review import AdmissionReview as AdmissionReview
    from kubeforge.webhook.review import UserInfo as UserInfo
    from kubeforge.webhook.server import RegisteredWebhook as RegisteredWebhook
    from kubeforge.webhook.server import WebhookServer as WebhookServer
    from kubeforge.webhook.typed import Defaulter as Defaulter
    from kubeforge.webhook.typed import Validator as Validator
    from kubeforge.webhook.typed import Warnings as Warnings
