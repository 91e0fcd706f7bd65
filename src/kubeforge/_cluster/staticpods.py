"""The control plane's static pods, and the mirror pods the kubelet keeps of them.

The first node of a development cluster is its control-plane node, as a kind cluster's is.
The API server, the controllers and the scheduler run inside the kubeforge process; that
node's kubelet shows them as kubeadm's static pods show on kind, each as a mirror pod in
`kube-system`: `kube-apiserver-<node>`, `kube-controller-manager-<node>` and
`kube-scheduler-<node>` (only the components that run: no scheduler pod when the scheduler
is turned off). There is no etcd pod (the API server keeps its state itself), no DNS and no
kube-proxy pod: nothing here stands for a program that does not run.

`control_plane_pods()` writes the manifests as kubeadm does
(cmd/kubeadm/app/phases/controlplane/manifests.go, staticpod utils): labels `component` and
`tier: control-plane`, host network, priority class `system-node-critical`, the components'
CPU requests. `MirrorPods` is the kubelet's part (pkg/kubelet/config/common.go
applyDefaults, pkg/kubelet/pod/mirror_client.go): the pod named `<name>-<node>`, its UID a
hash of the manifest (kept in `kubernetes.io/config.hash`), `kubernetes.io/config.source:
file`, a toleration of every NoExecute taint, and for the mirror pod the annotation
`kubernetes.io/config.mirror` and the Node as its controlling owner. A mirror pod that is
deleted (or being deleted) is removed at once and made again a moment later
(REMAKE_SECONDS), since the static pod keeps running, as the kubelet's syncPod does; a
mirror pod of no static pod of the node is deleted (HandlePodCleanups). Status is the
running component's: Running and Ready since it started. exec, attach and port-forward are
refused: the component is part of the kubeforge process, no container with commands to run.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

import orjson

from kubeforge import clock
from kubeforge._api.machinery.access import is_deleting
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._client.client import Client
from kubeforge._client.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubeforge._cluster.componentlogs import (
    KUBE_APISERVER,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    NAMESPACE,
)
from kubeforge._version import __version__

__all__ = [
    "CONFIG_HASH",
    "CONFIG_MIRROR",
    "CONFIG_SOURCE",
    "CONTROL_PLANE_LABELS",
    "MirrorPods",
    "control_plane_pods",
    "is_mirror_pod",
]

log = logging.getLogger("kubeforge.kubelet")

# pkg/kubelet/types/pod_update.go's annotation keys.
CONFIG_MIRROR = "kubernetes.io/config.mirror"
CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_SEEN = "kubernetes.io/config.seen"
# The labels kubeadm's mark-control-plane phase gives the node (kind keeps them).
CONTROL_PLANE_LABELS = {
    "node-role.kubernetes.io/control-plane": "",
    "node.kubernetes.io/exclude-from-external-load-balancers": "",
}
# How long after its mirror pod is gone the kubelet makes it again: long enough for a
# client waiting for the deletion (`kubectl delete` does) to see the old pod go first.
REMAKE_SECONDS = 1.0
# The one program the components are: what their containers' image names.
IMAGE = f"kubeforge:{__version__}"
# kubeadm's CPU requests for each component.
_CPU = {KUBE_APISERVER: "250m", KUBE_CONTROLLER_MANAGER: "200m", KUBE_SCHEDULER: "100m"}
_KUBELET_CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """Whether `pod` is a mirror pod (pkg/kubelet/pod IsMirrorPod: it has the annotation)."""
    return CONFIG_MIRROR in ((pod.get("metadata") or {}).get("annotations") or {})


def control_plane_pods(
    components: Mapping[str, Sequence[str]], *, advertise: str
) -> list[dict[str, Any]]:
    """The static pod manifests of the components that run (component -> its command line),
    as kubeadm writes them; `advertise` is the API server's `host:port`."""
    pods = []
    for component, command in components.items():
        annotations = {}
        if component == KUBE_APISERVER:
            annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = (
                advertise
            )
        container = {
            "name": component,
            "image": IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "command": list(command),
            "resources": {"requests": {"cpu": _CPU[component]}},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": component,
                    "namespace": NAMESPACE,
                    "labels": {"component": component, "tier": "control-plane"},
                    "annotations": annotations,
                },
                "spec": {
                    "containers": [container],
                    "hostNetwork": True,
                    "priorityClassName": "system-node-critical",
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                },
            }
        )
    return pods


class Node(Protocol):
    """What the mirror pods need of their kubelet."""

    @property
    def client(self) -> Client: ...
    @property
    def name(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def node_uid(self) -> str: ...
    async def online(self) -> None: ...
    def spawn(self, work: Awaitable[None]) -> None: ...


class _StaticPod:
    __slots__ = ("container", "pod", "started", "uid")

    def __init__(self, pod: dict[str, Any], uid: str, started: str) -> None:
        self.pod = pod
        self.uid = uid
        self.started = started
        self.container = pod["spec"]["containers"][0]["name"]


def _static_pod(manifest: Mapping[str, Any], node: str, seen: str) -> _StaticPod:
    """The kubelet's defaults for a pod from a manifest file (config/common.go
    applyDefaults): a UID hashed from the manifest and the node, the name `<name>-<node>`,
    bound to the node, and a toleration of NoExecute taints so node problems do not evict it."""
    content = orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS)
    uid = hashlib.md5(content + f"host:{node}file:{manifest['metadata']['name']}".encode())
    digest = uid.hexdigest()
    pod = orjson.loads(content)
    meta = pod["metadata"]
    meta["name"] = f"{meta['name']}-{node.lower()}"
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        CONFIG_HASH: digest,
        CONFIG_SEEN: seen,
        CONFIG_SOURCE: "file",
    }
    spec = pod["spec"]
    spec["nodeName"] = node
    every_no_execute = {"operator": "Exists", "effect": "NoExecute"}
    spec["tolerations"] = [*(spec.get("tolerations") or []), every_no_execute]
    return _StaticPod(pod, digest, seen)


