"""Semantic validation of built-in objects: the checks a real API server makes beyond the
OpenAPI schema, with its field paths and wording.

Objects arrive decoded and defaulted (see `defaults.py`); object metadata is checked
elsewhere (`kubeforge.api.names`). Bad values are shown the way a 1.33 server prints them:
strings quoted, numbers plain, maps, lists and structs as Go literals.

`VALIDATORS` maps `(group, kind)` to a pair of functions: one for new objects, one for
updates (which re-checks the new object and adds the transition rules).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

import orjson

from kubeforge.api.access import as_dict, as_int, as_list, as_str
from kubeforge.api.fielderror import FieldError, FieldErrorType
from kubeforge.api.names import (
    GoValue,
    go_label_selector,
    go_string_map,
    go_string_slice,
    immutable,
    is_config_map_key,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    regex_error,
    validate_annotations,
    validate_builtin_finalizers,
    validate_label_selector,
    validate_labels,
)
from kubeforge.api.quantity import decode_quantity
from kubeforge.api.selectors import label_selector_matches
from kubeforge.apiserver.admission import configuration as admission_configuration

__all__ = [
    "VALIDATORS",
    "CreateValidator",
    "UpdateValidator",
    "cron_schedule_error",
    "pod_qos_class",
    "semantic_equal",
    "validate_pod_spec",
    "validate_pod_template",
]

Obj = dict[str, Any]
Errors = list[FieldError]
CreateValidator = Callable[[Obj], Errors]
UpdateValidator = Callable[[Obj, Obj], Errors]

INT32_MAX = 2**31 - 1
MAX_DATA_BYTES = 1024 * 1024  # ConfigMap and Secret payloads together

_NEGATIVE = "must be greater than or equal to 0"
_NOT_POSITIVE = "must be greater than zero"
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_SELECTOR_MISMATCH = "`selector` does not match template `labels`"
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")


# -- small helpers ---------------------------------------------------------------------------


def _nonnegative(path: str, value: Any) -> Errors:
    number = as_int(value)
    if number is not None and number < 0:
        return [FieldError.invalid(path, number, _NEGATIVE)]
    return []


def _each(messages: Iterable[str], path: str, value: Any) -> Errors:
    return [FieldError.invalid(path, value, m) for m in messages]


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        items = ((k, _normalized(v)) for k, v in value.items())
        return {k: v for k, v in items if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Equality as the server compares API objects: absent, null and empty are all alike."""
    if a == b:
        return True
    a, b = _normalized(a), _normalized(b)
    return (None if a in ({}, []) else a) == (None if b in ({}, []) else b)


