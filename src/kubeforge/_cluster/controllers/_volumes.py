"""What the volume controllers and the scheduler share about claims and volumes: the
annotations of the binding protocol, the kinds, which pods use which claim, and how a volume
is matched to a claim (FindMatchingVolume and friends in
staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go).

Objects are the plain dicts the cache hands out; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from kubeforge._api.machinery.access import (
    annotations_of,
    as_dict,
    as_list,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._apiserver.admission.volumes import claim_class
from kubeforge._client.errors import NotFound
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._nodeaffinity import node_selector_matches
from kubeforge._runtime.manager import Manager

__all__ = [
    "BETA_STORAGE_PROVISIONER",
    "BIND_COMPLETED",
    "BOUND_BY_CONTROLLER",
    "CLAIM_INDEX",
    "NO_PROVISIONER",
    "POD",
    "PROVISIONED_BY",
    "PV",
    "PVC",
    "SELECTED_NODE",
    "STORAGE_CLASS",
    "STORAGE_PROVISIONER",
    "access_modes_fit",
    "capacity_of",
    "claim_class",
    "claim_key",
    "claim_reference",
    "claimed_by",
    "find_matching_volume",
    "index_pods_by_claim",
    "is_bound_to",
    "is_fully_bound",
    "pod_claim_names",
    "pods_using",
    "read",
    "storage_request",
    "volume_fits_node",
]

Obj = dict[str, Any]

PVC = "v1/PersistentVolumeClaim"
PV = "v1/PersistentVolume"
POD = "v1/Pod"
STORAGE_CLASS = "storage.k8s.io/v1/StorageClass"

# The binding protocol between the binder, the scheduler and provisioners.
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
# A class with this provisioner has only volumes an administrator made.
NO_PROVISIONER = "kubernetes.io/no-provisioner"

# Cache index of pods by the claims they use: `<namespace>/<claim>`.
CLAIM_INDEX = "kubeforge.dev/claims"


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The claims a pod's `persistentVolumeClaim` volumes name, in order."""
    names = []
    for volume in as_list(spec_of(pod).get("volumes")):
        source = as_dict(as_dict(volume).get("persistentVolumeClaim"))
        if source.get("claimName"):
            names.append(str(source["claimName"]))
    return names


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _pod_claim_keys(pod: Mapping[str, Any]) -> Iterable[str]:
    namespace = namespace_of(pod)
    return [claim_key(namespace, name) for name in pod_claim_names(pod)]


def index_pods_by_claim(manager: Manager) -> None:
    """Index cached pods by the claims they use (CLAIM_INDEX)."""
    try:
        manager.cache.index_field(POD, CLAIM_INDEX, _pod_claim_keys)
    except ValueError:
        pass  # another controller of this manager registered it


def pods_using(manager: Manager, namespace: str, claim: str) -> list[Obj]:
    """The cached pods whose volumes name the claim."""
    store = manager.cache.informer_for(POD).store
    pods = []
    for key in store.by_index(CLAIM_INDEX, claim_key(namespace, claim)):
        pod = store.get(key)
        if pod is not None:
            pods.append(pod)
    return pods


# -- reading claims and volumes ------------------------------------------------------------


async def read(client: Reader, kind: str, name: str, namespace: str | None = None) -> Obj | None:
    """An object from the cache, or None when there is none (or no name to look for)."""
    if not name:
        return None
    try:
        found: Obj = await client.get(kind, name, namespace=namespace)
    except NotFound:
        return None
    return found


def storage_request(claim: Mapping[str, Any]) -> Decimal:
    """The storage a claim asks for (0 when it names none)."""
    requests = as_dict(as_dict(spec_of(claim).get("resources")).get("requests"))
    return decode_quantity(requests.get("storage")) or Decimal(0)


def capacity_of(volume: Mapping[str, Any]) -> Decimal:
    """A volume's storage capacity (0 when it has none)."""
    return decode_quantity(as_dict(spec_of(volume).get("capacity")).get("storage")) or Decimal(0)


def claim_reference(claim: Mapping[str, Any]) -> Obj:
    """The ObjectReference a volume's claimRef holds for `claim`."""
    meta = meta_of(claim)
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": namespace_of(claim),
        "name": name_of(claim),
        "uid": uid_of(claim),
        "apiVersion": "v1",
        "resourceVersion": str(meta.get("resourceVersion") or ""),
    }


def claimed_by(volume: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of the claim a volume's claimRef names, or None."""
    ref = spec_of(volume).get("claimRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    return str(ref.get("namespace") or ""), str(ref["name"]), str(ref.get("uid") or "")


def is_bound_to(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether the volume is bound or pre-bound to the claim: its claimRef names the claim,
    and its uid when it has one (IsVolumeBoundToClaim)."""
    ref = claimed_by(volume)
    if ref is None:
        return False
    namespace, name, uid = ref
    if namespace != namespace_of(claim) or name != name_of(claim):
        return False
    return not uid or uid == uid_of(claim)


def is_fully_bound(claim: Mapping[str, Any]) -> bool:
    """The binder has finished with the claim: it names its volume and says so."""
    return bool(spec_of(claim).get("volumeName")) and BIND_COMPLETED in annotations_of(claim)


def access_modes_fit(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """The volume offers every access mode the claim asks for (CheckAccessModes)."""
    offered = set(as_list(spec_of(volume).get("accessModes")))
    return all(mode in offered for mode in as_list(spec_of(claim).get("accessModes")))


def _volume_mode(obj: Mapping[str, Any]) -> str:
    return str(spec_of(obj).get("volumeMode") or "Filesystem")


def volume_fits_node(volume: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The volume's required node affinity admits the node (CheckNodeAffinity)."""
    required = as_dict(spec_of(volume).get("nodeAffinity")).get("required")
    if not isinstance(required, Mapping):
        return True
    return node_selector_matches(required, node)


def find_matching_volume(
    claim: Mapping[str, Any],
    volumes: Sequence[Mapping[str, Any]],
    *,
    node: Mapping[str, Any] | None = None,
    excluded: frozenset[str] | set[str] = frozenset(),
    delay_binding: bool = False,
) -> Mapping[str, Any] | None:
    """The volume to bind the claim to: one already (pre-)bound to it, else the smallest
    Available one of its class that is big enough and offers its access modes, matches its
    selector and volume mode (and fits `node`, for the scheduler). With `delay_binding`
    (the binder, for a WaitForFirstConsumer claim) only a pre-bound volume is returned:
    the scheduler chooses the others."""
    requested = storage_request(claim)
    wanted_class = claim_class(claim)
    selector = spec_of(claim).get("selector")
    best: Mapping[str, Any] | None = None
    best_size = Decimal(0)
    for volume in volumes:
        if name_of(volume) in excluded:
            continue
        if claimed_by(volume) is not None and not is_bound_to(volume, claim):
            continue
        size = capacity_of(volume)
        if size < requested or _volume_mode(volume) != _volume_mode(claim):
            continue
        if is_deleting(volume):
            continue
        fits = node is None or volume_fits_node(volume, node)
        if is_bound_to(volume, claim):
            return volume if fits else None
        if node is None and delay_binding:
            continue
        if status_of(volume).get("phase") != "Available":
            continue
        if selector is not None and not label_selector_matches(selector, labels_of(volume)):
            continue
        if str(spec_of(volume).get("storageClassName") or "") != wanted_class:
            continue
        if not fits or not access_modes_fit(claim, volume):
            continue
        if best is None or size < best_size:
            best, best_size = volume, size
    return best
