"""The Endpoints and EndpointSlice controllers: where a Service's pods can be reached.

For every Service with a selector (ExternalName services aside), from the selected pods
that have an IP and have not finished:

- core/v1 Endpoints named like the Service, carrying its labels: ready pods under
  `addresses`, the others under `notReadyAddresses` (all under `addresses` with
  `publishNotReadyAddresses`; pods being deleted are left out unless it is set), with the
  Service's ports resolved against each pod (a named targetPort is looked up in the pod's
  container ports), grouped into subsets of pods offering the same ports.
- discovery.k8s.io/v1 EndpointSlices (`<service>-<random>`, owned by the Service, labelled
  `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`), one set per
  IP family, at most 100 endpoints each, with the conditions ready/serving/terminating,
  nodeName and a targetRef to the pod. A Service without endpoints keeps one empty slice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge._api.machinery.access import (
    annotations_of,
    controller_ref,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._api.machinery.selectors import label_set_matches
from kubeforge._client.errors import AlreadyExists, NotFound
from kubeforge._cluster.controllers._children import generate_name_prefix
from kubeforge._cluster.controllers._facts import Facts
from kubeforge._cluster.controllers._podstate import is_pod_ready, is_pod_terminal
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import Funcs
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = [
    "MANAGED_BY",
    "MAX_ENDPOINTS_PER_SLICE",
    "EndpointSliceReconciler",
    "EndpointsReconciler",
    "SliceTracker",
    "desired_slices",
    "desired_subsets",
    "find_port",
    "repack_subsets",
    "setup",
    "setup_endpoints",
    "setup_endpointslices",
]

Obj = dict[str, Any]

SERVICE = "v1/Service"
ENDPOINTS = "v1/Endpoints"
ENDPOINT_SLICE = "discovery.k8s.io/v1/EndpointSlice"
POD = "v1/Pod"

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"
MAX_ENDPOINTS_PER_SLICE = 100
# Endpoints objects are cut at this many addresses (and annotated as truncated).
MAX_ENDPOINTS_ADDRESSES = 1000


# -- services and their pods -------------------------------------------------------------------


def _selector(service: Mapping[str, Any]) -> Mapping[str, str] | None:
    """The Service's pod selector; None when it manages no endpoints."""
    spec = spec_of(service)
    selector = spec.get("selector")
    if spec.get("type") == "ExternalName" or not isinstance(selector, Mapping) or not selector:
        return None
    return selector


def _headless(service: Mapping[str, Any]) -> bool:
    return spec_of(service).get("clusterIP") == "None"


def _families(service: Mapping[str, Any]) -> list[str]:
    families = [str(f) for f in spec_of(service).get("ipFamilies") or ()]
    if families:
        return families
    return ["IPv6" if ":" in str(spec_of(service).get("clusterIP") or "") else "IPv4"]


def _pod_ip(pod: Mapping[str, Any], family: str) -> str | None:
    status = status_of(pod)
    candidates = [str(entry.get("ip") or "") for entry in status.get("podIPs") or ()]
    if not candidates and status.get("podIP"):
        candidates = [str(status["podIP"])]
    for ip in candidates:
        if ip and (":" in ip) == (family == "IPv6"):
            return ip
    return None


def _has_ip(pod: Mapping[str, Any]) -> bool:
    status = status_of(pod)
    return bool(status.get("podIP") or status.get("podIPs"))