def _go_json(value: Any) -> GoValue:
    """A composite value the server would print as a long Go literal, shown compactly."""
    return GoValue(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


def _go_str(value: Any) -> str:
    return orjson.dumps(as_str(value)).decode()


def _go_int_or_string(value: Any) -> GoValue:
    # IntOrString prints through its String method: the number, or the bare string.
    return GoValue(str(value))


# -- selectors -------------------------------------------------------------------------------


def _requirement_ok(expr: Any) -> bool:
    if not isinstance(expr, Mapping):
        return False
    op = expr.get("operator")
    values = as_list(expr.get("values"))
    key = as_str(expr.get("key"))
    if op in ("In", "NotIn"):
        if not values:
            return False
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return False
    else:
        return False
    if is_qualified_name(key):
        return False
    return all(isinstance(v, str) and not is_valid_label_value(v) for v in values)


def _selector_parses(selector: Any) -> bool:
    """Whether a LabelSelector converts to a selector (the server says "invalid label
    selector" otherwise)."""
    if selector is None:
        return True
    if not isinstance(selector, Mapping):
        return False
    for key, value in as_dict(selector.get("matchLabels")).items():
        if is_qualified_name(key) or not isinstance(value, str) or is_valid_label_value(value):
            return False
    return all(_requirement_ok(e) for e in as_list(selector.get("matchExpressions")))


def _selector_is_empty(selector: Any) -> bool:
    """An empty (non-null) selector selects everything; a null one selects nothing."""
    return (
        isinstance(selector, Mapping)
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )


# -- quantities and QoS ----------------------------------------------------------------------


_QOS_RESOURCES = ("cpu", "memory")


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """BestEffort, Burstable or Guaranteed, from the CPU and memory of the pod's (init)
    containers, as the server computes `status.qosClass` on create."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in as_list(spec.get("containers")) + as_list(spec.get("initContainers")):
        resources = as_dict(as_dict(container).get("resources"))
        for name, raw in as_dict(resources.get("requests")).items():
            amount = decode_quantity(raw)
            if name in _QOS_RESOURCES and amount is not None and amount > 0:
                requests[name] = requests.get(name, Decimal(0)) + amount
        found = set()
        for name, raw in as_dict(resources.get("limits")).items():
            amount = decode_quantity(raw)
            if name in _QOS_RESOURCES and amount is not None and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, Decimal(0)) + amount
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and all(limits.get(n) == q for n, q in requests.items())
        and len(requests) == len(limits)
    ):
        return "Guaranteed"
    return "Burstable"


# -- pods ------------------------------------------------------------------------------------

# Checked in the server's order; the first one present is the volume's type.
_VOLUME_TYPES = (
    "hostPath",
    "emptyDir",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "projected",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
_FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"
_ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_ENV_FIELD_RE = re.compile(r"^metadata\.(annotations|labels)\['[^']+'\]$")


def _validate_mode(source: Obj, path: str) -> Errors:
    mode = as_int(source.get("defaultMode"))
    if mode is not None and not 0 <= mode <= 0o777:
        return [FieldError.invalid(f"{path}.defaultMode", mode, _FILE_MODE)]
    return []


def _validate_volume_source(volume: Obj, kind: str, path: str) -> Errors:
    source = as_dict(volume.get(kind))
    at = f"{path}.{kind}"
    if kind == "secret":
        errs = _validate_mode(source, at)
        if not source.get("secretName"):
            errs.append(FieldError.required(f"{at}.secretName", ""))
        return errs
    if kind == "configMap":
        errs = _validate_mode(source, at)
        name = as_str(source.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        else:
            errs += _each(is_dns1123_subdomain(name), f"{at}.name", name)
        return errs
    if kind == "persistentVolumeClaim":
        if not source.get("claimName"):
            return [FieldError.required(f"{at}.claimName", "")]
        return []
    if kind == "hostPath":
        if not source.get("path"):
            return [FieldError.required(f"{at}.path", "")]
        return []
    if kind in ("downwardAPI", "projected"):
        return _validate_mode(source, at)
    return []


def _validate_volumes(volumes: list[Any], path: str) -> tuple[set[str], Errors]:
    names: set[str] = set()
    errs: Errors = []
    for i, volume in enumerate(volumes):
        volume = as_dict(volume)
        at = f"{path}[{i}]"
        found = 0
        for kind in _VOLUME_TYPES:
            if volume.get(kind) is None:
                continue
            if found:
                errs.append(
                    FieldError.forbidden(f"{at}.{kind}", "may not specify more than 1 volume type")
                )
            else:
                found += 1
                errs += _validate_volume_source(volume, kind, at)
        if not found:
            errs.append(FieldError.required(at, "must specify a volume type"))
        name = as_str(volume.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        else:
            errs += _each(is_dns1123_label(name), f"{at}.name", name)
        if name in names:
            errs.append(FieldError.duplicate(f"{at}.name", name))
        names.add(name)
    return names, errs


def _validate_port_num_or_name(port: Any, path: str) -> Errors:
    if isinstance(port, str):
        return _each(is_valid_port_name(port), path, port)
    number = as_int(port)
    if number is None or not 1 <= number <= 65535:
        return [FieldError.invalid(path, port if number is None else number, _PORT_RANGE)]
    return []


def _validate_container_ports(ports: list[Any], path: str) -> Errors:
    errs: Errors = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = as_dict(port)
        at = f"{path}[{i}]"
        name = as_str(port.get("name"))
        if name:
            problems = is_valid_port_name(name)
            if problems:
                errs += _each(problems, f"{at}.name", name)
            elif name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            else:
                names.add(name)
        container_port = as_int(port.get("containerPort")) or 0
        if not container_port:
            errs.append(FieldError.required(f"{at}.containerPort", ""))
        elif not 1 <= container_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.containerPort", container_port, _PORT_RANGE))
        host_port = as_int(port.get("hostPort")) or 0
        if host_port and not 1 <= host_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.hostPort", host_port, _PORT_RANGE))
        protocol = as_str(port.get("protocol"))
        if not protocol:
            errs.append(FieldError.required(f"{at}.protocol", ""))
        elif protocol not in _PROTOCOLS:
            errs.append(FieldError.not_supported(f"{at}.protocol", protocol, _PROTOCOLS))
    return errs


def _env_name_problems(name: str) -> list[str]:
    errs = []
    if not name:
        errs.append("environment variable name must be non-empty")
    if any(not (" " <= c <= "~") or c == "=" for c in name):
        errs.append(
            "a valid environment variable name must consist only of printable ASCII characters "
            "other than '='"
        )
    return errs


def _validate_key_selector(ref: Obj, path: str) -> Errors:
    name = as_str(ref.get("name"))
    errs = _each(is_dns1123_subdomain(name), f"{path}.name", name) if name else []
    key = as_str(ref.get("key"))
    if not key:
        errs.append(FieldError.required(f"{path}.key", ""))
    else:
        errs += _each(is_config_map_key(key), f"{path}.key", key)
    return errs


def _validate_env(env: list[Any], path: str) -> Errors:
    errs: Errors = []
    for i, var in enumerate(env):
        var = as_dict(var)
        at = f"{path}[{i}]"
        name = as_str(var.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        errs += _each(_env_name_problems(name), f"{at}.name", name)
        source = var.get("valueFrom")
        if not isinstance(source, dict):
            continue
        from_path = f"{at}.valueFrom"
        count = 0
        field_ref = source.get("fieldRef")
        if isinstance(field_ref, dict):
            count += 1
            field_path = as_str(field_ref.get("fieldPath"))
            if not field_path:
                errs.append(FieldError.required(f"{from_path}.fieldRef.fieldPath", ""))
            elif field_path not in _ENV_FIELD_PATHS and not _ENV_FIELD_RE.match(field_path):
                errs.append(
                    FieldError.not_supported(
                        f"{from_path}.fieldRef.fieldPath", field_path, _ENV_FIELD_PATHS
                    )
                )
        if isinstance(source.get("resourceFieldRef"), dict):
            count += 1
        for kind in ("configMapKeyRef", "secretKeyRef"):
            ref = source.get(kind)
            if isinstance(ref, dict):
                count += 1
                errs += _validate_key_selector(ref, f"{from_path}.{kind}")
        if count == 0:
            errs.append(
                FieldError.invalid(
                    from_path,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif var.get("value"):
            errs.append(
                FieldError.invalid(from_path, "", "may not be specified when `value` is not empty")
            )
        elif count > 1:
            errs.append(
                FieldError.invalid(
                    from_path, "", "may not have more than one field specified at a time"
                )
            )
    return errs


def _validate_volume_mounts(mounts: list[Any], volumes: set[str], path: str) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, mount in enumerate(mounts):
        mount = as_dict(mount)
        at = f"{path}[{i}]"
        name = as_str(mount.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        if name not in volumes:
            errs.append(FieldError(FieldErrorType.NOT_FOUND, f"{at}.name", "", name))
        mount_path = as_str(mount.get("mountPath"))
        if not mount_path:
            errs.append(FieldError.required(f"{at}.mountPath", ""))
        if mount_path in seen:
            errs.append(FieldError.invalid(f"{at}.mountPath", mount_path, "must be unique"))
        seen.add(mount_path)
    return errs


def _is_overcommittable(name: str) -> bool:
    if name.startswith("hugepages-"):
        return False
    return "/" not in name or name.startswith("kubernetes.io/")


def _validate_resources(resources: Obj, path: str) -> Errors:
    errs: Errors = []
    limits = as_dict(resources.get("limits"))
    requests = as_dict(resources.get("requests"))
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, raw in values.items():
            amount = decode_quantity(raw)
            if amount is not None and amount < 0:
                errs.append(FieldError.invalid(f"{path}.{kind}[{name}]", str(raw), _NEGATIVE))
    for name, raw in requests.items():
        amount = decode_quantity(raw)
        if name in limits:
            limit = decode_quantity(limits[name])
            if amount is None or limit is None:
                continue
            if amount != limit and not _is_overcommittable(name):
                errs.append(
                    FieldError.invalid(
                        f"{path}.requests",
                        str(raw),
                        f"must be equal to {name} limit of {limits[name]}",
                    )
                )
            elif amount > limit:
                errs.append(
                    FieldError.invalid(
                        f"{path}.requests",
                        str(raw),
                        f"must be less than or equal to {name} limit of {limits[name]}",
                    )
                )
        elif not _is_overcommittable(name):
            errs.append(
                FieldError.required(
                    f"{path}.limits", "Limit must be set for non overcommitable resources"
                )
            )
    return errs


_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")


def _validate_handler(handler: Obj, path: str, kinds: tuple[str, ...] = _HANDLERS) -> Errors:
    errs: Errors = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if not isinstance(action, dict):
            continue
        at = f"{path}.{kind}"
        if count:
            errs.append(FieldError.forbidden(at, "may not specify more than 1 handler type"))
            continue
        count += 1
        if kind == "exec" and not as_list(action.get("command")):
            errs.append(FieldError.required(f"{at}.command", ""))
        elif kind == "httpGet":
            if not action.get("path"):
                errs.append(FieldError.required(f"{at}.path", ""))
            errs += _validate_port_num_or_name(action.get("port"), f"{at}.port")
            scheme = as_str(action.get("scheme"))
            if scheme not in ("HTTP", "HTTPS"):
                errs.append(FieldError.not_supported(f"{at}.scheme", scheme, ("HTTP", "HTTPS")))
        elif kind == "tcpSocket":
            errs += _validate_port_num_or_name(action.get("port"), f"{at}.port")
        elif kind == "grpc":
            port = as_int(action.get("port"))
            if port is None or not 1 <= port <= 65535:
                errs.append(FieldError.invalid(f"{at}.port", action.get("port"), _PORT_RANGE))
    if not count:
        errs.append(FieldError.required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: Any, path: str, *, single_success: bool) -> Errors:
    if not isinstance(probe, dict):
        return []
    errs = _validate_handler(probe, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for key in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        errs += _nonnegative(f"{path}.{key}", probe.get(key))
    grace = as_int(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        errs.append(
            FieldError.invalid(
                f"{path}.terminationGracePeriodSeconds", grace, "must be greater than 0"
            )
        )
    success = as_int(probe.get("successThreshold"))
    if single_success and success is not None and success != 1:
        errs.append(FieldError.invalid(f"{path}.successThreshold", success, "must be 1"))
    return errs


def _validate_container(container: Obj, volumes: set[str], path: str, *, regular: bool) -> Errors:
    errs: Errors = []
    name = as_str(container.get("name"))
    if not name:
        errs.append(FieldError.required(f"{path}.name", ""))
    else:
        errs += _each(is_dns1123_label(name), f"{path}.name", name)
    if not as_str(container.get("image")):
        errs.append(FieldError.required(f"{path}.image", ""))
    if regular:
        lifecycle = container.get("lifecycle")
        if isinstance(lifecycle, dict):
            for hook in ("postStart", "preStop"):
                if isinstance(lifecycle.get(hook), dict):
                    errs += _validate_handler(lifecycle[hook], f"{path}.lifecycle.{hook}")
        errs += _validate_probe(
            container.get("livenessProbe"), f"{path}.livenessProbe", single_success=True
        )
        errs += _validate_probe(
            container.get("readinessProbe"), f"{path}.readinessProbe", single_success=False
        )
        errs += _validate_probe(
            container.get("startupProbe"), f"{path}.startupProbe", single_success=True
        )
        if container.get("restartPolicy") is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.restartPolicy", "may not be set for non-init containers"
                )
            )
    policy = as_str(container.get("terminationMessagePolicy"))
    if not policy:
        errs.append(
            FieldError.required(
                f"{path}.terminationMessagePolicy", "must be 'File' or 'FallbackToLogsOnError'"
            )
        )
    elif policy not in ("File", "FallbackToLogsOnError"):
        errs.append(
            FieldError.not_supported(
                f"{path}.terminationMessagePolicy", policy, ("File", "FallbackToLogsOnError")
            )
        )
    errs += _validate_container_ports(as_list(container.get("ports")), f"{path}.ports")
    errs += _validate_env(as_list(container.get("env")), f"{path}.env")
    errs += _validate_volume_mounts(
        as_list(container.get("volumeMounts")), volumes, f"{path}.volumeMounts"
    )
    pull = as_str(container.get("imagePullPolicy"))
    if not pull:
        errs.append(FieldError.required(f"{path}.imagePullPolicy", ""))
    elif pull not in ("Always", "IfNotPresent", "Never"):
        errs.append(
            FieldError.not_supported(
                f"{path}.imagePullPolicy", pull, ("Always", "IfNotPresent", "Never")
            )
        )
    errs += _validate_resources(as_dict(container.get("resources")), f"{path}.resources")
    return errs


_TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _validate_tolerations(tolerations: list[Any], path: str) -> Errors:
    errs: Errors = []
    for i, toleration in enumerate(tolerations):
        toleration = as_dict(toleration)
        at = f"{path}[{i}]"
        key = as_str(toleration.get("key"))
        operator = as_str(toleration.get("operator"))
        effect = as_str(toleration.get("effect"))
        if key:
            errs += _each(is_qualified_name(key), f"{at}.key", key)
        if not key and operator != "Exists":
            errs.append(
                FieldError.invalid(
                    f"{at}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(
                FieldError.invalid(
                    f"{at}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        value = as_str(toleration.get("value"))
        if operator in ("Equal", ""):
            problems = is_valid_label_value(value)
            if problems:
                errs.append(FieldError.invalid(f"{at}.operator", value, ";".join(problems)))
        elif operator == "Exists":
            if value:
                errs.append(
                    FieldError.invalid(
                        f"{at}.operator",
                        _go_json(toleration),
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errs.append(FieldError.not_supported(f"{at}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _TOLERATION_EFFECTS:
            errs.append(FieldError.not_supported(f"{at}.effect", effect, _TOLERATION_EFFECTS))
    return errs


def validate_pod_spec(
    spec: Mapping[str, Any], path: str, extra_volumes: Iterable[str] = ()
) -> list[FieldError]:
    """ValidatePodSpec: volumes, containers, policies and names of a pod or pod template.

    `extra_volumes` are further names mounts may refer to (a StatefulSet's claim templates).
    """
    volumes, errs = _validate_volumes(as_list(spec.get("volumes")), f"{path}.volumes")
    volumes.update(extra_volumes)
    containers = as_list(spec.get("containers"))
    names: set[str] = set()
    if not containers:
        errs.append(FieldError.required(f"{path}.containers", ""))
    for i, container in enumerate(containers):
        at = f"{path}.containers[{i}]"
        errs += _validate_container(as_dict(container), volumes, at, regular=True)
        name = as_str(as_dict(container).get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{at}.name", name))
        names.add(name)
    for i, container in enumerate(as_list(spec.get("initContainers"))):
        at = f"{path}.initContainers[{i}]"
        errs += _validate_container(as_dict(container), volumes, at, regular=False)
        name = as_str(as_dict(container).get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{at}.name", name))
        names.add(name)
    for i, container in enumerate(as_list(spec.get("ephemeralContainers"))):
        at = f"{path}.ephemeralContainers[{i}]"
        errs += _validate_container(as_dict(container), volumes, at, regular=False)
    restart = as_str(spec.get("restartPolicy"))
    if not restart:
        errs.append(FieldError.required(f"{path}.restartPolicy", ""))
    elif restart not in ("Always", "OnFailure", "Never"):
        errs.append(
            FieldError.not_supported(
                f"{path}.restartPolicy", restart, ("Always", "OnFailure", "Never")
            )
        )
    dns = as_str(spec.get("dnsPolicy"))
    dns_policies = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    if not dns:
        errs.append(FieldError.required(f"{path}.dnsPolicy", ""))
    elif dns not in dns_policies:
        errs.append(FieldError.not_supported(f"{path}.dnsPolicy", dns, dns_policies))
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for key, rule in (
        ("serviceAccountName", is_dns1123_subdomain),
        ("nodeName", is_dns1123_subdomain),
    ):
        value = as_str(spec.get(key))
        if value:
            errs += _each(rule(value), f"{path}.{key}", value)
    deadline = as_int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= INT32_MAX:
        errs.append(
            FieldError.invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                f"must be between 1 and {INT32_MAX}, inclusive",
            )
        )
    for key in ("hostname", "subdomain"):
        value = as_str(spec.get(key))
        if value:
            errs += _each(is_dns1123_label(value), f"{path}.{key}", value)
    errs += _validate_tolerations(as_list(spec.get("tolerations")), f"{path}.tolerations")
    priority_class = as_str(spec.get("priorityClassName"))
    if priority_class:
        errs += _each(
            is_dns1123_subdomain(priority_class), f"{path}.priorityClassName", priority_class
        )
    return errs


def validate_pod_template(
    template: Mapping[str, Any], path: str, extra_volumes: Iterable[str] = ()
) -> list[FieldError]:
    """ValidatePodTemplateSpec at `path` (e.g. `spec.template`); note the server reports the
    template's labels at `<path>.labels`."""
    meta = as_dict(template.get("metadata"))
    errs = validate_labels(meta.get("labels"), f"{path}.labels")
    errs += validate_annotations(meta.get("annotations"), f"{path}.annotations")
    spec = as_dict(template.get("spec"))
    errs += validate_pod_spec(spec, f"{path}.spec", extra_volumes)
    if spec.get("ephemeralContainers"):
        errs.append(
            FieldError.forbidden(
                f"{path}.spec.ephemeralContainers",
                "ephemeral containers not allowed in pod template",
            )
        )
    return errs


def validate_pod(obj: Obj) -> list[FieldError]:
    """A new Pod."""
    spec = as_dict(obj.get("spec"))
    errs = validate_pod_spec(spec, "spec")
    if spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(
            FieldError.forbidden(
                "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
            )
        )
    return errs


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _without_images(containers: Any) -> list[Any]:
    return [{**c, "image": None} if isinstance(c, dict) else c for c in as_list(containers)]


def _toleration_key(toleration: Any) -> Any:
    return {k: v for k, v in as_dict(toleration).items() if k != "tolerationSeconds"}


def validate_pod_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Pod: only images, the deadline, added tolerations, the grace period
    and scheduling gates may change. (Assigning a node to an unassigned pod is let through:
    a binding writes it the same way.)"""
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict(old.get("spec"))
    errs: Errors = []
    for key in ("containers", "initContainers"):
        new_list, old_list = as_list(spec.get(key)), as_list(old_spec.get(key))
        if len(new_list) != len(old_list):
            return [
                FieldError.forbidden(f"spec.{key}", "pod updates may not add or remove containers")
            ]
        for i, container in enumerate(new_list):
            if not as_str(as_dict(container).get("image")):
                errs.append(FieldError.required(f"spec.{key}[{i}].image", ""))
    errs += validate_pod_spec(spec, "spec")
    deadline = as_int(spec.get("activeDeadlineSeconds"))
    old_deadline = as_int(old_spec.get("activeDeadlineSeconds"))
    if deadline is not None:
        if old_deadline is not None and old_deadline < deadline:
            errs.append(
                FieldError.invalid(
                    "spec.activeDeadlineSeconds",
                    deadline,
                    "must be less than or equal to previous value",
                )
            )
    elif old_deadline is not None:
        errs.append(
            FieldError.invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    new_tolerations = [_toleration_key(t) for t in as_list(spec.get("tolerations"))]
    for toleration in as_list(old_spec.get("tolerations")):
        if _toleration_key(toleration) not in new_tolerations:
            errs.append(
                FieldError.forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            break
    munged = dict(spec)
    for key in ("containers", "initContainers"):
        munged[key] = _without_images(spec.get(key))
    old_munged = dict(old_spec)
    for key in ("containers", "initContainers"):
        old_munged[key] = _without_images(old_spec.get(key))
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates", "ephemeralContainers"):
        munged.pop(key, None)
        old_munged.pop(key, None)
    grace, old_grace = (
        spec.get("terminationGracePeriodSeconds"),
        old_spec.get("terminationGracePeriodSeconds"),
    )
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if not old_spec.get("nodeName"):
        munged.pop("nodeName", None)
    if not semantic_equal(munged, old_munged):
        errs.append(FieldError.forbidden("spec", _POD_UPDATE_FORBIDDEN))
    old_qos = as_str(as_dict(old.get("status")).get("qosClass"))
    qos = as_str(as_dict(obj.get("status")).get("qosClass"))
    if old_qos and qos != old_qos:
        errs.append(immutable("status.qosClass", qos))
    return errs


def validate_pod_template_object(obj: Obj) -> list[FieldError]:
    """A PodTemplate object."""
    return validate_pod_template(as_dict(obj.get("template")), "template")


def validate_pod_template_object_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a PodTemplate object."""
    return validate_pod_template_object(obj)


# -- workloads -------------------------------------------------------------------------------


def _template_mismatch(spec: Obj) -> FieldError:
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    return FieldError.invalid(
        "spec.template.metadata.labels",
        go_string_map(labels if isinstance(labels, Mapping) else None),
        _SELECTOR_MISMATCH,
    )


def _template_labels(spec: Obj) -> Any:
    return as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")


def _validate_selector_and_template(spec: Obj, kind: str) -> tuple[Errors, bool]:
    """The selector rules of Deployments, ReplicaSets and StatefulSets: required, not empty,
    convertible, and (unless it selects everything) matching the template's labels. Returns
    the errors and whether the selector converts."""
    errs: Errors = []
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError.required("spec.selector", ""))
    else:
        errs += validate_label_selector(selector, "spec.selector")
        if _selector_is_empty(selector):
            errs.append(
                FieldError.invalid(
                    "spec.selector",
                    go_label_selector(as_dict(selector)),
                    f"empty selector is invalid for {kind}",
                )
            )
    if not _selector_parses(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector", go_label_selector(as_dict(selector)), "invalid label selector"
            )
        )
        return errs, False
    # A null selector selects nothing, so it never matches the template.
    everything = selector is not None and _selector_is_empty(selector)
    if not everything and not label_selector_matches(selector, _template_labels(spec)):
        errs.append(_template_mismatch(spec))
    return errs, True


