"""Validation of networking.k8s.io/v1 IPAddress and ServiceCIDR, as
pkg/apis/networking/validation/validation.go checks them."""

from __future__ import annotations

import ipaddress

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import go_string_slice
from kubeforge._api.machinery.names import immutable, is_dns1123_subdomain, is_path_segment_name
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_json, semantic_equal

__all__ = [
    "validate_ip_address",
    "validate_ip_address_update",
    "validate_service_cidr",
    "validate_service_cidr_update",
]

_CIDR_EXAMPLE = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
_ONE_PER_FAMILY = (
    "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
)


# -- IPAddress --------------------------------------------------------------------------------


def ip_address_name_problems(name: str) -> list[str]:
    """ValidateIPAddressName: the name is an IP address written in its canonical form."""
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return [f'ParseAddr("{name}"): unable to parse IP']
    if str(address) != name:
        return ["must be a canonical format IP address"]
    return []


def _segment(ref: Obj, key: str, path: str, required: bool) -> Errors:
    value = as_str(ref.get(key))
    if not value:
        return [FieldError.required(f"{path}.{key}", "")] if required else []
    return [FieldError.invalid(f"{path}.{key}", value, m) for m in is_path_segment_name(value)]


def validate_ip_address(obj: Obj) -> list[FieldError]:
    """ValidateIPAddress: a canonical IP as the name, and the parent object it belongs to."""
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    errs: Errors = (
        [FieldError.invalid("metadata.name", name, m) for m in ip_address_name_problems(name)]
        if name
        else []
    )
    ref = as_dict(obj.get("spec")).get("parentRef")
    if not isinstance(ref, dict):
        return [*errs, FieldError.required("spec.parentRef", "")]
    path = "spec.parentRef"
    group = as_str(ref.get("group"))
    # The core group of Services is the empty string, so a group cannot be required.
    if group:
        errs += [FieldError.invalid(f"{path}.group", group, m) for m in is_dns1123_subdomain(group)]
    errs += _segment(ref, "resource", path, True)
    errs += _segment(ref, "name", path, True)
    errs += _segment(ref, "namespace", path, False)
    return errs


def validate_ip_address_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateIPAddressUpdate: the parent reference never changes."""
    errs = validate_ip_address(obj)
    ref = as_dict(obj.get("spec")).get("parentRef")
    if not semantic_equal(ref, as_dict(old.get("spec")).get("parentRef")):
        errs.append(immutable("spec.parentRef", go_json(ref)))
    return errs


# -- ServiceCIDR ------------------------------------------------------------------------------


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR as Go's sloppy parser reads it (host bits allowed)."""
    if "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def validate_service_cidr(obj: Obj) -> list[FieldError]:
    """ValidateServiceCIDR: one or two CIDRs, two only when one of each IP family."""
    spec = as_dict(obj.get("spec"))
    cidrs = as_list(spec.get("cidrs"))
    path = "spec.cidrs"
    if not cidrs:
        return [FieldError.required(path, "at least one CIDR required")]
    if len(cidrs) > 2:
        return [FieldError.invalid(path, go_json(spec), "may only hold up to 2 values")]
    errs: Errors = []
    networks = []
    for i, cidr in enumerate(cidrs):
        network = _network(as_str(cidr))
        if network is None:
            errs.append(FieldError.invalid(f"{path}[{i}]", as_str(cidr), _CIDR_EXAMPLE))
        networks.append(network)
    if len(cidrs) == 2 and not errs:
        versions = {n.version for n in networks if n is not None}
        if len(versions) != 2:
            errs.append(FieldError.invalid(path, go_json(spec), _ONE_PER_FAMILY))
    return errs


def validate_service_cidr_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateServiceCIDRUpdate: the CIDRs stay, except that a single-stack range may add
    the other family's."""
    cidrs = as_list(as_dict(obj.get("spec")).get("cidrs"))
    old_cidrs = as_list(as_dict(old.get("spec")).get("cidrs"))
    errs: Errors = []
    if len(cidrs) == len(old_cidrs):
        for i, (new, before) in enumerate(zip(cidrs, old_cidrs, strict=True)):
            if new != before:
                errs.append(immutable(f"spec.cidrs[{i}]", new))
    elif len(old_cidrs) == 1 and len(cidrs) == 2:
        if cidrs[0] != old_cidrs[0]:
            errs.append(immutable("spec.cidrs[0]", cidrs[0]))
        errs += validate_service_cidr(obj)
    else:
        errs.append(immutable("spec.cidrs", go_string_slice([as_str(c) for c in cidrs])))
    return errs