def _include(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: not finished, has an IP, not deleting unless asked."""
    if is_pod_terminal(pod) or not _has_ip(pod):
        return False
    return include_terminating or not is_deleting(pod)


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """The pod's port for a service port: a number as is, a name looked up among the
    pod's container ports (sidecar init containers included) with the same protocol."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if target is None:
        return None
    protocol = service_port.get("protocol") or "TCP"
    spec = spec_of(pod)
    containers = list(spec.get("containers") or ())
    containers += [
        c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"
    ]
    for container in containers:
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def _target_ref(pod: Mapping[str, Any]) -> Obj:
    return {
        "kind": "Pod",
        "namespace": namespace_of(pod),
        "name": name_of(pod),
        "uid": uid_of(pod),
    }


def _hostname(pod: Mapping[str, Any], service: Mapping[str, Any]) -> str | None:
    spec = spec_of(pod)
    hostname = spec.get("hostname")
    if (
        hostname
        and spec.get("subdomain") == name_of(service)
        and namespace_of(pod) == namespace_of(service)
    ):
        return str(hostname)
    return None


def _selected_pods(cache_pods: Sequence[Obj], selector: Mapping[str, str]) -> list[Obj]:
    return [pod for pod in cache_pods if label_set_matches(selector, labels_of(pod))]


# -- Endpoints ---------------------------------------------------------------------------------


def _endpoint_port(service_port: Mapping[str, Any], number: int) -> Obj:
    port: Obj = {}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    port["port"] = number
    port["protocol"] = service_port.get("protocol") or "TCP"
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def _port_key(port: Mapping[str, Any] | None) -> tuple[str, int, str, str]:
    if port is None:
        return ("", -1, "", "")
    return (
        str(port.get("name") or ""),
        int(port.get("port") or 0),
        str(port.get("protocol") or ""),
        str(port.get("appProtocol") or ""),
    )


def _address_key(address: Mapping[str, Any]) -> tuple[str, str]:
    return (str(address.get("ip")), str((address.get("targetRef") or {}).get("uid") or ""))


def repack_subsets(entries: Sequence[tuple[Obj, bool, Obj | None]]) -> list[Obj]:
    """Group (address, ready, port) entries into subsets: each subset lists the addresses
    that offer exactly the same ports. Sorted, so equal contents compare equal."""
    addresses: dict[tuple[str, str], Obj] = {}
    ports: dict[tuple[str, int, str, str], Obj | None] = {}
    by_port: dict[tuple[str, int, str, str], dict[tuple[str, str], bool]] = {}
    for address, ready, port in entries:
        akey, pkey = _address_key(address), _port_key(port)
        addresses[akey] = address
        ports[pkey] = port
        by_port.setdefault(pkey, {})[akey] = ready
    groups: dict[tuple[tuple[tuple[str, str], bool], ...], list[tuple[str, int, str, str]]] = {}
    for pkey, members in by_port.items():
        groups.setdefault(tuple(sorted(members.items())), []).append(pkey)
    subsets = []
    for members_key, pkeys in groups.items():
        subset: Obj = {}
        serving = [addresses[a] for a, is_ready in members_key if is_ready]
        not_ready = [addresses[a] for a, is_ready in members_key if not is_ready]
        if serving:
            subset["addresses"] = serving
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        port_list = [ports[p] for p in sorted(pkeys) if ports[p] is not None]
        if port_list:
            subset["ports"] = port_list
        subsets.append(subset)
    subsets.sort(key=_subset_key)
    return subsets


def _subset_key(subset: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        [_address_key(a) for a in subset.get("addresses") or ()],
        [_address_key(a) for a in subset.get("notReadyAddresses") or ()],
        [_port_key(p) for p in subset.get("ports") or ()],
    )


def _truncate(subsets: list[Obj]) -> bool:
    """Cut the subsets to MAX_ENDPOINTS_ADDRESSES addresses (ready ones kept first)."""
    total = sum(
        len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ()) for s in subsets
    )
    if total <= MAX_ENDPOINTS_ADDRESSES:
        return False
    budget = MAX_ENDPOINTS_ADDRESSES
    for field in ("addresses", "notReadyAddresses"):
        for subset in subsets:
            listed = subset.get(field) or []
            keep = listed[: max(budget, 0)]
            budget -= len(keep)
            if keep:
                subset[field] = keep
            else:
                subset.pop(field, None)
    subsets[:] = [s for s in subsets if s.get("addresses") or s.get("notReadyAddresses")]
    return True


def desired_subsets(service: Mapping[str, Any], pods: Sequence[Obj]) -> list[Obj]:
    """The Endpoints subsets of a Service for its selected pods."""
    spec = spec_of(service)
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    family = _families(service)[0]
    service_ports = list(spec.get("ports") or ())
    entries: list[tuple[Obj, bool, Obj | None]] = []
    for pod in pods:
        if not _include(pod, tolerate):
            continue
        ip = _pod_ip(pod, family)
        if ip is None:
            continue
        address: Obj = {"ip": ip}
        hostname = _hostname(pod, service)
        if hostname:
            address["hostname"] = hostname
        node = spec_of(pod).get("nodeName")
        if node:
            address["nodeName"] = node
        address["targetRef"] = _target_ref(pod)
        ready = tolerate or is_pod_ready(pod)
        if not service_ports:
            # Only headless services may have no ports.
            if _headless(service):
                entries.append((address, ready, None))
            continue
        for service_port in service_ports:
            number = find_port(pod, service_port)
            if number is not None:
                entries.append((address, ready, _endpoint_port(service_port, number)))
    return repack_subsets(entries)