class MirrorPods:
    """The mirror pods of a node's static pods: made, kept and made again when deleted."""

    def __init__(self, node: Node, manifests: Sequence[Mapping[str, Any]]) -> None:
        self.node = node
        seen = now_rfc3339()
        self._static = {
            p.pod["metadata"]["name"]: p
            for p in (_static_pod(m, node.name, seen) for m in manifests)
        }
        self._mirrors: dict[str, str] = {}  # mirror pod uid -> static pod name
        self._locks = {name: asyncio.Lock() for name in self._static}

    def names(self) -> list[str]:
        return list(self._static)

    def static_pod_of(self, uid: str) -> str | None:
        """The static pod a mirror pod (by its uid) stands for, if any."""
        return self._mirrors.get(uid)

    async def sync(self) -> None:
        """Make every mirror pod that is missing (and write each one's status)."""
        await asyncio.gather(*(self._ensure(name) for name in self._static))

    def observe(self, pod: Mapping[str, Any]) -> None:
        """A mirror pod bound to the node was seen (added or changed)."""
        meta = pod["metadata"]
        static = self._static.get(str(meta.get("name") or ""))
        mirrored = (meta.get("annotations") or {}).get(CONFIG_MIRROR)
        if static is None or mirrored != static.uid or is_deleting(pod):
            # An orphan, an old manifest's, or deleted by someone: gone at once (and made
            # again when it stands for a static pod).
            self.node.spawn(self._replace(pod, static))
            return
        self._mirrors[str(meta.get("uid") or "")] = static.pod["metadata"]["name"]

    def deleted(self, pod: Mapping[str, Any]) -> None:
        """A mirror pod bound to the node is gone: the static pod still runs, so make it again."""
        meta = pod["metadata"]
        self._mirrors.pop(str(meta.get("uid") or ""), None)
        name = str(meta.get("name") or "")
        if name in self._static:
            self.node.spawn(self._ensure(name, after=REMAKE_SECONDS))

    def republish(self) -> None:
        """Write every mirror pod's status again (the node lifecycle controller may have marked
        them not ready while the node was down)."""
        for name in self._static:
            self.node.spawn(self._write_status(name))

    async def _replace(self, pod: Mapping[str, Any], static: _StaticPod | None) -> None:
        meta = pod["metadata"]
        name = str(meta.get("name") or "")
        await self.node.online()
        # As the kubelet's DeleteMirrorPod: at once, and only the pod it saw.
        try:
            await self.node.client.delete(
                "v1/Pod",
                name,
                namespace=str(meta.get("namespace") or ""),
                grace_period_seconds=0,
                preconditions={"uid": meta.get("uid")},
            )
        except (NotFound, Conflict):
            pass
        if static is not None:
            await self._ensure(name, after=REMAKE_SECONDS)

    async def _ensure(self, name: str, *, after: float = 0.0) -> None:
        static = self._static[name]
        if after:
            await clock.sleep(after)
        async with self._locks[name]:
            await self.node.online()
            try:
                mirror = await self._create(static)
            except AlreadyExists:
                try:
                    mirror = await self.node.client.get("v1/Pod", name, namespace=NAMESPACE)
                except NotFound:
                    return  # deleted meanwhile: its delete event makes it again
                annotations = mirror["metadata"].get("annotations") or {}
                if annotations.get(CONFIG_MIRROR) != static.uid or is_deleting(mirror):
                    return  # observe() replaces it
            except ApiError as exc:
                log.warning("static pod %s/%s: mirror pod not created: %s", NAMESPACE, name, exc)
                return
            self._mirrors[str(mirror["metadata"].get("uid") or "")] = name
        await self._write_status(name)

    async def _create(self, static: _StaticPod) -> dict[str, Any]:
        pod = orjson.loads(orjson.dumps(static.pod))
        pod["metadata"]["annotations"][CONFIG_MIRROR] = static.uid
        # Since MirrorPodNodeRestriction, a mirror pod is owned by its node.
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": self.node.name,
                "uid": self.node.node_uid,
                "controller": True,
            }
        ]
        return await self.node.client.create(pod)

    async def _write_status(self, name: str) -> None:
        static = self._static[name]
        await self.node.online()
        try:
            await self.node.client.patch_status(
                "v1/Pod",
                name,
                {"status": self._status(static)},
                namespace=NAMESPACE,
                field_manager="kubelet",
            )
        except NotFound:
            pass  # deleted meanwhile: made again on its delete event
        except ApiError as exc:
            log.warning("static pod %s/%s: status not written: %s", NAMESPACE, name, exc)

    def _status(self, static: _StaticPod) -> dict[str, Any]:
        """A running, ready component since it started (its pod shares the node's network)."""
        since = static.started
        address = self.node.address
        container_id = hashlib.sha256(f"{static.uid}/{static.container}".encode()).hexdigest()
        return {
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": since}
                for kind in _KUBELET_CONDITIONS
            ],
            "hostIP": address,
            "hostIPs": [{"ip": address}],
            "podIP": address,
            "podIPs": [{"ip": address}],
            "startTime": since,
            "containerStatuses": [
                {
                    "name": static.container,
                    "image": IMAGE,
                    "imageID": "",
                    "containerID": f"kubeforge://{container_id}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": since}},
                    "lastState": {},
                }
            ],
        }
