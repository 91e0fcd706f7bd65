"""Talking to a Kubernetes API server, beyond what the root holds (`kubeforge.Client`,
`ObjectClient`, `ClusterConfig`, `load_config` and the common errors): each verb's options
as a `TypedDict` (`GetOptions`, `PatchOptions`, ...), the `Reader`, `Writer` and
`StatusWriter` protocols and their blocking twins, the rest of the API's status errors,
kubeconfig loading, discovery, watch events, ServiceAccount tokens, retry backoff and storage
migration. docs/runtime.md describes the clients.
"""

from __future__ import annotations

from kubeforge._client.auth import ServiceAccountToken
from kubeforge._client.client import KindLike, KindOf, Obj, ObjectList, WriteObserver, Written
from kubeforge._client.config import (
    ConfigError,
    kubeconfig_contexts,
    load_kubeconfig,
    load_kubeconfig_data,
)
from kubeforge._client.discovery import APIResource, NoKindMatch
from kubeforge._client.errors import (
    BadRequest,
    Forbidden,
    Gone,
    MethodNotAllowed,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
)
from kubeforge._client.options import (
    ApplyOptions,
    CreateOptions,
    DeleteAllOfOptions,
    DeleteOptions,
    GetOptions,
    ListOptions,
    PatchOptions,
    PatchType,
    PropagationPolicy,
    UpdateOptions,
)
from kubeforge._client.protocols import (
    Reader,
    StatusWriter,
    SyncReader,
    SyncStatusWriter,
    SyncWriter,
    Writer,
)
from kubeforge._client.retry import Backoff
from kubeforge._client.storagemigration import MigrationError, MigrationProgress, migrate_storage
from kubeforge._client.watch import WatchEvent

__all__ = [
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
]