def _endpoints_labels(service: Mapping[str, Any]) -> dict[str, str]:
    labels = {k: v for k, v in labels_of(service).items() if k != HEADLESS_LABEL}
    if _headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


class EndpointsReconciler(Reconciler):
    """Keeps each selecting Service's core/v1 Endpoints in step with its pods."""

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(lambda: self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            service: Obj = await self.client.get(SERVICE, request.name, namespace=request.namespace)
        except NotFound:
            await self._delete(request)
            return None
        selector = _selector(service)
        if selector is None:
            return None
        pods = _selected_pods(await self.client.list(POD, namespace=request.namespace), selector)
        subsets = desired_subsets(service, pods)
        truncated = _truncate(subsets)
        labels = _endpoints_labels(service)
        try:
            current: Obj | None = await self.client.get(
                ENDPOINTS, request.name, namespace=request.namespace
            )
        except NotFound:
            current = None
        annotations = dict(annotations_of(current)) if current is not None else {}
        if truncated:
            annotations[OVER_CAPACITY_ANNOTATION] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY_ANNOTATION, None)
        if (
            current is not None
            and (current.get("subsets") or []) == subsets
            and dict(labels_of(current)) == labels
            and dict(annotations_of(current)) == annotations
        ):
            return None
        metadata: Obj = {"name": request.name, "namespace": request.namespace}
        if labels:
            metadata["labels"] = labels
        if annotations:
            metadata["annotations"] = annotations
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
        if subsets:
            body["subsets"] = subsets
        if current is None:
            try:
                await self.client.create(body)
            except AlreadyExists:
                return Result(requeue=True)  # the cache had not seen it yet
        else:
            metadata["resourceVersion"] = meta_of(current).get("resourceVersion")
            for key in ("ownerReferences", "finalizers"):
                if meta_of(current).get(key):
                    metadata[key] = meta_of(current)[key]
            await self.client.update(body)
        return None

    async def _delete(self, request: Request) -> None:
        try:
            await self.client.get(ENDPOINTS, request.name, namespace=request.namespace)
        except NotFound:
            return
        try:
            await self.client.delete(ENDPOINTS, request.name, namespace=request.namespace)
        except NotFound:
            pass


# -- EndpointSlices ----------------------------------------------------------------------------


def _slice_endpoint(pod: Mapping[str, Any], service: Mapping[str, Any], ip: str) -> Obj:
    serving = is_pod_ready(pod)
    terminating = is_deleting(pod)
    # A terminating pod is never "ready" unless the Service publishes unready addresses.
    ready = bool(spec_of(service).get("publishNotReadyAddresses")) or (serving and not terminating)
    endpoint: Obj = {
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
    }
    hostname = _hostname(pod, service)
    if hostname:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = _target_ref(pod)
    node = spec_of(pod).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    return endpoint


def _slice_ports(pod: Mapping[str, Any], service: Mapping[str, Any]) -> list[Obj]:
    ports = []
    for service_port in spec_of(service).get("ports") or ():
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: Obj = {
            "name": service_port.get("name") or "",
            "port": number,
            "protocol": service_port.get("protocol") or "TCP",
        }
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def _endpoint_key(endpoint: Mapping[str, Any]) -> tuple[str, str]:
    return (str((endpoint.get("addresses") or [""])[0]), str(endpoint["targetRef"]["name"]))


