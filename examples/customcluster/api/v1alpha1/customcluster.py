"""Customcluster: a fixed number of pods echoing a message."""

from __future__ import annotations

from typing import Annotated

import kubeforge
from kubeforge import markers


class CustomclusterSpec(kubeforge.Model):
    """How many pods, saying what."""

    count: Annotated[int, markers.Minimum(0), markers.Maximum(20)] = 1
    """The number of pods to keep running, from 0 to 20."""

    message: Annotated[str, markers.MinLength(1), markers.MaxLength(256)]
    """What each pod echoes; changing it replaces every pod."""


class CustomclusterStatus(kubeforge.Model):
    """What the controller observed."""

    running: int = 0
    """Pods of this cluster that are running."""

    message: str = ""
    """The message the running pods echo."""


@kubeforge.resource(
    group="samplecontroller.kubeforge.dev",
    version="v1alpha1",
    short_names=["cc"],
    printer_columns=[
        kubeforge.PrinterColumn("Count", ".spec.count", type="integer"),
        kubeforge.PrinterColumn("Running", ".status.running", type="integer"),
        kubeforge.PrinterColumn("Message", ".status.message"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class Customcluster(kubeforge.Resource[CustomclusterSpec, CustomclusterStatus]):
    """Customcluster keeps `count` pods labelled controller=<name> that echo `message`."""
