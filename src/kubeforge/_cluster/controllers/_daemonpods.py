"""A DaemonSet's pods and the nodes they belong on, as pkg/controller/daemon/util and
daemon_controller.go (NodeShouldRunDaemonPod) define them.

A node should run the daemon pod when it matches the template's `nodeName`, node selector
and required node affinity, and has no NoSchedule or NoExecute taint the pod does not
tolerate; a pod already there may stay unless a NoExecute taint is untolerated. Daemon pods
tolerate what a node under pressure, unschedulable or unreachable is tainted with (and,
with `hostNetwork`, an unavailable network), carry the `controller-revision-hash` and
`pod-template-generation` labels, and are pinned to their node by a required node affinity
on `metadata.name`, which the scheduler honours.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge._api.machinery.access import annotations_of, labels_of, meta_of, name_of, spec_of
from kubeforge._cluster.controllers.scheduler import matches_node_affinity, tolerates

__all__ = [
    "GENERATION_LABEL",
    "HASH_LABEL",
    "TEMPLATE_GENERATION",
    "daemon_pod_template",
    "is_pod_updated",
    "node_should_run",
    "pin_to_node",
    "target_node",
    "template_generation",
]

Obj = dict[str, Any]

# apps.DefaultDaemonSetUniqueLabelKey and extensions.DaemonSetTemplateGenerationKey.
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
# apps.DeprecatedTemplateGeneration: the API server keeps the template generation here.
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
NAME_FIELD = "metadata.name"


def _toleration(key: str, effect: str) -> Obj:
    return {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect}


# AddOrUpdateDaemonPodTolerations, in its order.
_DAEMON_TOLERATIONS = (
    _toleration("not-ready", "NoExecute"),
    _toleration("unreachable", "NoExecute"),
    _toleration("disk-pressure", "NoSchedule"),
    _toleration("memory-pressure", "NoSchedule"),
    _toleration("pid-pressure", "NoSchedule"),
    _toleration("unschedulable", "NoSchedule"),
)
_HOST_NETWORK_TOLERATION = _toleration("network-unavailable", "NoSchedule")


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def _add_toleration(spec: Obj, toleration: Obj) -> None:
    """Add or replace a toleration (AddOrUpdateTolerationInPodSpec): one that matches it in
    key, operator, value and effect gives way to it (its tolerationSeconds with it)."""
    current = list(spec.get("tolerations") or ())
    replaced = False
    result = []
    for existing in current:
        if isinstance(existing, Mapping) and _same_toleration(existing, toleration):
            result.append(dict(toleration))
            replaced = True
        else:
            result.append(existing)
    if not replaced:
        result.append(dict(toleration))
    spec["tolerations"] = result


def add_daemon_tolerations(spec: Obj) -> None:
    """The tolerations every daemon pod has."""
    for toleration in _DAEMON_TOLERATIONS:
        _add_toleration(spec, toleration)
    if spec.get("hostNetwork"):
        _add_toleration(spec, _HOST_NETWORK_TOLERATION)


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """The DaemonSet's template generation (None when it has none or it does not parse)."""
    try:
        return int(annotations_of(ds)[TEMPLATE_GENERATION])
    except (KeyError, ValueError):
        return None


def daemon_pod_template(ds: Mapping[str, Any], hash_value: str) -> Obj:
    """The template daemon pods are made from (CreatePodTemplate)."""
    template = copy.deepcopy(dict(spec_of(ds).get("template") or {}))
    spec = template.setdefault("spec", {})
    add_daemon_tolerations(spec)
    meta = template.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[GENERATION_LABEL] = str(generation)
    if hash_value:
        labels[HASH_LABEL] = hash_value
    meta["labels"] = labels
    return template


def pin_to_node(spec: Mapping[str, Any], node_name: str) -> Obj:
    """A copy of a pod spec that requires the node by name, replacing the required node
    affinity's terms (ReplaceDaemonSetPodNodeNameNodeAffinity)."""
    term = {"matchFields": [{"key": NAME_FIELD, "operator": "In", "values": [node_name]}]}
    spec = dict(spec)
    affinity = spec["affinity"] = copy.deepcopy(spec.get("affinity"))
    if not isinstance(affinity, dict):
        affinity = spec["affinity"] = {}
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, dict):
        node_affinity = affinity["nodeAffinity"] = {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        required = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {}
    required["nodeSelectorTerms"] = [term]
    return spec


def target_node(pod: Mapping[str, Any]) -> str | None:
    """The node a daemon pod is for: its `nodeName`, or the one its affinity pins it to."""
    spec = spec_of(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for field in (term or {}).get("matchFields") or ():
            if field.get("key") == NAME_FIELD and field.get("operator") == "In":
                values = field.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def _untolerated(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]], effects: set[str]
) -> bool:
    return any(t.get("effect") in effects and not tolerates(tolerations, t) for t in taints)


def node_should_run(node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
    """(should run, should continue running) the daemon pod on `node`
    (NodeShouldRunDaemonPod): a new pod is made only where it fits; a running one stays
    unless the node's template name, selector or affinity no longer match or a NoExecute
    taint is untolerated."""
    template_spec = dict(spec_of(spec_of(ds).get("template")) or {})
    wanted_node = template_spec.get("nodeName")
    if wanted_node and wanted_node != name_of(node):
        return False, False
    spec = copy.copy(template_spec)
    add_daemon_tolerations(spec)
    pod = {"metadata": dict(meta_of(spec_of(ds).get("template"))), "spec": spec}
    if not matches_node_affinity(pod, node):
        return False, False
    taints = [t for t in spec_of(node).get("taints") or () if isinstance(t, Mapping)]
    tolerations = spec.get("tolerations") or []
    if _untolerated(taints, tolerations, {"NoSchedule", "NoExecute"}):
        return False, not _untolerated(taints, tolerations, {"NoExecute"})
    return True, True


def is_pod_updated(pod: Mapping[str, Any], hash_value: str) -> bool:
    """Whether a pod is of the current revision, by its hash label. (IsPodUpdated also
    compares the template generation label, but with the printout of a pointer, which
    never equals it: only the hash decides.)"""
    return bool(hash_value) and labels_of(pod).get(HASH_LABEL) == hash_value