def desired_slices(
    service: Mapping[str, Any], pods: Sequence[Obj], family: str
) -> list[tuple[list[Obj] | None, list[Obj]]]:
    """(ports, endpoints) of each slice a Service should have for one address family:
    endpoints grouped by the ports they offer, at most 100 per slice; one empty slice
    (no ports) when there is no endpoint."""
    groups: dict[str, tuple[list[Obj], list[Obj]]] = {}
    for pod in pods:
        if not _include(pod, True):
            continue
        ip = _pod_ip(pod, family)
        if ip is None:
            continue
        ports = _slice_ports(pod, service)
        key = repr([_port_key(p) for p in ports])
        groups.setdefault(key, (ports, []))[1].append(_slice_endpoint(pod, service, ip))
    slices: list[tuple[list[Obj] | None, list[Obj]]] = []
    for key in sorted(groups):
        ports, endpoints = groups[key]
        endpoints.sort(key=_endpoint_key)
        for start in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
            slices.append((ports, endpoints[start : start + MAX_ENDPOINTS_PER_SLICE]))
    return slices or [(None, [])]


def _slice_labels(service: Mapping[str, Any]) -> dict[str, str]:
    reserved = (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)
    labels = {k: v for k, v in labels_of(service).items() if k not in reserved}
    labels[SERVICE_NAME_LABEL] = name_of(service)
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    if _headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


def _slice_matches(
    current: Mapping[str, Any],
    ports: list[Obj] | None,
    endpoints: list[Obj],
    labels: Mapping[str, str],
) -> bool:
    return (
        (current.get("endpoints") or []) == endpoints
        and (current.get("ports") or None) == (ports or None)
        and dict(labels_of(current)) == dict(labels)
    )


class SliceTracker:
    """The slice writes of each Service that the cache may not show yet.

    Slices are created with generated names, so acting on a cache that missed one would
    create a duplicate; a Service is only synced once its last writes are visible (or a
    while has passed, in case an event was lost: the machine's time, since what it waits
    for is a watch event on its way).
    """

    def __init__(self, patience: float = 30.0) -> None:
        self.patience = patience
        # service key -> slice name -> (what was done, resourceVersion before, when)
        self._writes: dict[str, dict[str, tuple[str, str, float]]] = {}

    def wrote(self, key: str, name: str, action: str, previous_version: str = "") -> None:
        self._writes.setdefault(key, {})[name] = (action, previous_version, time.monotonic())

    def caught_up(self, key: str, slices: Sequence[Obj]) -> bool:
        """Whether `slices` (from the cache) show every tracked write of `key`."""
        writes = self._writes.get(key)
        if not writes:
            return True
        by_name = {name_of(s): s for s in slices}
        for name, (action, previous, when) in list(writes.items()):
            seen = by_name.get(name)
            if action == "deleted":
                shown = seen is None
            elif action == "created":
                shown = seen is not None
            else:
                shown = seen is None or meta_of(seen).get("resourceVersion") != previous
            if shown or time.monotonic() - when > self.patience:
                del writes[name]
        if not writes:
            del self._writes[key]
            return True
        return False

    def forget(self, key: str) -> None:
        self._writes.pop(key, None)


