"""WebServer: a web server made of a Deployment and a NodePort Service."""

from __future__ import annotations

from typing import Annotated

import kubeforge
from kubeforge import markers


@markers.on_class(
    markers.Rule(
        "!self.image.endsWith(':latest')",
        message="pin the image to a version: ':latest' cannot be rolled back",
        field_path=".image",
    )
)
class WebServerSpec(kubeforge.Model):
    """How many replicas of which image to serve."""

    replicas: Annotated[int, markers.Minimum(0), markers.Maximum(10)] = 1
    """The number of web server pods, from 0 to 10."""

    image: Annotated[str, markers.MinLength(1)] = "nginx:1.27"
    """The container image serving the web content."""


class WebServerStatus(kubeforge.Model):
    """What the controller observed."""

    replicas: int = 0
    """Pods of the Deployment, ready or not (the scale subresource reports this number)."""

    ready_replicas: int = 0
    """Pods of the Deployment that are ready."""

    selector: str | None = None
    """The label selector of the pods, as a string (what an autoscaler needs to find them)."""


@kubeforge.resource(
    group="my.kubeforge.dev",
    version="v1",
    short_names=["ws"],
    scale=kubeforge.Scale(".spec.replicas", ".status.replicas", ".status.selector"),
    printer_columns=[
        kubeforge.PrinterColumn("Replicas", ".spec.replicas", type="integer"),
        kubeforge.PrinterColumn("Ready", ".status.readyReplicas", type="integer"),
        kubeforge.PrinterColumn("Image", ".spec.image"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class WebServer(kubeforge.Resource[WebServerSpec, WebServerStatus]):
    """WebServer runs an image as a Deployment behind a NodePort Service."""
