"""Validation of the other core/v1 kinds: ReplicationControllers, Services, ConfigMaps, Secrets
and Namespaces."""

from __future__ import annotations

import base64
import binascii
import ipaddress
from typing import Any

import orjson

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_string_slice
from kubeforge._api.machinery.names import (
    immutable,
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    validate_builtin_finalizers,
    validate_labels,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._apiserver.types.validation.common import (
    Errors,
    Obj,
    each,
    go_str,
    template_mismatch,
    validate_replicas,
    validate_template_restart_always,
)
from kubeforge._apiserver.types.validation.core_pods import (
    PORT_RANGE,
    PROTOCOLS,
    validate_pod_template,
    validate_port_num_or_name,
)

__all__ = [
    "MAX_DATA_BYTES",
    "validate_config_map",
    "validate_config_map_update",
    "validate_namespace",
    "validate_namespace_update",
    "validate_replication_controller",
    "validate_replication_controller_update",
    "validate_secret",
    "validate_secret_update",
    "validate_service",
    "validate_service_update",
]

# -- replication controllers -----------------------------------------------------------------


def validate_replication_controller(obj: Obj) -> list[FieldError]:
    """ValidateReplicationControllerSpec (selectors are plain label maps)."""
    spec = as_dict(obj.get("spec"))
    errs = validate_replicas(spec)
    selector = spec.get("selector")
    if not selector:
        errs.append(FieldError.required("spec.selector", ""))
    else:
        errs += validate_labels(selector, "spec.selector")
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(FieldError.required("spec.template", ""))
        return errs
    labels = as_dict(template.get("metadata")).get("labels")
    if selector and not label_selector_matches({"matchLabels": selector}, labels):
        errs.append(template_mismatch(spec))
    errs += validate_pod_template(template, "spec.template")
    errs += validate_template_restart_always(spec, "ReplicationController")
    return errs


def validate_replication_controller_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ReplicationController."""
    return validate_replication_controller(obj)


# -- services --------------------------------------------------------------------------------

_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _go_service_port(port: Obj) -> GoValue:
    return GoValue(
        'core.ServicePort{Name:"", Protocol:'
        f"{go_str(port.get('protocol'))}, AppProtocol:(*string)(nil), "
        f"Port:{as_int(port.get('port')) or 0}, "
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
    )


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def validate_service(obj: Obj) -> list[FieldError]:
    """ValidateService: ports, selector, type-dependent fields."""
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    kind = as_str(spec.get("type"))
    ports = as_list(spec.get("ports"))
    headless = spec.get("clusterIP") == "None"
    if kind == "ExternalName":
        external = as_str(spec.get("externalName"))
        if not external:
            errs.append(FieldError.required("spec.externalName", ""))
        else:
            errs += each(is_dns1123_subdomain(external.rstrip(".")), "spec.externalName", external)
        if spec.get("clusterIP"):
            errs.append(
                FieldError.forbidden("spec.clusterIPs", "may not be set for ExternalName services")
            )
    elif not ports and not headless:
        errs.append(FieldError.required("spec.ports", ""))
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = as_dict(port)
        at = f"spec.ports[{i}]"
        name = as_str(port.get("name"))
        if len(ports) > 1 and not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        elif name:
            errs += each(is_dns1123_label(name), f"{at}.name", name)
            if name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            names.add(name)
        number = as_int(port.get("port"))
        if number is None or not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{at}.port", number or 0, PORT_RANGE))
        protocol = as_str(port.get("protocol"))
        if not protocol:
            errs.append(FieldError.required(f"{at}.protocol", ""))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(f"{at}.protocol", protocol, PROTOCOLS))
        errs += validate_port_num_or_name(port.get("targetPort"), f"{at}.targetPort")
        app_protocol = port.get("appProtocol")
        if isinstance(app_protocol, str):
            errs += each(is_qualified_name(app_protocol), f"{at}.appProtocol", app_protocol)
        node_port = as_int(port.get("nodePort")) or 0
        if node_port and kind == "ClusterIP":
            errs.append(
                FieldError.forbidden(f"{at}.nodePort", "may not be used when `type` is 'ClusterIP'")
            )
        elif node_port and not 1 <= node_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.nodePort", node_port, PORT_RANGE))
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (as_str(as_dict(port).get("protocol")), as_int(as_dict(port).get("port")) or 0)
        if key in seen:
            errs.append(FieldError.duplicate(f"spec.ports[{i}]", _go_service_port(as_dict(port))))
        seen.add(key)
    errs += validate_labels(spec.get("selector"), "spec.selector")
    if kind and kind not in _SERVICE_TYPES:
        errs.append(FieldError.not_supported("spec.type", kind, _SERVICE_TYPES))
    affinity = as_str(spec.get("sessionAffinity"))
    if affinity and affinity not in ("ClientIP", "None"):
        errs.append(
            FieldError.not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None"))
        )
    for i, ip in enumerate(as_list(spec.get("clusterIPs"))):
        if isinstance(ip, str) and ip not in ("", "None") and not _is_ip(ip):
            errs.append(
                FieldError.invalid(
                    f"spec.clusterIPs[{i}]", ip, "must be empty, 'None', or a valid IP address"
                )
            )
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        if isinstance(ip, str) and not _is_ip(ip):
            errs.append(
                FieldError.invalid(f"spec.externalIPs[{i}]", ip, "must be a valid IP address")
            )
    policy = spec.get("externalTrafficPolicy")
    if policy and policy not in ("Cluster", "Local"):
        errs.append(
            FieldError.not_supported("spec.externalTrafficPolicy", policy, ("Cluster", "Local"))
        )
    policy = spec.get("internalTrafficPolicy")
    if policy and policy not in ("Cluster", "Local"):
        errs.append(
            FieldError.not_supported("spec.internalTrafficPolicy", policy, ("Cluster", "Local"))
        )
    return errs


def validate_service_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Service: an allocated cluster IP stays (except to or from
    ExternalName)."""
    errs: Errors = []
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    if "ExternalName" not in (spec.get("type"), old_spec.get("type")):
        ips, old_ips = as_list(spec.get("clusterIPs")), as_list(old_spec.get("clusterIPs"))
        if ips and old_ips and ips[0] != old_ips[0]:
            errs.append(
                FieldError.invalid(
                    "spec.clusterIPs[0]", go_string_slice(ips), "may not change once set"
                )
            )
    return errs + validate_service(obj)


# -- config and secrets ----------------------------------------------------------------------

MAX_DATA_BYTES = 1024 * 1024  # ConfigMap and Secret payloads together
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def _decoded_size(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=False))
    except (binascii.Error, ValueError):
        return len(value)