class EndpointSliceReconciler(Reconciler):
    """Keeps each selecting Service's EndpointSlices in step with its pods."""

    def __init__(self) -> None:
        self.tracker = SliceTracker()

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(lambda: self._sync(request))

    async def _owned_slices(self, request: Request) -> list[Obj]:
        return [
            s
            for s in await self.client.list(ENDPOINT_SLICE, namespace=request.namespace)
            if labels_of(s).get(SERVICE_NAME_LABEL) == request.name
            and labels_of(s).get(MANAGED_BY_LABEL) == MANAGED_BY
        ]

    async def _sync(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        existing = await self._owned_slices(request)
        if not self.tracker.caught_up(key, existing):
            return Result(requeue=True)
        try:
            service: Obj = await self.client.get(SERVICE, request.name, namespace=request.namespace)
        except NotFound:
            # Garbage collection would remove them too; a cluster without it should not keep
            # them either.
            await self._delete_all(key, existing)
            return None
        selector = _selector(service)
        if selector is None:
            return None
        pods = _selected_pods(await self.client.list(POD, namespace=request.namespace), selector)
        labels = _slice_labels(service)
        stale = [s for s in existing if (controller_ref(s) or {}).get("uid") != uid_of(service)]
        current = [s for s in existing if s not in stale]
        for family in _families(service):
            of_family = [s for s in current if s.get("addressType") == family]
            wanted = desired_slices(service, pods, family)
            await self._converge(key, service, family, of_family, wanted, labels)
        families = set(_families(service))
        stale += [s for s in current if s.get("addressType") not in families]
        await self._delete_all(key, stale)
        return None

    async def _converge(
        self,
        key: str,
        service: Obj,
        family: str,
        existing: list[Obj],
        wanted: list[tuple[list[Obj] | None, list[Obj]]],
        labels: Mapping[str, str],
    ) -> None:
        """Reuse slices already right, rewrite others, create what is missing, delete
        what is left over."""
        unmatched: list[tuple[list[Obj] | None, list[Obj]]] = []
        spare = sorted(existing, key=name_of)
        for ports, endpoints in wanted:
            same = next((s for s in spare if _slice_matches(s, ports, endpoints, labels)), None)
            if same is not None:
                spare.remove(same)
            else:
                unmatched.append((ports, endpoints))
        for ports, endpoints in unmatched:
            body = self._slice_body(service, family, ports, endpoints, labels)
            if spare:
                current = spare.pop(0)
                version = str(meta_of(current).get("resourceVersion") or "")
                body["metadata"]["name"] = name_of(current)
                body["metadata"]["resourceVersion"] = version
                self.tracker.wrote(key, name_of(current), "updated", version)
                await self.client.update(body)
            else:
                body["metadata"]["generateName"] = generate_name_prefix(name_of(service))
                created = await self.client.create(body)
                self.tracker.wrote(key, name_of(created), "created")
        await self._delete_all(key, spare)

    @staticmethod
    def _slice_body(
        service: Obj,
        family: str,
        ports: list[Obj] | None,
        endpoints: list[Obj],
        labels: Mapping[str, str],
    ) -> Obj:
        owner = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": name_of(service),
            "uid": uid_of(service),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        body: Obj = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "namespace": namespace_of(service),
                "labels": dict(labels),
                "ownerReferences": [owner],
            },
            "addressType": family,
            "endpoints": endpoints,
        }
        if ports is not None:
            body["ports"] = ports
        return body

    async def _delete_all(self, key: str, slices: Sequence[Obj]) -> None:
        for item in slices:
            self.tracker.wrote(key, name_of(item), "deleted")
            try:
                await self.client.delete(
                    ENDPOINT_SLICE, name_of(item), namespace=namespace_of(item)
                )
            except NotFound:
                pass


# -- wiring ------------------------------------------------------------------------------------


def _selectors(cache: Cache) -> Facts[tuple[str, Mapping[str, str] | None]]:
    """Each Service's name and pod selector, read once per change of it."""
    return Facts(cache, SERVICE, lambda service: (name_of(service), _selector(service)))


def _services_for_pod(
    selectors: Facts[tuple[str, Mapping[str, str] | None]], pod: Mapping[str, Any]
) -> list[Request]:
    """The Services in the pod's namespace whose selector matches it."""
    namespace = namespace_of(pod)
    out = []
    for name, selector in selectors.in_namespace(namespace):
        if selector is not None and label_set_matches(selector, labels_of(pod)):
            out.append(Request(namespace, name))
    return out


def setup(manager: Manager) -> None:
    """Register the Endpoints and EndpointSlice controllers with `manager`."""
    setup_endpoints(manager)
    setup_endpointslices(manager)


def setup_endpoints(manager: Manager) -> None:
    """Register the Endpoints controller with `manager`."""
    selectors = _selectors(manager.cache)
    deletes_only = Funcs(on_create=lambda _obj: False, on_update=lambda _old, _new: False)
    (
        manager.controller()
        .named("endpoints")
        .for_(SERVICE)
        .watches(POD, lambda pod: _services_for_pod(selectors, pod))
        .watches(
            ENDPOINTS,
            lambda ep: [Request(namespace_of(ep), name_of(ep))],
            predicates=[deletes_only],
        )
        .with_options(max_concurrent_reconciles=5)
        .complete(EndpointsReconciler())
    )


def setup_endpointslices(manager: Manager) -> None:
    """Register the EndpointSlice controller with `manager`."""
    selectors = _selectors(manager.cache)
    (
        manager.controller()
        .named("endpointslice")
        .for_(SERVICE)
        .owns(ENDPOINT_SLICE)
        .watches(POD, lambda pod: _services_for_pod(selectors, pod))
        .with_options(max_concurrent_reconciles=5)
        .complete(EndpointSliceReconciler())
    )
