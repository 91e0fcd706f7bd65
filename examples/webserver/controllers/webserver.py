"""The WebServer controller: keep a Deployment and a NodePort Service in line with the spec.

Both children are named after the WebServer, carry its labels and are controlled by it, so
that changes to them bring the WebServer back here and deleting it deletes them. They are
written with server-side apply under one field manager: each pass states only the fields
this controller cares about (replicas, image, selector, ports), so the defaults the API
server and the Deployment controller fill in (strategy, probes' timings, the allocated
nodePort, ...) are never overwritten, and a pass with nothing to change writes nothing.
"""

from __future__ import annotations

import logging

import kubeforge
from kubeforge.events import EventRecorder
from kubeforge.models import (
    Container,
    ContainerPort,
    Deployment,
    DeploymentSpec,
    LabelSelector,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    Service,
    ServicePort,
    ServiceSpec,
)

from api.v1 import WebServer, WebServerStatus

log = logging.getLogger(__name__)

FIELD_MANAGER = "webserver-controller"
CONTAINER = "web"
HTTP_PORT = 80


def selector_labels(webserver: WebServer) -> dict[str, str]:
    """The labels that pick this WebServer's pods (never changed once the Deployment exists:
    a Deployment's selector is immutable)."""
    return {
        "app.kubernetes.io/name": "webserver",
        "app.kubernetes.io/instance": webserver.metadata.name or "",
    }


def labels(webserver: WebServer) -> dict[str, str]:
    """The labels of everything made for this WebServer."""
    return selector_labels(webserver) | {"app.kubernetes.io/managed-by": FIELD_MANAGER}


def selector_string(webserver: WebServer) -> str:
    """The pod selector in `kubectl get -l` form, for the status (and the scale subresource)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(webserver).items()))


def metadata_for(webserver: WebServer) -> ObjectMeta:
    """Name, namespace and labels of a child: the WebServer's own name and namespace."""
    return ObjectMeta(
        name=webserver.metadata.name,
        namespace=webserver.metadata.namespace,
        labels=labels(webserver),
    )


def deployment_for(webserver: WebServer) -> Deployment:
    """The fields of the Deployment this controller owns: everything else is left to the
    server's defaults and the Deployment controller."""
    deployment = Deployment(
        metadata=metadata_for(webserver),
        spec=DeploymentSpec(
            replicas=webserver.spec.replicas,
            selector=LabelSelector(match_labels=selector_labels(webserver)),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(webserver)),
                spec=PodSpec(
                    containers=[
                        Container(
                            name=CONTAINER,
                            image=webserver.spec.image,
                            ports=[
                                ContainerPort(name="http", container_port=HTTP_PORT, protocol="TCP")
                            ],
                        )
                    ]
                ),
            ),
        ),
    )
    kubeforge.set_controller_reference(webserver, deployment)
    return deployment


def service_for(webserver: WebServer) -> Service:
    """A NodePort Service in front of the pods; the node port is left to the API server to
    allocate, so any number of WebServers can live side by side."""
    service = Service(
        metadata=metadata_for(webserver),
        spec=ServiceSpec(
            type="NodePort",
            selector=selector_labels(webserver),
            ports=[ServicePort(name="http", port=HTTP_PORT, target_port="http", protocol="TCP")],
        ),
    )
    kubeforge.set_controller_reference(webserver, service)
    return service


def status_for(webserver: WebServer, deployment: Deployment) -> WebServerStatus:
    """What the Deployment reports, as the WebServer's status."""
    observed = deployment.status
    return WebServerStatus(
        replicas=(observed.replicas or 0) if observed is not None else 0,
        ready_replicas=(observed.ready_replicas or 0) if observed is not None else 0,
        selector=selector_string(webserver),
    )


def changes(current: Deployment | None, webserver: WebServer) -> list[tuple[str, str]]:
    """What applying the spec is about to change in the Deployment, as (reason, message)
    pairs for the log and the WebServer's events; empty when it already matches."""
    replicas, image = webserver.spec.replicas, webserver.spec.image
    if current is None or current.spec is None:
        return [("Created", f"creating the deployment: {replicas} replica(s) of {image}")]
    found: list[tuple[str, str]] = []
    if current.spec.replicas != replicas:
        found.append(("Scaled", f"scaling from {current.spec.replicas} to {replicas} replica(s)"))
    pod = current.spec.template.spec
    containers = pod.containers if pod is not None else []
    old = next((c.image for c in containers if c.name == CONTAINER), None)
    if old != image:
        found.append(("Upgraded", f"upgrading the image from {old} to {image}"))
    return found


@kubeforge.rbac(groups="my.kubeforge.dev", resources="webservers", verbs=["get", "list", "watch"])
@kubeforge.rbac(
    groups="my.kubeforge.dev", resources="webservers/status", verbs=["get", "update", "patch"]
)
@kubeforge.rbac(
    groups="apps", resources="deployments", verbs=["get", "list", "watch", "create", "patch"]
)
@kubeforge.rbac(groups="", resources="services", verbs=["get", "list", "watch", "create", "patch"])
class WebServerReconciler(kubeforge.Reconciler):
    """Applies a WebServer's Deployment and Service and reports the Deployment's progress."""

    def __init__(self, events: EventRecorder) -> None:
        self.events = events

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            webserver = await self.client.get(WebServer, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None  # deleted: the garbage collector removes what it owned
        if webserver.metadata.deletion_timestamp is not None:
            return None  # on its way out: re-applying children would fight the collector

        deployment = await self.apply_deployment(webserver)
        await self.apply_service(webserver)
        await self.report(webserver, deployment)
        return None  # the Deployment's and Service's own changes bring us back

    async def apply_deployment(self, webserver: WebServer) -> Deployment:
        """Apply the Deployment, saying what changed (read from the cache beforehand)."""
        current: Deployment | None
        try:
            current = await self.client.get(
                Deployment, webserver.metadata.name or "", namespace=webserver.metadata.namespace
            )
        except kubeforge.NotFound:
            current = None
        for reason, message in changes(current, webserver):
            log.info("%s/%s: %s", webserver.metadata.namespace, webserver.metadata.name, message)
            self.events.record(webserver, "Normal", reason, message)
        return await self.client.apply(
            deployment_for(webserver), field_manager=FIELD_MANAGER, force=True
        )

    async def apply_service(self, webserver: WebServer) -> Service:
        """Apply the Service; created again whenever someone deleted it."""
        try:
            await self.client.get(
                Service, webserver.metadata.name or "", namespace=webserver.metadata.namespace
            )
        except kubeforge.NotFound:
            message = "creating the NodePort service"
            log.info("%s/%s: %s", webserver.metadata.namespace, webserver.metadata.name, message)
            self.events.record(webserver, "Normal", "ServiceCreated", message)
        return await self.client.apply(
            service_for(webserver), field_manager=FIELD_MANAGER, force=True
        )

    async def report(self, webserver: WebServer, deployment: Deployment) -> None:
        """Copy the Deployment's replica counts into the status when they moved."""
        status = status_for(webserver, deployment)
        if webserver.status is not None and webserver.status.to_dict() == status.to_dict():
            return
        await self.client.patch_status(
            WebServer,
            webserver.metadata.name or "",
            {"status": status.to_dict()},
            namespace=webserver.metadata.namespace,
        )
