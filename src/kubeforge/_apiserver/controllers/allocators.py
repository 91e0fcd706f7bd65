"""Cluster IPs and node ports for Services, and the `kubernetes` Service itself.

A real API server assigns every Service (except ExternalName and headless ones) a virtual IP
from the service CIDR, and every port of a NodePort or LoadBalancer Service a node port, as
part of the write. Addresses a client asks for are honoured when free and in range. What is
in use is counted from the stored Services (kept current by an observer), so allocations
follow commits: a failed or dry-run write holds nothing, a deletion frees what it held.
"""

from __future__ import annotations

import ipaddress
import logging
import random
from collections.abc import Container
from typing import Any

from kubeforge._api.machinery.access import as_int
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import go_string_slice
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["DEFAULT_SERVICE_CIDR", "NODE_PORT_RANGE", "ServiceAllocators", "advertised_address"]

log = logging.getLogger("kubeforge.apiserver.allocators")

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
NODE_PORT_RANGE = (30000, 32767)

_SERVICES = GroupResource("", "services")
_NODE_PORT_TYPES = ("NodePort", "LoadBalancer")
_IP_FIELDS = ("clusterIP", "clusterIPs")
# Random probes before a linear scan: cheap while a range is sparsely used.
_PROBES = 32
# Ranges larger than this (IPv6) are used only up to this many addresses.
_MAX_RANGE = 1 << 20
_MANAGER = "kube-apiserver"


