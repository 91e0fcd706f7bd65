"""The custom resource both benchmark operators serve: a Widget asks for a ConfigMap holding
its size; its status names the ConfigMap and the generation it reflects."""

from __future__ import annotations

from typing import Any

import kubeforge
from kubeforge._api.crd import crd_for

GROUP = "bench.kubeforge.dev"
VERSION = "v1"
PLURAL = "widgets"


class WidgetSpec(kubeforge.Model):
    """What the ConfigMap should hold."""

    size: int = 0
    """Written to the ConfigMap as data.size."""


class WidgetStatus(kubeforge.Model):
    """What the operator last made."""

    config_map: str | None = None
    """The name of the owned ConfigMap."""

    observed_generation: int | None = None
    """The generation of the spec the ConfigMap holds."""


@kubeforge.resource(group=GROUP, version=VERSION)
class Widget(kubeforge.Resource[WidgetSpec, WidgetStatus]):
    """A Widget: one ConfigMap made from its spec."""


def config_map_name(widget_name: str) -> str:
    """The owned ConfigMap's name."""
    return f"{widget_name}-config"


def widget_crd() -> dict[str, Any]:
    """The CustomResourceDefinition, as `kubeforge manifests` would write it."""
    return crd_for([Widget])