def _validate_template_restart_always(spec: Obj, kind: str, *, forbidden: bool = True) -> Errors:
    template_spec = as_dict(as_dict(spec.get("template")).get("spec"))
    errs: Errors = []
    restart = as_str(template_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(
            FieldError.not_supported("spec.template.spec.restartPolicy", restart, ("Always",))
        )
    if template_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            FieldError.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errs


_PERCENT_FMT = "[0-9]+%"
_PERCENT_RE = re.compile(r"^[0-9]+%$")
_PERCENT_MSG = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'",
    _PERCENT_FMT,
    "1%",
    "93%",
)


def _validate_int_or_percent(value: Any, path: str) -> Errors:
    if isinstance(value, str):
        if not _PERCENT_RE.match(value):
            return [FieldError.invalid(path, _go_int_or_string(value), _PERCENT_MSG)]
        return []
    return _nonnegative(path, value)


def _int_or_percent_value(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT_RE.match(value) else 0
    return as_int(value) or 0


def _validate_rolling_update(rolling: Obj, path: str, *, daemon: bool = False) -> Errors:
    unavailable = rolling.get("maxUnavailable")
    surge = rolling.get("maxSurge")
    errs = _validate_int_or_percent(unavailable, f"{path}.maxUnavailable")
    errs += _validate_int_or_percent(surge, f"{path}.maxSurge")
    if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
        detail = "cannot be 0 when maxSurge is 0" if daemon else "may not be 0 when `maxSurge` is 0"
        errs.append(
            FieldError.invalid(f"{path}.maxUnavailable", _go_int_or_string(unavailable), detail)
        )
    if (
        isinstance(unavailable, str)
        and _PERCENT_RE.match(unavailable)
        and int(unavailable[:-1]) > 100
    ):
        errs.append(
            FieldError.invalid(
                f"{path}.maxUnavailable",
                _go_int_or_string(unavailable),
                "must not be greater than 100%",
            )
        )
    return errs


def _go_strategy(go_type: str, rolling_type: str, strategy: Obj, rolling_key: str) -> GoValue:
    rolling = (
        f"(*{rolling_type})(nil)"
        if strategy.get(rolling_key) is None
        else f"(*{rolling_type})(...)"
    )
    return GoValue(f"{go_type}{{Type:{_go_str(strategy.get('type'))}, RollingUpdate:{rolling}}}")


def _validate_replicas(spec: Obj) -> Errors:
    return _nonnegative("spec.replicas", spec.get("replicas")) + _nonnegative(
        "spec.minReadySeconds", spec.get("minReadySeconds")
    )


def validate_deployment(obj: Obj) -> list[FieldError]:
    """ValidateDeploymentSpec."""
    spec = as_dict(obj.get("spec"))
    errs = _nonnegative("spec.replicas", spec.get("replicas"))
    selector_errs, ok = _validate_selector_and_template(spec, "deployment")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
        errs += _validate_template_restart_always(spec, "ReplicaSet")
    strategy = as_dict(spec.get("strategy"))
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errs.append(
                FieldError.forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            errs.append(
                FieldError.required(
                    "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                )
            )
        else:
            errs += _validate_rolling_update(rolling, "spec.strategy.rollingUpdate")
    else:
        errs.append(
            FieldError.not_supported(
                "spec.strategy",
                _go_strategy(
                    "apps.DeploymentStrategy",
                    "apps.RollingUpdateDeployment",
                    strategy,
                    "rollingUpdate",
                ),
                ("Recreate", "RollingUpdate"),
            )
        )
    errs += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += _nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = as_int(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        if deadline <= 0:
            errs.append(FieldError.invalid("spec.progressDeadlineSeconds", deadline, _NOT_POSITIVE))
        if deadline <= (as_int(spec.get("minReadySeconds")) or 0):
            errs.append(
                FieldError.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    return errs


def _selector_immutable(obj: Obj, old: Obj) -> Errors:
    selector = as_dict(obj.get("spec")).get("selector")
    old_selector = as_dict(old.get("spec")).get("selector")
    if not semantic_equal(selector, old_selector):
        value = go_label_selector(selector if isinstance(selector, Mapping) else None)
        return [immutable("spec.selector", value)]
    return []


def validate_deployment_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Deployment: the selector is fixed."""
    return validate_deployment(obj) + _selector_immutable(obj, old)


def validate_replicaset(obj: Obj) -> list[FieldError]:
    """ValidateReplicaSetSpec."""
    spec = as_dict(obj.get("spec"))
    errs = _validate_replicas(spec)
    # The server words the empty-selector error for ReplicaSets as for Deployments.
    selector_errs, ok = _validate_selector_and_template(spec, "deployment")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
        errs += _validate_template_restart_always(spec, "ReplicaSet")
    return errs


def validate_replicaset_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ReplicaSet: the selector is fixed."""
    return validate_replicaset(obj) + _selector_immutable(obj, old)


def validate_replication_controller(obj: Obj) -> list[FieldError]:
    """ValidateReplicationControllerSpec (selectors are plain label maps)."""
    spec = as_dict(obj.get("spec"))
    errs = _validate_replicas(spec)
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
        errs.append(
            FieldError.invalid(
                "spec.template.metadata.labels",
                go_string_map(labels if isinstance(labels, Mapping) else None),
                _SELECTOR_MISMATCH,
            )
        )
    errs += validate_pod_template(template, "spec.template")
    errs += _validate_template_restart_always(spec, "ReplicationController")
    return errs


def validate_replication_controller_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ReplicationController."""
    return validate_replication_controller(obj)


def _claim_template_names(spec: Obj) -> list[str]:
    return [
        as_str(as_dict(as_dict(claim).get("metadata")).get("name"))
        for claim in as_list(spec.get("volumeClaimTemplates"))
    ]


def validate_statefulset(obj: Obj) -> list[FieldError]:
    """ValidateStatefulSetSpec (mounts may also name the volume claim templates)."""
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    policy = as_str(spec.get("podManagementPolicy"))
    if not policy:
        errs.append(FieldError.required("spec.podManagementPolicy", ""))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(
            FieldError.invalid(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    strategy = as_dict(spec.get("updateStrategy"))
    kind = as_str(strategy.get("type"))
    if not kind:
        errs.append(FieldError.required("spec.updateStrategy", ""))
    elif kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(
                FieldError.invalid(
                    "spec.updateStrategy.rollingUpdate",
                    _go_json(strategy["rollingUpdate"]),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif kind == "RollingUpdate":
        rolling = as_dict(strategy.get("rollingUpdate"))
        errs += _nonnegative(
            "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition")
        )
    else:
        errs.append(
            FieldError.invalid(
                "spec.updateStrategy",
                _go_strategy(
                    "apps.StatefulSetUpdateStrategy",
                    "apps.RollingUpdateStatefulSetStrategy",
                    strategy,
                    "rollingUpdate",
                ),
                "must be 'RollingUpdate' or 'OnDelete'",
            )
        )
    retention = as_dict(spec.get("persistentVolumeClaimRetentionPolicy"))
    for key in ("whenDeleted", "whenScaled"):
        value = as_str(retention.get(key))
        if value and value not in ("Retain", "Delete"):
            errs.append(
                FieldError.not_supported(
                    f"spec.persistentVolumeClaimRetentionPolicy.{key}", value, ("Retain", "Delete")
                )
            )
    ordinals = as_dict(spec.get("ordinals"))
    errs += _nonnegative("spec.ordinals.start", ordinals.get("start"))
    errs += _validate_replicas(spec)
    selector_errs, ok = _validate_selector_and_template(spec, "statefulset")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(
            as_dict(spec.get("template")), "spec.template", _claim_template_names(spec)
        )
    errs += _validate_template_restart_always(spec, "StatefulSet")
    return errs


_STS_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
    "revisionHistoryLimit",
)


def validate_statefulset_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a StatefulSet: only some spec fields may change."""
    errs = validate_statefulset(obj)
    spec = {k: v for k, v in as_dict(obj.get("spec")).items() if k not in _STS_MUTABLE}
    old_spec = {k: v for k, v in as_dict(old.get("spec")).items() if k not in _STS_MUTABLE}
    if not semantic_equal(spec, old_spec):
        errs.append(
            FieldError.forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                "'minReadySeconds' are forbidden",
            )
        )
    return errs


def validate_daemonset(obj: Obj) -> list[FieldError]:
    """ValidateDaemonSetSpec."""
    spec = as_dict(obj.get("spec"))
    selector = spec.get("selector")
    errs = validate_label_selector(selector, "spec.selector")
    if _selector_parses(selector) and not (
        _selector_is_empty(selector) or label_selector_matches(selector, _template_labels(spec))
    ):
        errs.append(_template_mismatch(spec))
    if selector is not None and _selector_is_empty(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector",
                go_label_selector(as_dict(selector)),
                "empty selector is invalid for daemonset",
            )
        )
    errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
    errs += _validate_template_restart_always(spec, "DaemonSet")
    errs += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += _nonnegative("spec.templateGeneration", spec.get("templateGeneration"))
    strategy = as_dict(spec.get("updateStrategy"))
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            errs.append(FieldError.required("spec.updateStrategy.rollingUpdate", ""))
        else:
            errs += _validate_rolling_update(
                rolling, "spec.updateStrategy.rollingUpdate", daemon=True
            )
    elif kind != "OnDelete":
        errs.append(
            FieldError.not_supported(
                "spec.updateStrategy",
                _go_strategy(
                    "apps.DaemonSetUpdateStrategy",
                    "apps.RollingUpdateDaemonSet",
                    strategy,
                    "rollingUpdate",
                ),
                ("RollingUpdate", "OnDelete"),
            )
        )
    errs += _nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    return errs


def validate_daemonset_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a DaemonSet: the selector is fixed."""
    return validate_daemonset(obj) + _selector_immutable(obj, old)


# -- batch -----------------------------------------------------------------------------------

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def _validate_job_spec(spec: Obj, prefix: str) -> Errors:
    errs: Errors = []
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        errs += _nonnegative(f"{prefix}.{key}", spec.get(key))
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        errs.append(
            FieldError.required(
                f"{prefix}.backoffLimitPerIndex", "when maxFailedIndexes is specified"
            )
        )
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(
                FieldError.not_supported(
                    f"{prefix}.completionMode", mode, ("NonIndexed", "Indexed")
                )
            )
        if mode == "Indexed" and spec.get("completions") is None:
            errs.append(
                FieldError.required(f"{prefix}.completions", "when completion mode is Indexed")
            )
    if mode in (None, "NonIndexed"):
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                errs.append(
                    FieldError.invalid(
                        f"{prefix}.{key}", spec[key], "requires indexed completion mode"
                    )
                )
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = (
            ("Failed",)
            if spec.get("podFailurePolicy") is not None
            else (
                "Failed",
                "TerminatingOrFailed",
            )
        )
        if replacement not in allowed:
            errs.append(
                FieldError.not_supported(f"{prefix}.podReplacementPolicy", replacement, allowed)
            )
    template = as_dict(spec.get("template"))
    errs += validate_pod_template(template, f"{prefix}.template")
    restart = as_str(as_dict(template.get("spec")).get("restartPolicy"))
    at = f"{prefix}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        errs.append(FieldError.required(at, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(FieldError.not_supported(at, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(
            FieldError.invalid(
                at, restart, 'only "Never" is supported when podFailurePolicy is specified'
            )
        )
    return errs


def _has_label(meta: Obj, path: str, key: str, value: str) -> Errors:
    labels = as_dict(meta.get("labels"))
    if key not in labels:
        return [FieldError.required(f"{path}.labels[{key}]", f"must be '{value}'")]
    if labels[key] != value:
        return [
            FieldError.invalid(f"{path}.labels[{key}]", go_string_map(labels), f"must be '{value}'")
        ]
    return []


def validate_job(obj: Obj) -> list[FieldError]:
    """ValidateJob: generated selector and labels, the spec, and the indexed pod names."""
    meta = as_dict(obj.get("metadata"))
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    selector = spec.get("selector")
    if spec.get("manualSelector") is not True and selector is not None:
        uid = as_str(meta.get("uid"))
        name = as_str(meta.get("name"))
        if not uid:
            errs.append(FieldError.required("metadata.uid", ""))
        template_meta = as_dict(as_dict(spec.get("template")).get("metadata"))
        at = "spec.template.metadata"
        errs += _has_label(template_meta, at, "controller-uid", uid)
        errs += _has_label(template_meta, at, "job-name", name)
        errs += _has_label(template_meta, at, "batch.kubernetes.io/controller-uid", uid)
        errs += _has_label(template_meta, at, "batch.kubernetes.io/job-name", name)
        expected = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        if _selector_parses(selector) and not label_selector_matches(selector, expected):
            errs.append(
                FieldError.invalid(
                    "spec.selector",
                    go_label_selector(as_dict(selector)),
                    "`selector` not auto-generated",
                )
            )
    errs += _validate_job_spec(spec, "spec")
    if selector is None:
        errs.append(FieldError.required("spec.selector", ""))
    else:
        errs += validate_label_selector(selector, "spec.selector")
    if _selector_parses(selector) and not (
        _selector_is_empty(selector) or label_selector_matches(selector, _template_labels(spec))
    ):
        errs.append(_template_mismatch(spec))
    completions = as_int(spec.get("completions"))
    if spec.get("completionMode") == "Indexed" and completions and completions > 0:
        hostname = f"{as_str(meta.get('name'))}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(
                FieldError.invalid(
                    "metadata.name",
                    as_str(meta.get("name")),
                    f"will not able to create pod with invalid DNS label: {hostname}",
                )
            )
    return errs


def validate_job_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Job: selector, template, completion mode and policies are fixed;
    completions may change only with parallelism on indexed jobs."""
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict(old.get("spec"))
    errs = validate_job(obj)
    completions, old_completions = spec.get("completions"), old_spec.get("completions")
    if completions != old_completions:
        if spec.get("completionMode") != "Indexed":
            errs.append(immutable("spec.completions", completions))
        elif completions is not None and completions != spec.get("parallelism"):
            errs.append(
                FieldError.invalid(
                    "spec.completions",
                    completions,
                    "can only be modified in tandem with spec.parallelism",
                )
            )
    errs += _selector_immutable(obj, old)
    template, old_template = spec.get("template"), old_spec.get("template")
    suspended = old_spec.get("suspend") is True and not as_dict(old.get("status")).get("startTime")
    if suspended:
        # A suspended job that never ran may still move between nodes and gain labels.
        mutable = ("nodeSelector", "tolerations", "schedulingGates", "affinity")
        template = {
            **as_dict(template),
            "metadata": {},
            "spec": {
                k: v for k, v in as_dict(as_dict(template).get("spec")).items() if k not in mutable
            },
        }
        old_template = {
            **as_dict(old_template),
            "metadata": {},
            "spec": {
                k: v
                for k, v in as_dict(as_dict(old_template).get("spec")).items()
                if k not in mutable
            },
        }
    if not semantic_equal(template, old_template):
        errs.append(immutable("spec.template", _go_json(spec.get("template"))))
    for key in (
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        if not semantic_equal(spec.get(key), old_spec.get(key)):
            value = spec.get(key)
            errs.append(
                immutable(f"spec.{key}", _go_json(value) if isinstance(value, dict) else value)
            )
    return errs


# robfig/cron (the standard five-field parser): each field's bounds and names.
_CRON_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (
        1,
        12,
        {
            m: i + 1
            for i, m in enumerate(
                ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
            )
        },
    ),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
_DESCRIPTORS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_GO_DURATION_RE = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^[-+]?0$")


def _cron_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if number < 0:
        raise ValueError(f"negative number ({number}) not allowed: {text}")
    return number


def _cron_value(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    return _cron_int(text)


def _cron_range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_value(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _cron_value(low_high[1], names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if len(low_high) == 1:
            end = high
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < low:
        raise ValueError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ValueError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def cron_schedule_error(schedule: str) -> str | None:
    """Why a CronJob schedule does not parse (the cron library's message), or None.

    Accepts five fields, month and weekday names, ranges, steps, lists and the descriptors
    @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and `@every <duration>`.
    """
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        _, _, spec = spec.partition(" ")
        spec = spec.strip()
    if not spec:
        return "empty spec string"
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            duration = spec[len("@every ") :]
            if _GO_DURATION_RE.match(duration):
                return None
            return f"failed to parse duration {spec}: time: invalid duration {_go_str(duration)}"
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for text, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
            for expr in (p for p in text.split(",") if p):
                _cron_range(expr, low, high, names)
    except ValueError as exc:
        return str(exc)
    return None


_TIME_ZONE_PART_RE = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _validate_cronjob(obj: Obj, old: Obj | None) -> Errors:
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict(old.get("spec")) if old is not None else None
    errs: Errors = []
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        errs.append(FieldError.required("spec.schedule", ""))
    else:
        problem = cron_schedule_error(schedule)
        if problem:
            errs.append(FieldError.invalid("spec.schedule", schedule, problem))
        allow_tz = old_spec is not None and "TZ" in as_str(old_spec.get("schedule"))
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(
                FieldError.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                )
            )
        elif not allow_tz and "TZ" in schedule:
            errs.append(
                FieldError.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
            )
    errs += _nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    zone = spec.get("timeZone")
    if isinstance(zone, str) and (old_spec is None or old_spec.get("timeZone") != zone):
        if not zone:
            errs.append(
                FieldError.invalid(
                    "spec.timeZone", zone, "timeZone must be nil or non-empty string"
                )
            )
        elif any(
            p in (".", "..") or p.startswith("-") or not _TIME_ZONE_PART_RE.match(p)
            for p in zone.split("/")
        ):
            errs.append(FieldError.invalid("spec.timeZone", zone, f"unknown time zone {zone}"))
        elif zone.lower() == "local":
            errs.append(
                FieldError.invalid(
                    "spec.timeZone",
                    zone,
                    "timeZone must be an explicit time zone as defined in "
                    "https://www.iana.org/time-zones",
                )
            )
    policy = as_str(spec.get("concurrencyPolicy"))
    if not policy:
        errs.append(FieldError.required("spec.concurrencyPolicy", ""))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(
            FieldError.not_supported(
                "spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")
            )
        )
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    errs += _validate_job_spec(job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        errs.append(
            FieldError.invalid(
                "spec.jobTemplate.spec.selector",
                go_label_selector(as_dict(job_spec["selector"])),
                "`selector` will be auto-generated",
            )
        )
    if job_spec.get("manualSelector") is True:
        errs.append(
            FieldError.not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false"))
        )
    errs += _nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    errs += _nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"))
    return errs


def validate_cronjob(obj: Obj) -> list[FieldError]:
    """A new CronJob (names are limited to 52 characters: jobs add an 11-character suffix)."""
    errs = _validate_cronjob(obj, None)
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    if len(name) > 52:
        errs.append(FieldError.invalid("metadata.name", name, "must be no more than 52 characters"))
    return errs


def validate_cronjob_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a CronJob."""
    return _validate_cronjob(obj, old)


# -- services --------------------------------------------------------------------------------

_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _go_service_port(port: Obj) -> GoValue:
    return GoValue(
        'core.ServicePort{Name:"", Protocol:'
        f"{_go_str(port.get('protocol'))}, AppProtocol:(*string)(nil), "
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
            errs += _each(is_dns1123_subdomain(external.rstrip(".")), "spec.externalName", external)
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
            errs += _each(is_dns1123_label(name), f"{at}.name", name)
            if name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            names.add(name)
        number = as_int(port.get("port"))
        if number is None or not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{at}.port", number or 0, _PORT_RANGE))
        protocol = as_str(port.get("protocol"))
        if not protocol:
            errs.append(FieldError.required(f"{at}.protocol", ""))
        elif protocol not in _PROTOCOLS:
            errs.append(FieldError.not_supported(f"{at}.protocol", protocol, _PROTOCOLS))
        errs += _validate_port_num_or_name(port.get("targetPort"), f"{at}.targetPort")
        app_protocol = port.get("appProtocol")
        if isinstance(app_protocol, str):
            errs += _each(is_qualified_name(app_protocol), f"{at}.appProtocol", app_protocol)
        node_port = as_int(port.get("nodePort")) or 0
        if node_port and kind == "ClusterIP":
            errs.append(
                FieldError.forbidden(f"{at}.nodePort", "may not be used when `type` is 'ClusterIP'")
            )
        elif node_port and not 1 <= node_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.nodePort", node_port, _PORT_RANGE))
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
        errs += _each(is_config_map_key(key), f"data[{key}]", key)
        if key in binary:
            errs.append(
                FieldError.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
            )
        total += len(value.encode()) if isinstance(value, str) else 0
    for key, value in binary.items():
        errs += _each(is_config_map_key(key), f"binaryData[{key}]", key)
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
        errs += _each(is_config_map_key(key), f"data[{key}]", key)
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


# -- namespaces, leases ----------------------------------------------------------------------


def validate_namespace(obj: Obj) -> list[FieldError]:
    """Namespace spec finalizers are finalizer names."""
    finalizers = as_list(as_dict(obj.get("spec")).get("finalizers"))
    errs: Errors = []
    for name in finalizers:
        if isinstance(name, str):
            errs += _each(is_qualified_name(name), "spec.finalizers", name)
    errs += validate_builtin_finalizers(finalizers, "spec.finalizers")
    return errs


def validate_namespace_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Namespace."""
    return validate_namespace(obj)


def validate_lease(obj: Obj) -> list[FieldError]:
    """ValidateLeaseSpec: a positive duration and non-negative transitions."""
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    duration = as_int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(
            FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    errs += _nonnegative("spec.leaseTransitions", spec.get("leaseTransitions"))
    return errs


def validate_lease_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Lease."""
    return validate_lease(obj)


# -- RBAC ------------------------------------------------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"


def _validate_rules(rules: list[Any], namespaced: bool) -> Errors:
    errs: Errors = []
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        at = f"rules[{i}]"
        if not as_list(rule.get("verbs")):
            errs.append(FieldError.required(f"{at}.verbs", "verbs must contain at least one value"))
        urls = as_list(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errs.append(
                    FieldError.invalid(
                        f"{at}.nonResourceURLs",
                        go_string_slice(urls),
                        "namespaced rules cannot apply to non-resource URLs",
                    )
                )
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                errs.append(
                    FieldError.invalid(
                        f"{at}.nonResourceURLs",
                        go_string_slice(urls),
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not as_list(rule.get("apiGroups")):
            errs.append(
                FieldError.required(
                    f"{at}.apiGroups", "resource rules must supply at least one api group"
                )
            )
        if not as_list(rule.get("resources")):
            errs.append(
                FieldError.required(
                    f"{at}.resources", "resource rules must supply at least one resource"
                )
            )
    return errs


def validate_role(obj: Obj) -> list[FieldError]:
    """A Role: every rule names verbs and resources (non-resource URLs are cluster-wide)."""
    return _validate_rules(as_list(obj.get("rules")), namespaced=True)


def validate_role_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Role."""
    return validate_role(obj)


def validate_cluster_role(obj: Obj) -> list[FieldError]:
    """A ClusterRole: rules as for roles, and an aggregation rule with selectors."""
    errs = _validate_rules(as_list(obj.get("rules")), namespaced=False)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = as_list(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(
                FieldError.required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
    return errs


def validate_cluster_role_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ClusterRole."""
    return validate_cluster_role(obj)


def _validate_binding(obj: Obj, namespaced: bool) -> Errors:
    errs: Errors = []
    ref = as_dict(obj.get("roleRef"))
    if ref.get("apiGroup") != RBAC_GROUP:
        errs.append(
            FieldError.not_supported("roleRef.apiGroup", as_str(ref.get("apiGroup")), (RBAC_GROUP,))
        )
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        errs.append(FieldError.not_supported("roleRef.kind", as_str(ref.get("kind")), kinds))
    name = as_str(ref.get("name"))
    if not name:
        errs.append(FieldError.required("roleRef.name", ""))
    else:
        errs += _each(is_path_segment_name(name), "roleRef.name", name)
    for i, subject in enumerate(as_list(obj.get("subjects"))):
        subject = as_dict(subject)
        at = f"subjects[{i}]"
        subject_name = as_str(subject.get("name"))
        if not subject_name:
            errs.append(FieldError.required(f"{at}.name", ""))
        kind = subject.get("kind")
        group = as_str(subject.get("apiGroup"))
        if kind == "ServiceAccount":
            if subject_name:
                errs += _each(is_dns1123_subdomain(subject_name), f"{at}.name", subject_name)
            if group:
                errs.append(FieldError.not_supported(f"{at}.apiGroup", group, ("",)))
            if not namespaced and not subject.get("namespace"):
                errs.append(FieldError.required(f"{at}.namespace", ""))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                errs.append(FieldError.not_supported(f"{at}.apiGroup", group, (RBAC_GROUP,)))
        else:
            errs.append(
                FieldError.not_supported(
                    f"{at}.kind", as_str(kind), ("ServiceAccount", "User", "Group")
                )
            )
    return errs


def _role_ref_value(ref: Obj) -> GoValue:
    return GoValue(
        f"rbac.RoleRef{{APIGroup:{_go_str(ref.get('apiGroup'))}, Kind:{_go_str(ref.get('kind'))}, "
        f"Name:{_go_str(ref.get('name'))}}}"
    )


def _role_ref_fixed(obj: Obj, old: Obj) -> Errors:
    ref, old_ref = as_dict(obj.get("roleRef")), as_dict(old.get("roleRef"))
    if any(as_str(ref.get(k)) != as_str(old_ref.get(k)) for k in ("apiGroup", "kind", "name")):
        return [FieldError.invalid("roleRef", _role_ref_value(ref), "cannot change roleRef")]
    return []


def validate_role_binding(obj: Obj) -> list[FieldError]:
    """A RoleBinding: a Role or ClusterRole reference and well-formed subjects."""
    return _validate_binding(obj, namespaced=True)


def validate_role_binding_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a RoleBinding: the role reference is fixed."""
    return validate_role_binding(obj) + _role_ref_fixed(obj, old)


def validate_cluster_role_binding(obj: Obj) -> list[FieldError]:
    """A ClusterRoleBinding: a ClusterRole reference; service accounts need a namespace."""
    return _validate_binding(obj, namespaced=False)


def validate_cluster_role_binding_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ClusterRoleBinding: the role reference is fixed."""
    return validate_cluster_role_binding(obj) + _role_ref_fixed(obj, old)


# -- CustomResourceDefinitions ---------------------------------------------------------------

_PRINTER_TYPES = ("boolean", "date", "integer", "number", "string")
_PRINTER_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


def _go_bool(value: Any) -> str:
    return "true" if value is True else "false"


def _go_versions(versions: list[Any]) -> GoValue:
    # Go prints the nested pointers as addresses; only the identifying fields are kept.
    items = ", ".join(
        "apiextensions.CustomResourceDefinitionVersion{"
        f"Name:{_go_str(as_dict(v).get('name'))}, Served:{_go_bool(as_dict(v).get('served'))}, "
        f"Storage:{_go_bool(as_dict(v).get('storage'))}, ...}}"
        for v in versions
    )
    return GoValue(f"[]apiextensions.CustomResourceDefinitionVersion{{{items}}}")


def _dns1035_joined(value: str) -> str:
    return ",".join(is_dns1035_label(value))


def _validate_crd_names(names: Obj) -> Errors:
    errs: Errors = []
    for key in ("plural", "singular", "kind", "listKind"):
        if not as_str(names.get(key)):
            errs.append(FieldError.required(f"spec.names.{key}", ""))
    for key in ("plural", "singular"):
        value = as_str(names.get(key))
        if value and is_dns1035_label(value):
            errs.append(FieldError.invalid(f"spec.names.{key}", value, _dns1035_joined(value)))
    for key in ("kind", "listKind"):
        value = as_str(names.get(key))
        if value and is_dns1035_label(value.lower()):
            errs.append(
                FieldError.invalid(
                    f"spec.names.{key}",
                    value,
                    "may have mixed case, but should otherwise match: "
                    + _dns1035_joined(value.lower()),
                )
            )
    for key in ("shortNames", "categories"):
        for i, value in enumerate(as_list(names.get(key))):
            if isinstance(value, str) and is_dns1035_label(value):
                errs.append(
                    FieldError.invalid(f"spec.names.{key}[{i}]", value, _dns1035_joined(value))
                )
    kind = as_str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errs.append(
            FieldError.invalid("spec.names.listKind", kind, "kind and listKind may not be the same")
        )
    return errs


def _validate_printer_columns(columns: list[Any], path: str) -> Errors:
    errs: Errors = []
    for i, column in enumerate(columns):
        column = as_dict(column)
        at = f"{path}[{i}]"
        if not as_str(column.get("name")):
            errs.append(FieldError.required(f"{at}.name", ""))
        kind = as_str(column.get("type"))
        if not kind:
            errs.append(
                FieldError.required(f"{at}.type", "must be one of " + ",".join(_PRINTER_TYPES))
            )
        elif kind not in _PRINTER_TYPES:
            errs.append(FieldError.not_supported(f"{at}.type", kind, _PRINTER_TYPES))
        fmt = as_str(column.get("format"))
        if fmt and fmt not in _PRINTER_FORMATS:
            errs.append(FieldError.not_supported(f"{at}.format", fmt, _PRINTER_FORMATS))
        if not as_str(column.get("jsonPath")):
            errs.append(FieldError.required(f"{at}.JSONPath", ""))
    return errs


def _validate_stored_versions(obj: Obj, versions: list[Any]) -> Errors:
    stored = as_list(as_dict(obj.get("status")).get("storedVersions"))
    if not stored:
        return [
            FieldError.invalid(
                "status.storedVersions",
                go_string_slice(stored or None),
                "must have at least one stored version",
            )
        ]
    errs: Errors = []
    remaining = {v: i for i, v in enumerate(stored) if isinstance(v, str)}
    for version in versions:
        name = as_str(as_dict(version).get("name"))
        if as_dict(version).get("storage") is True and name not in remaining:
            errs.append(
                FieldError.invalid(
                    "status.storedVersions",
                    _go_versions([version]),
                    f"must have the storage version {name}",
                )
            )
        remaining.pop(name, None)
    for name, i in sorted(remaining.items(), key=lambda item: item[1]):
        errs.append(
            FieldError.invalid(
                f"status.storedVersions[{i}]",
                name,
                f"missing from spec.versions; {name} was previously a storage version, and must "
                f"remain in spec.versions until a storage migration ensures no data remains "
                f"persisted in {name} and removes {name} from status.storedVersions",
            )
        )
    return errs


def validate_crd(obj: Obj) -> list[FieldError]:
    """A CustomResourceDefinition's names, group, scope and versions (the schemas are
    checked with the structural rules elsewhere)."""
    spec = as_dict(obj.get("spec"))
    names = as_dict(spec.get("names"))
    group = as_str(spec.get("group"))
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    errs: Errors = []
    if name and name != f"{as_str(names.get('plural'))}.{group}":
        errs.append(
            FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    if not group:
        errs.append(FieldError.required("spec.group", ""))
    elif is_dns1123_subdomain(group):
        errs.append(FieldError.invalid("spec.group", group, ",".join(is_dns1123_subdomain(group))))
    elif len(group.split(".")) < 2:
        errs.append(
            FieldError.invalid("spec.group", group, "should be a domain with at least one dot")
        )
    scope = as_str(spec.get("scope"))
    if not scope:
        errs.append(FieldError.required("spec.scope", ""))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(FieldError.not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = as_list(spec.get("versions"))
    if not versions:
        errs.append(
            FieldError.required(
                "spec.versions", "must have exactly one version marked as storage version"
            )
        )
    storage = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        version = as_dict(version)
        at = f"spec.versions[{i}]"
        version_name = as_str(version.get("name"))
        if version.get("storage") is True:
            storage += 1
        if version_name in seen:
            unique = False
        seen.add(version_name)
        if is_dns1035_label(version_name):
            errs.append(
                FieldError.invalid(f"{at}.name", version_name, _dns1035_joined(version_name))
            )
        errs += _validate_printer_columns(
            as_list(version.get("additionalPrinterColumns")), f"{at}.additionalPrinterColumns"
        )
    if versions and not unique:
        errs.append(
            FieldError.invalid(
                "spec.versions", _go_versions(versions), "must contain unique version names"
            )
        )
    if versions and storage != 1:
        errs.append(
            FieldError.invalid(
                "spec.versions",
                _go_versions(versions),
                "must have exactly one version marked as storage version",
            )
        )
    errs += _validate_crd_names(names)
    conversion = as_dict(spec.get("conversion"))
    strategy = as_str(conversion.get("strategy"))
    if not strategy:
        errs.append(FieldError.required("spec.conversion.strategy", ""))
    elif strategy not in ("None", "Webhook"):
        errs.append(
            FieldError.not_supported("spec.conversion.strategy", strategy, ("None", "Webhook"))
        )
    elif strategy == "Webhook":
        # Checked as apiextensions validates its internal type, whose field paths
        # (webhookClientConfig, conversionReviewVersions under spec.conversion) its messages
        # name.
        webhook = as_dict(conversion.get("webhook"))
        if webhook.get("clientConfig") is None:
            errs.append(
                FieldError.required(
                    "spec.conversion.webhookClientConfig",
                    "required when strategy is set to Webhook",
                )
            )
        else:
            errs += admission_configuration.validate_client_config(
                webhook["clientConfig"], "spec.conversion.webhookClientConfig"
            )
        errs += admission_configuration.validate_review_versions(
            as_list(webhook.get("conversionReviewVersions")),
            "spec.conversion.conversionReviewVersions",
            required="",
        )
    elif conversion.get("webhook") is not None:
        webhook = as_dict(conversion.get("webhook"))
        for field, present in (
            ("webhookClientConfig", webhook.get("clientConfig") is not None),
            ("conversionReviewVersions", bool(as_list(webhook.get("conversionReviewVersions")))),
        ):
            if present:
                errs.append(
                    FieldError.forbidden(
                        f"spec.conversion.{field}",
                        "should not be set when strategy is not set to Webhook",
                    )
                )
    errs += _validate_stored_versions(obj, versions)
    return errs


def _is_established(crd: Obj) -> bool:
    return any(
        as_dict(c).get("type") == "Established" and as_dict(c).get("status") == "True"
        for c in as_list(as_dict(crd.get("status")).get("conditions"))
    )


def validate_crd_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a CRD: group and plural are fixed; scope and kind too once established."""
    errs = validate_crd(obj)
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    names, old_names = as_dict(spec.get("names")), as_dict(old_spec.get("names"))
    if _is_established(old):
        if spec.get("scope") != old_spec.get("scope"):
            errs.append(immutable("spec.scope", as_str(spec.get("scope"))))
        if names.get("kind") != old_names.get("kind"):
            errs.append(immutable("spec.names.kind", as_str(names.get("kind"))))
    if spec.get("group") != old_spec.get("group"):
        errs.append(immutable("spec.group", as_str(spec.get("group"))))
    if names.get("plural") != old_names.get("plural"):
        errs.append(immutable("spec.names.plural", as_str(names.get("plural"))))
    return errs


def _on_update(create: CreateValidator) -> UpdateValidator:
    """The update check of kinds validated the same way on update as on create."""

    def validate(obj: Obj, old: Obj) -> Errors:
        return create(obj)

    return validate


VALIDATORS: dict[tuple[str, str], tuple[CreateValidator, UpdateValidator]] = {
    ("", "Pod"): (validate_pod, validate_pod_update),
    ("", "PodTemplate"): (validate_pod_template_object, validate_pod_template_object_update),
    ("", "ReplicationController"): (
        validate_replication_controller,
        validate_replication_controller_update,
    ),
    ("", "Service"): (validate_service, validate_service_update),
    ("", "ConfigMap"): (validate_config_map, validate_config_map_update),
    ("", "Secret"): (validate_secret, validate_secret_update),
    ("", "Namespace"): (validate_namespace, validate_namespace_update),
    ("apps", "Deployment"): (validate_deployment, validate_deployment_update),
    ("apps", "ReplicaSet"): (validate_replicaset, validate_replicaset_update),
    ("apps", "StatefulSet"): (validate_statefulset, validate_statefulset_update),
    ("apps", "DaemonSet"): (validate_daemonset, validate_daemonset_update),
    ("batch", "Job"): (validate_job, validate_job_update),
    ("batch", "CronJob"): (validate_cronjob, validate_cronjob_update),
    ("coordination.k8s.io", "Lease"): (validate_lease, validate_lease_update),
    (RBAC_GROUP, "Role"): (validate_role, validate_role_update),
    (RBAC_GROUP, "ClusterRole"): (validate_cluster_role, validate_cluster_role_update),
    (RBAC_GROUP, "RoleBinding"): (validate_role_binding, validate_role_binding_update),
    (RBAC_GROUP, "ClusterRoleBinding"): (
        validate_cluster_role_binding,
        validate_cluster_role_binding_update,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (validate_crd, validate_crd_update),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        admission_configuration.validate_mutating_webhooks,
        _on_update(admission_configuration.validate_mutating_webhooks),
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        admission_configuration.validate_validating_webhooks,
        _on_update(admission_configuration.validate_validating_webhooks),
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (
        admission_configuration.validate_admission_policy,
        _on_update(admission_configuration.validate_admission_policy),
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        admission_configuration.validate_admission_policy_binding,
        _on_update(admission_configuration.validate_admission_policy_binding),
    ),
}