def _band_offset(size: int, low: int, high: int, step: int) -> int:
    """Size of the low band kept for clients that pick their own value (upstream's
    static sub-range): dynamic allocation prefers the values above it."""
    if size < low:
        return 0
    return max(low, min(high, size // step))


def _pick(lo: int, hi: int, offset: int, used: Container[int], rnd: random.Random) -> int | None:
    """A free value in [lo, hi], preferring the band above `lo + offset`."""
    for band_lo, band_hi in ((lo + offset, hi), (lo, lo + offset - 1)):
        if band_lo > band_hi:
            continue
        size = band_hi - band_lo + 1
        for _ in range(min(size, _PROBES)):
            candidate = band_lo + rnd.randrange(size)
            if candidate not in used:
                return candidate
        start = rnd.randrange(size)
        for step in range(size):
            candidate = band_lo + (start + step) % size
            if candidate not in used:
                return candidate
    return None


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _node_ports(spec: dict[str, Any]) -> list[int]:
    return [n for n in (as_int(p.get("nodePort"), 0) for p in _ports(spec)) if n]


def _invalid(name: str, error: FieldError) -> StatusError:
    return StatusError.invalid("", "Service", name, [error])


class ServiceAllocators:
    """Allocates Services' cluster IPs and node ports (a mutator of the write pipeline and
    a commit observer: the server adds `mutate` and `observe`)."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        codec: Codec,
        writer: Writer,
        service_cidr: str = DEFAULT_SERVICE_CIDR,
        node_ports: tuple[int, int] = NODE_PORT_RANGE,
    ) -> None:
        self.store = store
        self.registry = registry
        self.codec = codec
        self.writer = writer
        self.network = ipaddress.ip_network(service_cidr, strict=False)
        self.cidr = str(self.network)
        base = int(self.network.network_address)
        last = int(self.network.broadcast_address)
        # The network address is never handed out, nor is an IPv4 broadcast address.
        self._ip_lo = base + 1
        self._ip_hi = min(last - 1 if self.network.version == 4 else last, base + _MAX_RANGE)
        self._ip_offset = _band_offset(self._ip_hi - self._ip_lo + 1, 16, 256, 16)
        self.node_ports = node_ports
        lo, hi = node_ports
        self._port_offset = _band_offset(hi - lo + 1, 16, 128, 32)
        # In-use counts; a value held twice (e.g. by a store written without allocation)
        # stays in use until both holders let go.
        self._ips: dict[int, int] = {}
        self._ports: dict[int, int] = {}
        self._random = random.Random()
        for stored in store.current(_SERVICES)[0]:
            self._hold(stored.obj, 1)

    @property
    def first_ip(self) -> str:
        """The first address of the service CIDR (the `kubernetes` Service's)."""
        return str(ipaddress.ip_address(self._ip_lo))

    # bookkeeping ------------------------------------------------------------------------

    def _parse_ip(self, text: Any) -> int | None:
        if not isinstance(text, str) or not text or text == "None":
            return None
        try:
            return int(ipaddress.ip_address(text))
        except ValueError:
            return None

    def _hold(self, obj: dict[str, Any], delta: int) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("type") != "ExternalName":
            ips = spec.get("clusterIPs")
            for text in ips if isinstance(ips, list) and ips else (spec.get("clusterIP"),):
                ip = self._parse_ip(text)
                if ip is not None:
                    _count(self._ips, ip, delta)
        for port in _node_ports(spec):
            _count(self._ports, port, delta)
        health = as_int(spec.get("healthCheckNodePort"), 0)
        if health:
            _count(self._ports, health, delta)

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Keep the in-use sets in step with what is stored."""
        if rt.plural != "services" or rt.group:
            return
        if old is not None:
            self._hold(old.obj, -1)
        if event != "DELETED":
            self._hold(new.obj, 1)

    # allocation ---------------------------------------------------------------------------

    def mutate(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Fill in (or check) a Service's cluster IP and node ports before validation."""
        if rt.plural != "services" or rt.group:
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        name = str((obj.get("metadata") or {}).get("name") or "")
        old_spec: dict[str, Any] | None = None
        if old is not None:
            found = old.get("spec")
            old_spec = found if isinstance(found, dict) else {}
            _drop_type_dependent_fields(spec, old_spec)
        # An update keeps the address it has (validation refuses a change).
        has_ip = old_spec is not None and bool(old_spec.get("clusterIP"))
        if spec.get("type", "ClusterIP") != "ExternalName" and not has_ip:
            self._allocate_ip(spec, name)
        if spec.get("type") in _NODE_PORT_TYPES:
            self._allocate_node_ports(spec, old_spec, name)
        if _needs_health_check(spec) and (old_spec is None or not _needs_health_check(old_spec)):
            self._allocate_health_check_port(spec)

    def _allocate_ip(self, spec: dict[str, Any], name: str) -> None:
        ips = spec.get("clusterIPs")
        requested = spec.get("clusterIP")
        if isinstance(ips, list) and ips and isinstance(ips[0], str):
            requested = ips[0]
        if requested == "None":
            return  # headless
        if requested:
            try:
                address = ipaddress.ip_address(requested)
            except ValueError:
                return  # validation reports the malformed address
            shown = go_string_slice(ips if isinstance(ips, list) and ips else [requested])
            ip = int(address)
            if address.version != self.network.version or not self._ip_lo <= ip <= self._ip_hi:
                why = (
                    "provided IP is not in the valid range. The range of valid IPs is " + self.cidr
                )
            elif ip in self._ips:
                why = "provided IP is already allocated"
            else:
                why = ""
            if why:
                detail = f"failed to allocate IP {requested}: {why}"
                raise _invalid(name, FieldError.invalid("spec.clusterIPs", shown, detail))
            text = str(requested)
        else:
            picked = _pick(self._ip_lo, self._ip_hi, self._ip_offset, self._ips, self._random)
            if picked is None:
                raise StatusError.internal("failed to allocate a serviceIP: range is full")
            text = str(ipaddress.ip_address(picked))
            if self.network.version == 6 and spec.get("ipFamilies") == ["IPv4"]:
                spec["ipFamilies"] = ["IPv6"]
        spec["clusterIP"] = text
        rest = ips[1:] if isinstance(ips, list) else []
        spec["clusterIPs"] = [text, *rest]

    def _port_error(self, port: int) -> str:
        lo, hi = self.node_ports
        if not lo <= port <= hi:
            return f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}"
        if port in self._ports:
            return "provided port is already allocated"
        return ""

    def _next_port(self, claimed: set[int]) -> int:
        lo, hi = self.node_ports
        used = _Union(self._ports, claimed)
        port = _pick(lo, hi, self._port_offset, used, self._random)
        if port is None:
            raise StatusError.internal("failed to allocate a nodePort: range is full")
        return port

    def _allocate_node_ports(
        self, spec: dict[str, Any], old_spec: dict[str, Any] | None, name: str
    ) -> None:
        allocate = (
            spec.get("type") == "NodePort" or spec.get("allocateLoadBalancerNodePorts") is not False
        )
        # A service keeps the node ports it already holds.
        own = set(_node_ports(old_spec)) if old_spec is not None else set()
        health = as_int(old_spec.get("healthCheckNodePort"), 0) if old_spec is not None else 0
        if health:
            own.add(health)
        claimed: set[int] = set()
        # Ports sharing a number (e.g. 53/TCP and 53/UDP) share one node port.
        by_number: dict[int, int] = {}
        ports = _ports(spec)
        for i, port in enumerate(ports):
            requested = port.get("nodePort")
            if requested is not None and not isinstance(requested, int):
                continue  # validation reports it
            node_port = as_int(requested, 0)
            number = as_int(port.get("port"), 0)
            if not node_port and not allocate:
                continue
            shared = by_number.get(number)
            if shared is not None and node_port in (0, shared):
                port["nodePort"] = shared
                continue
            if not node_port and old_spec is None:
                # A later port with the same number may name the node port they share.
                node_port = next(
                    (
                        as_int(later.get("nodePort"), 0)
                        for later in ports[i + 1 :]
                        if as_int(later.get("port"), 0) == number
                        and as_int(later.get("nodePort"), 0)
                    ),
                    0,
                )
            if node_port:
                if node_port not in own:
                    why = "provided port is already allocated" if node_port in claimed else ""
                    why = why or self._port_error(node_port)
                    if why:
                        path = f"spec.ports[{i}].nodePort"
                        raise _invalid(name, FieldError.invalid(path, node_port, why))
            else:
                node_port = self._next_port(claimed | own)
            port["nodePort"] = node_port
            claimed.add(node_port)
            if old_spec is None and number:
                by_number.setdefault(number, node_port)

    def _allocate_health_check_port(self, spec: dict[str, Any]) -> None:
        requested = as_int(spec.get("healthCheckNodePort"), 0)
        claimed = set(_node_ports(spec))
        if requested:
            why = self._port_error(requested)
            if why or requested in claimed:
                raise StatusError.internal(
                    f"failed to allocate requested HealthCheck NodePort {requested}: "
                    f"{why or 'provided port is already allocated'}"
                )
            return
        spec["healthCheckNodePort"] = self._next_port(claimed)

    # the `kubernetes` Service --------------------------------------------------------------

    def ensure_kubernetes_service(self, host: str, port: int) -> None:
        """Create or correct the `kubernetes` Service in `default` and, once the serving port
        is known (non-zero), the Endpoints and EndpointSlice pointing at this server."""
        address = advertised_address(host)
        target = port or 443
        self._ensure(
            "services",
            "v1",
            "",
            {
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "type": "ClusterIP",
                    "clusterIP": self.first_ip,
                    "sessionAffinity": "None",
                    "ports": [
                        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": target}
                    ],
                },
            },
            # Before the port is known an existing Service is left as it is.
            (("spec", "ports"),) if port else (),
        )
        if not port:
            return
        endpoint_port = {"name": "https", "port": port, "protocol": "TCP"}
        self._ensure(
            "endpoints",
            "v1",
            "",
            {
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                },
                "subsets": [{"addresses": [{"ip": address}], "ports": [endpoint_port]}],
            },
            (("subsets",),),
        )
        family = "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"
        self._ensure(
            "endpointslices",
            "v1",
            "discovery.k8s.io",
            {
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "kubernetes"},
                },
                "addressType": family,
                "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
                "ports": [endpoint_port],
            },
            (("addressType",), ("endpoints",), ("ports",)),
        )

    def _ensure(
        self,
        plural: str,
        version: str,
        group: str,
        body: dict[str, Any],
        paths: tuple[tuple[str, ...], ...],
    ) -> None:
        """Create the object, or bring the fields at `paths` back to `body`'s values."""
        rt = self.registry.get(group, version, plural)
        if rt is None:
            return
        body = {"apiVersion": rt.api_version, "kind": rt.kind, **body}
        meta = body["metadata"]
        ns, name = meta["namespace"], meta["name"]
        query = {"fieldManager": _MANAGER}
        try:
            current = self.store.get(rt.group_resource, ns, name)
            if current is None:
                info = RequestInfo(group, version, ns, plural, name, None, "create")
                run_now(self.writer.create(Call(info, rt, query), body))
                return
            obj = self.codec.served(rt, current)
            stale = [p for p in paths if _get(obj, p) != _get(body, p)]
            if not stale:
                return
            for path in stale:
                _set(obj, path, _get(body, path))
            info = RequestInfo(group, version, ns, plural, name, None, "update")
            run_now(self.writer.write_update(Call(info, rt, query), obj, current))
        except StatusError as exc:
            log.warning("could not write %s %s/%s: %s", rt.plural, ns, name, exc.message)