def validate_config_map(obj: Obj) -> list[FieldError]:
    """Keys are config keys, unique across data and binaryData; 1 MiB in total."""
    errs: Errors = []
    data = as_dict(obj.get("data"))
    binary = as_dict(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs += each(is_config_map_key(key), f"data[{key}]", key)
        if key in binary:
            errs.append(
                FieldError.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
            )
        total += len(value.encode()) if isinstance(value, str) else 0
    for key, value in binary.items():
        errs += each(is_config_map_key(key), f"binaryData[{key}]", key)
        total += _decoded_size(value)
    if total > MAX_DATA_BYTES:
        errs.append(FieldError.too_long("", MAX_DATA_BYTES))
    return errs


def _immutable_payload(obj: Obj, old: Obj, keys: tuple[str, ...]) -> Errors:
    if old.get("immutable") is not True:
        return []
    errs: Errors = []
    if obj.get("immutable") is not True:
        errs.append(FieldError.forbidden("immutable", _IMMUTABLE_WHEN_SET))
    for key in keys:
        if (obj.get(key) or None) != (old.get(key) or None):
            errs.append(FieldError.forbidden(key, _IMMUTABLE_WHEN_SET))
    return errs


def validate_config_map_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ConfigMap: nothing changes once it is immutable."""
    return _immutable_payload(obj, old, ("data", "binaryData")) + validate_config_map(obj)


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def validate_secret(obj: Obj) -> list[FieldError]:
    """Keys are config keys, 1 MiB in total, and typed secrets carry their keys."""
    errs: Errors = []
    data = as_dict(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs += each(is_config_map_key(key), f"data[{key}]", key)
        total += _decoded_size(value)
    if total > MAX_DATA_BYTES:
        errs.append(FieldError.too_long("data", MAX_DATA_BYTES))
    kind = as_str(obj.get("type"))
    if kind == "kubernetes.io/service-account-token":
        annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(
                FieldError.required("metadata.annotations[kubernetes.io/service-account.name]", "")
            )
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(FieldError.required("data[username]", ""))
            errs.append(FieldError.required("data[password]", ""))
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(FieldError.required("data[ssh-privatekey]", ""))
    elif kind in _SECRET_REQUIRED_KEYS:
        for key in _SECRET_REQUIRED_KEYS[kind]:
            if key not in data:
                errs.append(FieldError.required(f"data[{key}]", ""))
                break
        else:
            if kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
                key = _SECRET_REQUIRED_KEYS[kind][0]
                try:
                    orjson.loads(base64.b64decode(as_str(data[key])))
                except (orjson.JSONDecodeError, binascii.Error, ValueError) as exc:
                    errs.append(
                        FieldError.invalid(f"data[{key}]", "<secret contents redacted>", str(exc))
                    )
    return errs


def validate_secret_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Secret: the type is fixed, and the data once immutable."""
    errs: Errors = []
    if (obj.get("type") or "") != (old.get("type") or ""):
        errs.append(immutable("type", obj.get("type") or ""))
    return errs + _immutable_payload(obj, old, ("data",)) + validate_secret(obj)


# -- namespaces ------------------------------------------------------------------------------


def validate_namespace(obj: Obj) -> list[FieldError]:
    """Namespace spec finalizers are finalizer names."""
    finalizers = as_list(as_dict(obj.get("spec")).get("finalizers"))
    errs: Errors = []
    for name in finalizers:
        if isinstance(name, str):
            errs += each(is_qualified_name(name), "spec.finalizers", name)
    errs += validate_builtin_finalizers(finalizers, "spec.finalizers")
    return errs


def validate_namespace_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Namespace."""
    return validate_namespace(obj)
