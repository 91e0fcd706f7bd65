"""Admission webhooks for Pod (core/v1). The sidecar injector: a pod that names a Watcher in
its annotation gets the Watcher's container.

    metadata:
      annotations:
        watch.kubeforge.dev/inject: greeter

A mutating webhook on pod creation (a raw handler: Pod is not this project's kind). The
Watcher's `container` is added to the pod, reading the Watcher's ConfigMap `<name>-config` as
environment variables (`envFrom`), together with the Watcher's `volume` and
`imagePullSecrets` when it has them. A pod naming a Watcher that does not exist in its
namespace is refused, saying so: creating it without its sidecar would hide the mistake.

Only annotated pods are sent here (the webhook's match condition), so every other pod is
created without a call, even while this webhook is down. `setup_pod_webhook(manager)`,
called from main.setup, serves it.
"""

from __future__ import annotations

import copy
from typing import Any

import kubeforge
from kubeforge import webhook
from kubeforge.models import Pod

from api.v1alpha1 import Watcher
from controllers.watcher import config_map_name

INJECT = "watch.kubeforge.dev/inject"


def with_sidecar(pod: dict[str, Any], watcher: Watcher) -> dict[str, Any]:
    """The pod with the Watcher's container, volume and image pull secrets added.

    Denied when the pod already has a container of that name, or another volume of the
    Watcher's volume's name: either would make the pod invalid, or quietly not the Watcher's.
    """
    desired = copy.deepcopy(pod)
    spec = desired.setdefault("spec", {})
    sidecar = watcher.spec.container.to_dict()
    sidecar["envFrom"] = [
        *(sidecar.get("envFrom") or []),
        {"configMapRef": {"name": config_map_name(watcher)}},
    ]
    name = watcher.metadata.name
    taken = [c.get("name") for c in [*spec.get("initContainers", []), *spec.get("containers", [])]]
    if sidecar["name"] in taken:
        raise webhook.Denied(
            f'the pod already has a container named "{sidecar["name"]}", the name of the '
            f'container of Watcher "{name}"'
        )
    spec.setdefault("containers", []).append(sidecar)
    if watcher.spec.volume is not None:
        volume = watcher.spec.volume.to_dict()
        volumes = spec.setdefault("volumes", [])
        same_name = [v for v in volumes if v.get("name") == volume["name"]]
        if not same_name:
            volumes.append(volume)
        elif same_name[0] != volume:
            raise webhook.Denied(
                f'the pod already has a volume named "{volume["name"]}", the name of the '
                f'volume of Watcher "{name}"'
            )
    secrets = spec.get("imagePullSecrets") or []
    for secret in watcher.spec.image_pull_secrets or []:
        reference = secret.to_dict()
        if reference not in secrets:
            secrets.append(reference)
    if secrets:
        spec["imagePullSecrets"] = secrets
    return desired


@kubeforge.rbac(groups="watch.kubeforge.dev", resources="watchers", verbs=["get"])
@webhook.admission_webhook(
    kind=Pod,
    mutating=True,
    verbs=["create"],
    name="mpod.watch.kubeforge.dev",
    match_conditions=[
        (
            "names-a-watcher",
            f"has(object.metadata.annotations) && '{INJECT}' in object.metadata.annotations",
        )
    ],
)
class SidecarInjector:
    """Adds the container of the Watcher a new pod names to the pod."""

    def __init__(self, client: kubeforge.Client) -> None:
        # Reads go to the API server, not a cache: a Watcher created a moment before the
        # pod must be found.
        self.client = client

    async def handle(self, request: webhook.AdmissionRequest) -> webhook.AdmissionResponse:
        pod = request.object or {}
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        name = annotations.get(INJECT)
        if not name:
            return webhook.AdmissionResponse.allow()
        try:
            watcher = await self.client.get(Watcher, name, namespace=request.namespace)
        except kubeforge.NotFound:
            raise webhook.Denied(
                f'the pod asks for the sidecar of Watcher "{name}" (annotation {INJECT}), '
                f'but there is no Watcher "{name}" in namespace "{request.namespace}"'
            ) from None
        return webhook.AdmissionResponse.patch_to(pod, with_sidecar(pod, watcher))


def setup_pod_webhook(manager: kubeforge.Manager) -> None:
    """Serve the Pod webhooks from the manager's webhook server."""
    manager.webhook_server.register("/mutate--v1-pod", SidecarInjector(manager.api_reader))