class _Union:
    """Membership in either of two containers, without building their union."""

    __slots__ = ("a", "b")

    def __init__(self, a: Container[int], b: Container[int]) -> None:
        self.a = a
        self.b = b

    def __contains__(self, item: object) -> bool:
        return item in self.a or item in self.b


def _count(counts: dict[int, int], key: int, delta: int) -> None:
    value = counts.get(key, 0) + delta
    if value > 0:
        counts[key] = value
    else:
        counts.pop(key, None)


def _drop_type_dependent_fields(spec: dict[str, Any], old: dict[str, Any]) -> None:
    """A type change drops what the new type cannot have, when the client left it as it was
    (the values were the server's, and are freed with this write)."""
    old_type = old.get("type", "ClusterIP")
    new_type = spec.get("type", "ClusterIP")
    if old_type != "ExternalName" and new_type == "ExternalName":
        for key in (*_IP_FIELDS, "ipFamilies", "ipFamilyPolicy"):
            if key in spec and spec.get(key) == old.get(key):
                del spec[key]
    node_ports_gone = old_type in _NODE_PORT_TYPES and new_type not in _NODE_PORT_TYPES
    if node_ports_gone and _node_ports(spec) == _node_ports(old):
        for port in _ports(spec):
            port.pop("nodePort", None)
    health = "healthCheckNodePort"
    if _needs_health_check(old) and not _needs_health_check(spec) and _same(spec, old, health):
        spec.pop(health, None)
    policy = "externalTrafficPolicy"
    if _external(old) and not _external(spec) and _same(spec, old, policy):
        spec.pop(policy, None)
    flag = "allocateLoadBalancerNodePorts"
    if old_type == "LoadBalancer" and new_type != "LoadBalancer" and _same(spec, old, flag):
        spec.pop(flag, None)


def _same(spec: dict[str, Any], old: dict[str, Any], key: str) -> bool:
    return spec.get(key) == old.get(key)


def _external(spec: dict[str, Any]) -> bool:
    """Whether a Service is reachable from outside (and so has a traffic policy)."""
    return spec.get("type") in _NODE_PORT_TYPES or bool(spec.get("externalIPs"))


def advertised_address(host: str) -> str:
    """The IP clients inside the cluster would use for this server."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "127.0.0.1"
    if address.is_unspecified:
        return "::1" if address.version == 6 else "127.0.0.1"
    return str(address)


def _get(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    obj[path[-1]] = value
