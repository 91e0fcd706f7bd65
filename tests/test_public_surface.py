"""The public surface, pinned (decision 44). A module is internal when a part of its path
starts with an underscore; every other module is public, and PUBLIC below is what each one
exports. A change to the public surface is a change to this file.

Also checked: every module outside this list is internal by its path; each public module says
what it is for; every public name comes from an internal module, re-exported on purpose, and
has one public home; examples and the scaffold's templates import only public modules.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import kubeforge.models
from tests.support import ROOT

PACKAGE = ROOT / "src" / "kubeforge"

# The root and the concept modules, each with the exact names of its `__all__`.
PUBLIC: dict[str, list[str]] = {
    "kubeforge": [
        "AlreadyExists",
        "AlreadyOwnedError",
        "ApiError",
        "Client",
        "ClusterConfig",
        "Condition",
        "Conflict",
        "Invalid",
        "Manager",
        "Model",
        "NotFound",
        "ObjectClient",
        "ObjectMeta",
        "ObjectReconciler",
        "OperationResult",
        "PrinterColumn",
        "Reconciler",
        "Request",
        "Resource",
        "Result",
        "Scale",
        "SyncObjectClient",
        "SyncObjectReconciler",
        "SyncReconciler",
        "TerminalError",
        "__version__",
        "add_finalizer",
        "create_or_patch",
        "create_or_update",
        "ensure_finalizer",
        "find_status_condition",
        "get_controller_of",
        "get_reference",
        "has_controller_reference",
        "has_finalizer",
        "ignore_already_exists",
        "ignore_not_found",
        "is_status_condition_true",
        "load_config",
        "manager_main",
        "rbac",
        "release_finalizer",
        "remove_finalizer",
        "remove_owner_reference",
        "remove_status_condition",
        "resource",
        "retry_on_conflict",
        "set_controller_reference",
        "set_owner_reference",
        "set_status_condition",
        "with_finalizer",
    ],
    "kubeforge.apiserver": [
        "APIServer",
        "ConnectionLimits",
        "ServerConfig",
        "serve",
        "tune_gc",
    ],
    "kubeforge.cache": [
        "ALL_NAMESPACES",
        "Cache",
        "CacheOptions",
        "CachedClient",
        "FieldSelectorUnverified",
        "HandlerFuncs",
        "Informer",
        "NotCached",
        "Store",
        "SyncClient",
        "strip_managed_fields",
    ],
    "kubeforge.client": [
        "APIResource",
        "ApplyOptions",
        "Backoff",
        "BadRequest",
        "ConfigError",
        "CreateOptions",
        "DeleteAllOfOptions",
        "DeleteOptions",
        "Forbidden",
        "GetOptions",
        "Gone",
        "KindLike",
        "KindOf",
        "ListOptions",
        "MethodNotAllowed",
        "MigrationError",
        "MigrationProgress",
        "NoKindMatch",
        "Obj",
        "ObjectList",
        "PatchOptions",
        "PatchType",
        "PropagationPolicy",
        "Reader",
        "ServerTimeout",
        "ServiceAccountToken",
        "StatusWriter",
        "SyncReader",
        "SyncStatusWriter",
        "SyncWriter",
        "TooManyRequests",
        "Unauthorized",
        "UnsupportedMediaType",
        "UpdateOptions",
        "WatchEvent",
        "WriteObserver",
        "Writer",
        "Written",
        "kubeconfig_contexts",
        "load_kubeconfig",
        "load_kubeconfig_data",
        "migrate_storage",
    ],
    "kubeforge.clock": [
        "Clock",
        "RealClock",
        "Timer",
        "VirtualClock",
        "call_later",
        "get",
        "monotonic",
        "now",
        "sleep",
        "time",
        "timeout",
        "use",
        "wait_for",
    ],
    "kubeforge.cluster": [
        "ClusterOptions",
        "DevCluster",
    ],
    "kubeforge.controller": [
        "Builder",
        "Controller",
        "ControllerOptions",
        "Delivered",
        "Observer",
        "PANICS",
        "Read",
        "ReconcileFinished",
        "ReconcileStarted",
        "Record",
        "Trigger",
        "Write",
    ],
    "kubeforge.conversion": [
        "ConversionError",
        "ConversionWebhook",
        "Convertible",
        "Hub",
        "KindVersions",
        "WebhookConversion",
        "convert",
        "kind_versions",
        "stash",
        "unstash",
    ],
    "kubeforge.events": [
        "EventRecorder",
        "EventType",
    ],
    "kubeforge.handler": [
        "EnqueueRequestForObject",
        "EnqueueRequestForOwner",
        "EnqueueRequestsFromMapFunc",
        "EventHandler",
        "MapFunc",
    ],
    "kubeforge.leaderelection": [
        "LeaderElector",
        "LeadershipLost",
    ],
    "kubeforge.logs": [
        "ReconcileContext",
        "ReconcileLogger",
        "configure_logging",
        "current_reconcile",
        "reconcile_logger",
    ],
    "kubeforge.markers": [
        "AtLeastOneOf",
        "AtMostOneOf",
        "Default",
        "Description",
        "EmbeddedResource",
        "Enum",
        "ExactlyOneOf",
        "Example",
        "ExternalDocs",
        "Format",
        "Immutable",
        "IntOrString",
        "Items",
        "ListMapKeys",
        "ListType",
        "MapType",
        "Marker",
        "MaxItems",
        "MaxLength",
        "MaxProperties",
        "Maximum",
        "MinItems",
        "MinLength",
        "MinProperties",
        "Minimum",
        "MultipleOf",
        "Nullable",
        "Optional",
        "Pattern",
        "PreserveUnknownFields",
        "Required",
        "Rule",
        "Schemaless",
        "StructType",
        "Title",
        "Type",
        "UniqueItems",
        "on_class",
    ],
    "kubeforge.meta": [
        "ConditionStatus",
        "GroupVersionKind",
        "HasMetadata",
        "KubeObject",
        "PartialObjectMetadata",
        "ResourceInfo",
        "registered_resources",
    ],
    "kubeforge.multicluster": [
        "Aware",
        "Cluster",
        "ClusterNotFound",
        "ClusterRequest",
        "ClusterSet",
        "DEFAULT_KUBECONFIG_KEY",
        "DEFAULT_KUBECONFIG_LABEL",
        "KubeconfigProvider",
        "KubeconfigSecretProvider",
        "LOCAL_CLUSTER",
        "MakeCluster",
        "MultiClusterBuilder",
        "MultiClusterController",
        "MultiClusterManager",
        "Provider",
        "current_cluster",
    ],
    "kubeforge.metrics": [
        "Metrics",
    ],
    "kubeforge.predicate": [
        "AnnotationsChanged",
        "Funcs",
        "GenerationChanged",
        "LabelSelectorPredicate",
        "LabelsChanged",
        "Predicate",
        "ResourceVersionChanged",
        "all_of",
        "any_of",
        "negate",
    ],
    "kubeforge.sharding": [
        "RING_LABEL",
        "ShardRing",
        "ShardState",
        "ShardingOptions",
        "drain_label",
        "shard_label",
    ],
    "kubeforge.source": [
        "Channel",
    ],
    "kubeforge.testing": [
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
        "USE_EXISTING_CLUSTER",
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
    ],
    "kubeforge.webhook": [
        "AdmissionHandler",
        "AdmissionRequest",
        "AdmissionResponse",
        "AdmissionReview",
        "CertificateError",
        "Defaulter",
        "Denied",
        "FieldError",
        "InvalidObject",
        "LocalServing",
        "MatchCondition",
        "RegisteredWebhook",
        "UserInfo",
        "Validator",
        "Warnings",
        "WebhookBuilder",
        "WebhookRegistration",
        "WebhookRule",
        "WebhookServer",
        "WebhookSpec",
        "admission_request",
        "admission_webhook",
        "register_webhook_server",
        "registered_while_serving",
        "serve_locally",
        "webhook_configurations",
    ],
    "kubeforge.workqueue": [
        "BucketRateLimiter",
        "ItemExponentialBackoff",
        "LOW_PRIORITY",
        "MaxOf",
        "RateLimiter",
        "ShutDown",
        "WorkQueue",
    ],
}

# Public modules that are not façades: they hold their own code because every layer reads them
# (the process's one clock; decision 44 keeps them below the layers).
FOUNDATION = {"kubeforge.clock"}

# Generated from the Kubernetes definitions (tools/gen_models.py; tests/models/test_models.py):
# public, with a surface that is Kubernetes' own and not listed here.
GENERATED = [
    "kubeforge.models",
    *(f"kubeforge.models.{name}" for name in kubeforge.models.MODULES),
]

# The meta/v1 types the authoring vocabulary defines, which the generated meta/v1 module
# names among its own: the one place a public name has two homes.
SHARED_WITH_MODELS = {"Condition", "ObjectMeta"}
MODELS_REEXPORT = {
    "kubeforge._api.meta": {
        "Condition",
        "LabelSelector",
        "LabelSelectorRequirement",
        "ObjectMeta",
        "ObjectReference",
        "OwnerReference",
    },
    "kubeforge._api.machinery.timestamps": {"MicroTime", "Time"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = sorted(module_name(path) for path in PACKAGE.rglob("*.py"))


def is_internal(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def source_of(module: str) -> Path:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_names(module: str) -> dict[str, str]:
    """Name -> the module it is imported from, for a façade's imports (those of its
    `if TYPE_CHECKING:` block too) and its lazy `_EXPORTS`."""
    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    lazy: dict[str, str] = getattr(importlib.import_module(module), "_EXPORTS", {})
    return {**found, **lazy}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_each_public_module_exports_exactly_its_listed_names(module: str) -> None:
    assert sorted(importlib.import_module(module).__all__) == PUBLIC[module]


def test_every_module_outside_the_public_list_is_internal_by_its_path() -> None:
    public = set(PUBLIC) | set(GENERATED)
    assert sorted(m for m in MODULES if not is_internal(m) and m not in public) == []
    assert sorted(public - set(MODULES)) == []


@pytest.mark.parametrize("module", sorted(PUBLIC) + GENERATED)
def test_every_public_module_says_what_it_is_for(module: str) -> None:
    loaded = importlib.import_module(module)
    assert isinstance(getattr(loaded, "__all__", None), list), module
    # A paragraph for a concept; a generated module names its group-version and kinds.
    words = 20 if module in PUBLIC else 4
    assert loaded.__doc__ and len(loaded.__doc__.split()) >= words, module


@pytest.mark.parametrize("module", sorted(set(PUBLIC) - FOUNDATION))
def test_every_public_name_is_reexported_from_an_internal_module(module: str) -> None:
    # A concept module defines nothing: each of its names comes from the implementation.
    sources = imported_names(module)
    loaded = importlib.import_module(module)
    wrong = {
        name: sources.get(name)
        for name in loaded.__all__
        if name != "__version__" and not is_internal(sources.get(name) or "")
    }
    assert wrong == {}
    for name in loaded.__all__:
        assert getattr(loaded, name) is getattr(importlib.import_module(sources[name]), name)


@pytest.mark.parametrize("module", GENERATED)
def test_the_generated_models_reexport_only_the_shared_meta_types(module: str) -> None:
    loaded = importlib.import_module(module)
    sources = imported_names(module)
    reexported = {
        name: sources[name] for name in loaded.__all__ if is_internal(sources.get(name, ""))
    }
    for name, source in reexported.items():
        assert name in MODELS_REEXPORT.get(source, set()), (name, source)


def homes(modules: list[str]) -> dict[int, list[str]]:
    """The public paths of each exported object (classes and functions: values such as
    strings are not identities)."""
    found: dict[int, list[str]] = {}
    for module in modules:
        loaded = importlib.import_module(module)
        for name in loaded.__all__:
            value: Any = getattr(loaded, name)
            if isinstance(value, type) or callable(value):
                found.setdefault(id(value), []).append(f"{module}.{name}")
    return found


def test_every_public_name_has_one_public_home() -> None:
    assert [paths for paths in homes(sorted(PUBLIC)).values() if len(paths) > 1] == []


def test_only_the_shared_meta_types_are_also_typed_models() -> None:
    ours = homes(sorted(PUBLIC))
    models = homes(GENERATED)
    shared = {ours[key][0] for key in ours.keys() & models.keys()}
    assert shared == {f"kubeforge.{name}" for name in SHARED_WITH_MODELS}


def user_code() -> list[Path]:
    examples = [p for p in (ROOT / "examples").rglob("*.py") if ".venv" not in p.parts]
    templates = list((PACKAGE / "_scaffold" / "templates").rglob("*.py.tmpl"))
    return sorted(examples + templates)


INTERNAL_IMPORT = re.compile(r"^\s*(from|import)\s+kubeforge(\.\w+)*\._", re.MULTILINE)


def test_examples_and_templates_import_only_public_modules() -> None:
    wrong = [
        str(path.relative_to(ROOT))
        for path in user_code()
        if INTERNAL_IMPORT.search(path.read_text(encoding="utf-8"))
        or "kubeforge._" in path.read_text(encoding="utf-8")
    ]
    assert user_code() and wrong == []


def test_the_guides_import_only_public_modules() -> None:
    guides = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    wrong = [
        f"{path.name}: {match.group(0).strip()}"
        for path in guides
        for match in INTERNAL_IMPORT.finditer(path.read_text(encoding="utf-8"))
    ]
    assert wrong == []


def test_the_public_list_and_the_root_docstring_name_the_same_modules() -> None:
    named = set(re.findall(r"`(kubeforge\.\w+)`", kubeforge.__doc__ or ""))
    assert named == (set(PUBLIC) | {"kubeforge.models"}) - {"kubeforge"}
