"""New children of a controller: the prefix their generated names start with, and pods made
from a pod template and controlled by their owner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge._api.machinery.access import meta_of, namespace_of
from kubeforge._runtime.ownership import set_controller_reference

__all__ = ["generate_name_prefix", "pod_from_template"]

Obj = dict[str, Any]


def generate_name_prefix(name: str) -> str:
    """`<name>-`, as pods and slices of a controller are named (shortened to stay valid)."""
    prefix = f"{name}-"
    # Generated names add five characters and must stay within 253 (63 for pods' hostnames).
    return prefix if len(prefix) <= 58 else prefix[:57] + "-"


def pod_from_template(
    template: Mapping[str, Any],
    owner: Mapping[str, Any],
    *,
    generate_name: str = "",
    name: str = "",
    finalizers: Sequence[str] = (),
) -> Obj:
    """A new pod from a pod template, controlled by `owner` (controller.GetPodFromTemplate):
    named `name`, or by the server after `generate_name`."""
    template_meta = meta_of(template)
    metadata: Obj = ({"name": name} if name else {"generateName": generate_name}) | {
        "namespace": namespace_of(owner)
    }
    for key in ("labels", "annotations"):
        value = template_meta.get(key)
        if value:
            metadata[key] = dict(value)
    all_finalizers = list(template_meta.get("finalizers") or ())
    for finalizer in finalizers:
        if finalizer not in all_finalizers:
            all_finalizers.append(finalizer)
    if all_finalizers:
        metadata["finalizers"] = all_finalizers
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}
    pod["spec"] = template.get("spec") or {}
    set_controller_reference(owner, pod)
    return pod
