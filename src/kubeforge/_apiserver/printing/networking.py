"""`kubectl get` columns of networking.k8s.io (Ingress, IngressClass, NetworkPolicy,
IPAddress, ServiceCIDR) and discovery.k8s.io's EndpointSlice, as
pkg/printers/internalversion/printers.go prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, name_of
from kubeforge._apiserver.printing.columns import (
    AGE,
    NAME,
    Cells,
    Column,
    Obj,
    Printer,
    format_label_selector,
    lb_ingress,
    object_age,
    with_more,
)

__all__ = ["PRINTERS"]


def _ingress_hosts(rules: list[Any]) -> str:
    limit, more = 3, False
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == limit:
            more = True
        host = as_dict(rule).get("host")
        if not more and host:
            hosts.append(str(host))
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - limit} more..." if more else text


def _ingress_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        spec.get("ingressClassName") or "<none>",
        _ingress_hosts(as_list(spec.get("rules"))),
        lb_ingress(obj.get("status")),
        "80, 443" if as_list(spec.get("tls")) else "80",
        object_age(obj, now),
    ]


def _ingress_class_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    params = spec.get("parameters")
    text = "<none>"
    if isinstance(params, Mapping):
        text = str(params.get("kind") or "")
        if params.get("apiGroup") is not None:
            text += f".{params['apiGroup']}"
        text += f"/{params.get('name') or ''}"
    return [name_of(obj), str(spec.get("controller") or ""), text, object_age(obj, now)]


def _network_policy_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        format_label_selector(spec.get("podSelector") or {}),
        object_age(obj, now),
    ]


def _endpoint_slice_cells(obj: Obj, now: datetime) -> Cells:
    limit = 3
    ports = []
    for port in as_list(obj.get("ports")):
        port = as_dict(port)
        if port.get("port") is not None:
            ports.append(str(port["port"]))
        elif port.get("name") is not None:
            ports.append(str(port["name"]))
        else:
            ports.append("*")
    addresses = [
        str(address)
        for endpoint in as_list(obj.get("endpoints"))
        for address in as_list(as_dict(endpoint).get("addresses"))
    ]
    return [
        name_of(obj),
        str(obj.get("addressType") or ""),
        with_more(ports[:limit], len(ports), limit, "<unset>"),
        with_more(addresses[:limit], len(addresses), limit, "<unset>"),
        object_age(obj, now),
    ]


def _ip_address_cells(obj: Obj, now: datetime) -> Cells:
    ref = as_dict(obj.get("spec")).get("parentRef")
    parent = "<none>"
    if isinstance(ref, dict):
        group, resource = str(ref.get("group") or ""), str(ref.get("resource") or "")
        parent = (f"{resource}.{group}" if group else resource).lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name') or ''}"
    return [name_of(obj), parent, object_age(obj, now)]


def _service_cidr_cells(obj: Obj, now: datetime) -> Cells:
    cidrs = as_list(as_dict(obj.get("spec")).get("cidrs"))
    return [name_of(obj), ",".join(str(c) for c in cidrs), object_age(obj, now)]


PRINTERS: dict[tuple[str, str], Printer] = {
    ("networking.k8s.io", "Ingress"): Printer(
        (
            NAME,
            Column("Class", "string", "The ingress class handling this ingress."),
            Column("Hosts", "string", "Host names the rules match."),
            Column("Address", "string", "Addresses of the load balancer."),
            Column("Ports", "string", "Ports served, 443 when TLS is configured."),
            AGE,
        ),
        _ingress_cells,
    ),
    ("networking.k8s.io", "IngressClass"): Printer(
        (
            NAME,
            Column("Controller", "string", "The controller implementing the class."),
            Column("Parameters", "string", "The object holding extra parameters."),
            AGE,
        ),
        _ingress_class_cells,
    ),
    ("networking.k8s.io", "NetworkPolicy"): Printer(
        (NAME, Column("Pod-Selector", "string", "The pods the policy applies to."), AGE),
        _network_policy_cells,
    ),
    ("discovery.k8s.io", "EndpointSlice"): Printer(
        (
            NAME,
            Column("AddressType", "string", "The kind of addresses in the slice."),
            Column("Ports", "string", "Ports of the endpoints."),
            Column("Endpoints", "string", "Addresses of the endpoints."),
            AGE,
        ),
        _endpoint_slice_cells,
    ),
    ("networking.k8s.io", "IPAddress"): Printer(
        (NAME, Column("ParentRef", "string", "The object the address is allocated to."), AGE),
        _ip_address_cells,
    ),
    ("networking.k8s.io", "ServiceCIDR"): Printer(
        (NAME, Column("CIDRs", "string", "The ranges Service addresses come from."), AGE),
        _service_cidr_cells,
    ),
}
