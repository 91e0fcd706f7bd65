"""The pods a Customcluster asks for: their names, their template, and which ones to keep.

Everything here is pure (no I/O), so the sync handler reads as: list, plan, act.

Pod names are `<customcluster>-<message hash>-<index>`. Because the name is decided by the
spec, a sync that runs on a cache which has not yet seen the pods it created a moment ago
cannot create duplicates (the API server answers AlreadyExists), and a new message means new
names, so every pod is replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kubeforge
from kubeforge.models import Container, EnvVar, ObjectMeta, Pod, PodSpec

from api.v1alpha1 import Customcluster

LABEL = "controller"
"""The label that ties a pod to its Customcluster: `controller=<name>`."""

GROUP = "samplecontroller.kubeforge.dev"
KIND = "Customcluster"
IMAGE = "busybox"
# The message travels as an environment variable, never pasted into the script, so quotes,
# `$` or `;` in it are printed as they are instead of being run by the shell.
SCRIPT = 'printf "%s\\n" "$MESSAGE"; sleep 3600'
FINISHED = ("Succeeded", "Failed")
# The pods hold no state; a short grace period lets a new message take effect quickly.
GRACE_SECONDS = 2


def message_hash(message: str) -> str:
    """Eight hex digits naming a message in pod names."""
    return hashlib.sha256(message.encode()).hexdigest()[:8]


def pod_prefix(cc: Customcluster) -> str:
    """`<name>-<message hash>`: what every current pod's name starts with."""
    return f"{cc.metadata.name}-{message_hash(cc.spec.message)}"


def desired_names(cc: Customcluster) -> list[str]:
    """The names of the `count` pods the Customcluster asks for, in index order."""
    prefix = pod_prefix(cc)
    return [f"{prefix}-{index}" for index in range(cc.spec.count)]


def new_pod(cc: Customcluster, name: str) -> Pod:
    """A pod that prints the message and stays Running, labelled for and controlled by `cc`
    (so deleting `cc` garbage-collects it)."""
    pod = Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=cc.metadata.namespace,
            labels={LABEL: cc.metadata.name or ""},
        ),
        spec=PodSpec(
            containers=[
                Container(
                    name="echo",
                    image=IMAGE,
                    command=["sh", "-c", SCRIPT],
                    env=[EnvVar(name="MESSAGE", value=cc.spec.message)],
                )
            ],
            termination_grace_period_seconds=GRACE_SECONDS,
        ),
    )
    kubeforge.set_controller_reference(cc, pod)
    return pod


def customcluster_keys(pod: Mapping[str, Any]) -> list[str]:
    """The `namespace/name` keys of the Customclusters a pod concerns: the one its label
    names and the one that controls it (the same one, unless someone relabelled the pod).

    This is the pod lister's index, and what pod events are mapped through."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    keys = set()
    label = (meta.get("labels") or {}).get(LABEL)
    if label:
        keys.add(f"{namespace}/{label}")
    for ref in meta.get("ownerReferences") or ():
        group = str(ref.get("apiVersion", "")).partition("/")[0]
        if ref.get("controller") and ref.get("kind") == KIND and group == GROUP:
            keys.add(f"{namespace}/{ref.get('name')}")
    return sorted(keys)


def is_controlled_by(pod: Pod, cc: Customcluster) -> bool:
    """True when `cc` (this very object, by UID) is the pod's controller."""
    return any(
        ref.controller and ref.uid == cc.metadata.uid for ref in pod.metadata.owner_references or ()
    )


@dataclass
class Plan:
    """What one sync must do to bring the pods in line with the spec."""

    create: list[str] = field(default_factory=list)
    """Names of missing pods."""

    delete: list[tuple[Pod, str]] = field(default_factory=list)
    """Pods to remove, each with the reason: stray, unlabelled, outdated, surplus, finished."""

    running: int = 0
    """Current pods (right name, owned, labelled) that are Running."""


def plan(cc: Customcluster, pods: Iterable[Pod]) -> Plan:
    """Compare the pods found for `cc` (labelled for it or controlled by it) with its spec."""
    wanted = desired_names(cc)
    prefix = pod_prefix(cc) + "-"
    result = Plan()
    present: set[str] = set()
    for pod in pods:
        name = pod.metadata.name or ""
        present.add(name)
        if pod.metadata.deletion_timestamp is not None:
            continue  # already going; its name is reused once it is gone
        labelled = (pod.metadata.labels or {}).get(LABEL) == cc.metadata.name
        owned = is_controlled_by(pod, cc)
        if labelled and not owned:
            result.delete.append((pod, "stray"))
        elif owned and not labelled:
            result.delete.append((pod, "unlabelled"))
        elif not owned:
            continue  # only a non-controller owner reference: not ours to judge
        elif name in wanted:
            phase = pod.status.phase if pod.status is not None else None
            if phase in FINISHED:
                result.delete.append((pod, "finished"))  # replaced once it is gone
            elif phase == "Running":
                result.running += 1
        else:
            result.delete.append((pod, "surplus" if name.startswith(prefix) else "outdated"))
    result.create = [name for name in wanted if name not in present]
    return result
