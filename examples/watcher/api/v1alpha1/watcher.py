"""Watcher: a container plus configuration kept in a ConfigMap of its own."""

from __future__ import annotations

from typing import Annotated

import kubeforge
from kubeforge.models import Container, LocalObjectReference, Volume


class WatcherSpec(kubeforge.Model):
    """The container to run and the configuration it reads."""

    container: Container
    """The main container, exactly as in a pod spec."""

    volume: Volume | None = None
    """A volume for the container, exactly as in a pod spec."""

    config_data: dict[str, str] | None = None
    """Text configuration, copied into the ConfigMap <name>-config."""

    config_binary_data: dict[str, Annotated[str, kubeforge.Format("byte")]] | None = None
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
