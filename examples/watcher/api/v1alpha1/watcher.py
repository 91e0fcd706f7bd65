"""Watcher: a container plus configuration kept in a ConfigMap of its own."""

from __future__ import annotations

from typing import Annotated, Any

import kubeforge
from kubeforge import markers
from kubeforge.models import Container, LocalObjectReference, Volume


class RequireFields(markers.Marker):
    """Make fields required that the annotated type's own schema leaves optional.

    A pod spec may leave a container's image to a higher-level controller; a Watcher has
    nothing above it to fill one in, so its container must name an image itself.
    """

    def __init__(self, *names: str) -> None:
        self.names = names

    def apply(self, schema: dict[str, Any]) -> None:
        schema["required"] = sorted({*schema.get("required", []), *self.names})


class WatcherSpec(kubeforge.Model):
    """The container to run and the configuration it reads."""

    container: Annotated[Container, RequireFields("image")]
    """The container to run, exactly as in a pod spec (name and image are required)."""

    volume: Volume | None = None
    """A volume for the container, exactly as in a pod spec."""

    config_data: dict[str, str] | None = None
    """Text configuration, copied into the ConfigMap <name>-config."""

    config_binary_data: dict[str, Annotated[str, markers.Format("byte")]] | None = None
    """Binary configuration (base64), copied into the ConfigMap's binaryData."""

    image_pull_secrets: list[LocalObjectReference] | None = None
    """Secrets for pulling the container's image."""


class WatcherStatus(kubeforge.Model):
    """What the controller created."""

    config_map_name: str = ""
    """The ConfigMap holding the configuration data."""


@kubeforge.resource(
    group="watch.kubeforge.dev",
    version="v1alpha1",
    printer_columns=[
        kubeforge.PrinterColumn("Image", ".spec.container.image"),
        kubeforge.PrinterColumn("ConfigMap", ".status.configMapName"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class Watcher(kubeforge.Resource[WatcherSpec, WatcherStatus]):
    """Watcher describes a container and the configuration it watches."""
