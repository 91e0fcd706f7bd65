"""Objects and resource types at a fixed time, for the table, printer and duration tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubeforge._api.machinery.timestamps import format_time
from kubeforge._apiserver.types.resource import ResourceType

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    """An RFC 3339 timestamp `seconds_ago` before NOW."""
    return format_time(NOW - timedelta(seconds=seconds_ago))


def rt(group: str, kind: str, **extra: Any) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        kind=kind,
        plural=kind.lower() + "s",
        singular=kind.lower(),
        namespaced=True,
        **extra,
    )


def meta(name: str = "x", created: float = 300, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": ts(created), **extra}
