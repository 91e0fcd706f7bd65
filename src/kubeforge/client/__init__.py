"""The async Kubernetes client."""

from kubeforge.client.client import Client, KindLike, ObjectList, PatchType
from kubeforge.client.config import ClusterConfig, ConfigError, load_config, load_kubeconfig
from kubeforge.client.discovery import APIResource, NoKindMatch
from kubeforge.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
    ignore_already_exists,
    ignore_not_found,
)
from kubeforge.client.retry import Backoff, retry_on_conflict
from kubeforge.client.watch import WatchEvent

__all__ = [
    "APIResource",
    "AlreadyExists",
    "ApiError",
    "Backoff",
    "BadRequest",
    "Client",
    "ClusterConfig",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KindLike",
    "MethodNotAllowed",
    "NoKindMatch",
    "NotFound",
    "ObjectList",
    "PatchType",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "WatchEvent",
    "ignore_already_exists",
    "ignore_not_found",
    "load_config",
    "load_kubeconfig",
    "retry_on_conflict",
]
