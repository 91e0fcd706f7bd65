"""Validation of Pods and PodTemplates (core/v1), and of the pod spec and pod template every
workload embeds: volumes, containers and their ports, environment, mounts, resources, probes
and lifecycle handlers, tolerations. Also the QoS class the server gives a new pod."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError, FieldErrorType
from kubeforge._api.machinery.names import (
    immutable,
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    validate_annotations,
    validate_labels,
)
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._apiserver.types.validation.common import (
    NEGATIVE,
    Errors,
    Obj,
    each,
    go_json,
    nonnegative,
    semantic_equal,
)

__all__ = [
    "INT32_MAX",
    "MIRROR_ANNOTATION",
    "PORT_RANGE",
    "PROTOCOLS",
    "pod_qos_class",
    "validate_pod",
    "validate_pod_spec",
    "validate_pod_status_update",
    "validate_pod_template",
    "validate_pod_template_object",
    "validate_pod_template_object_update",
    "validate_pod_update",
    "validate_port_num_or_name",
]

INT32_MAX = 2**31 - 1
PORT_RANGE = "must be between 1 and 65535, inclusive"
PROTOCOLS = ("SCTP", "TCP", "UDP")


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
_ENV_FIELD_RE = re.compile(r"^metadata\.(annotations|labels)\['[^']+'\]\Z")


def _validate_mode(source: Obj, path: str, key: str = "defaultMode") -> Errors:
    """A volume's `defaultMode`, or an item's `mode`: a file mode."""
    mode = as_int(source.get(key))
    if mode is not None and not 0 <= mode <= 0o777:
        return [FieldError.invalid(f"{path}.{key}", mode, _FILE_MODE)]
    return []


# -- paths inside a volume ---------------------------------------------------------------------
# Every path a pod names inside a volume (an item's file, a subPath, the token's file) stays
# below the volume: the kubelet writes and mounts them there. As validateLocalDescendingPath
# and ValidateLocalNonReservedPath (pkg/apis/core/validation/validation.go) check them.


def _local_descending_path(value: str, path: str) -> Errors:
    """Not absolute, and no `..` element."""
    errs: Errors = []
    if value.startswith("/"):
        errs.append(FieldError.invalid(path, value, "must be a relative path"))
    errs += _no_backsteps(value, path)
    return errs


def _no_backsteps(value: str, path: str) -> Errors:
    if ".." in value.split("/"):
        return [FieldError.invalid(path, value, "must not contain '..'")]
    return []


def _local_non_reserved_path(value: str, path: str) -> Errors:
    """A descending path that does not start with `..` either (the kubelet's atomic writer
    keeps its own `..data` and `..<timestamp>` entries there)."""
    errs = _local_descending_path(value, path)
    if value.startswith("..") and not value.startswith("../"):
        errs.append(FieldError.invalid(path, value, "must not start with '..'"))
    return errs


def _validate_key_to_path(item: Obj, path: str) -> Errors:
    """A ConfigMap's or Secret's key written to a file of the volume (validateKeyToPath)."""
    errs: Errors = []
    if not item.get("key"):
        errs.append(FieldError.required(f"{path}.key", ""))
    file = as_str(item.get("path"))
    if not file:
        errs.append(FieldError.required(f"{path}.path", ""))
    errs += _local_non_reserved_path(file, f"{path}.path")
    return errs + _validate_mode(item, path, "mode")


def _validate_items(source: Obj, path: str) -> Errors:
    errs: Errors = []
    for i, item in enumerate(as_list(source.get("items"))):
        errs += _validate_key_to_path(as_dict(item), f"{path}.items[{i}]")
    return errs


def _validate_downward_file(item: Obj, path: str) -> Errors:
    """A downward API file (validateDownwardAPIVolumeFile); `path` is the volume source's own,
    not the item's, as upstream reports it."""
    file = as_str(item.get("path"))
    errs = [FieldError.required(f"{path}.path", "")] if not file else []
    errs += _local_non_reserved_path(file, f"{path}.path")
    return errs + _validate_mode(item, path, "mode")


def _validate_projection_sources(source: Obj, path: str) -> Errors:
    """validateProjectionSources: each source's files, no path written twice, one kind of
    source per entry."""
    errs: Errors = []
    seen: set[str] = set()

    def claim(file: str, shown: Any) -> None:
        if file in seen:
            errs.append(FieldError.invalid(path, shown, "conflicting duplicate paths"))
        seen.add(file)

    for i, entry in enumerate(as_list(source.get("sources"))):
        entry = as_dict(entry)
        at = f"{path}.sources[{i}]"
        kinds = 0
        for kind in ("secret", "configMap"):
            ref = entry.get(kind)
            if ref is None:
                continue
            kinds += 1
            ref = as_dict(ref)
            if not ref.get("name"):
                errs.append(FieldError.required(f"{at}.{kind}.name", ""))
            for j, item in enumerate(as_list(ref.get("items"))):
                item = as_dict(item)
                errs += _validate_key_to_path(item, f"{at}.{kind}.items[{j}]")
                if item.get("path"):
                    claim(as_str(item["path"]), as_str(ref.get("name")))
        downward = entry.get("downwardAPI")
        if downward is not None:
            kinds += 1
            for item in as_list(as_dict(downward).get("items")):
                item = as_dict(item)
                errs += _validate_downward_file(item, f"{at}.downwardAPI")
                if item.get("path"):
                    claim(as_str(item["path"]), as_str(item["path"]))
        token = entry.get("serviceAccountToken")
        if token is not None:
            kinds += 1
            token = as_dict(token)
            seconds = as_int(token.get("expirationSeconds"))
            if seconds is not None and seconds < 600:
                errs.append(
                    FieldError.invalid(
                        f"{at}.serviceAccountToken.expirationSeconds",
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if seconds is not None and seconds > 1 << 32:
                errs.append(
                    FieldError.invalid(
                        f"{at}.serviceAccountToken.expirationSeconds",
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
            # Upstream reports the token's file at the projected volume's own path.
            file = as_str(token.get("path"))
            if not file:
                errs.append(FieldError.required(f"{path}.path", ""))
            else:
                errs += _local_non_reserved_path(file, f"{path}.path")
        bundle = entry.get("clusterTrustBundle")
        if bundle is not None:
            kinds += 1
            file = as_str(as_dict(bundle).get("path"))
            if not file:
                errs.append(FieldError.required(f"{at}.clusterTrustBundle.path", ""))
            errs += _local_non_reserved_path(file, f"{at}.clusterTrustBundle.path")
            claim(file, file)
        if kinds > 1:
            errs.append(
                FieldError.forbidden(at, "may not specify more than 1 volume type per source")
            )
    return errs


def _validate_volume_source(volume: Obj, kind: str, path: str) -> Errors:
    source = as_dict(volume.get(kind))
    at = f"{path}.{kind}"
    if kind == "secret":
        errs = []
        if not source.get("secretName"):
            errs.append(FieldError.required(f"{at}.secretName", ""))
        return errs + _validate_mode(source, at) + _validate_items(source, at)
    if kind == "configMap":
        errs = []
        name = as_str(source.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        else:
            errs += each(is_dns1123_subdomain(name), f"{at}.name", name)
        return errs + _validate_mode(source, at) + _validate_items(source, at)
    if kind == "persistentVolumeClaim":
        if not source.get("claimName"):
            return [FieldError.required(f"{at}.claimName", "")]
        return []
    if kind == "hostPath":
        host_path = as_str(source.get("path"))
        if not host_path:
            return [FieldError.required(f"{at}.path", "")]
        return _no_backsteps(host_path, f"{at}.path")
    if kind == "gitRepo":
        errs = [] if source.get("repository") else [FieldError.required(f"{at}.repository", "")]
        return errs + _local_descending_path(as_str(source.get("directory")), f"{at}.directory")
    if kind == "downwardAPI":
        errs = _validate_mode(source, at)
        for item in as_list(source.get("items")):
            errs += _validate_downward_file(as_dict(item), at)
        return errs
    if kind == "projected":
        return _validate_mode(source, at) + _validate_projection_sources(source, at)
    return []


def _validate_volumes(volumes: list[Any], path: str) -> tuple[set[str], Errors]:
    names: set[str] = set()
    errs: Errors = []
    for i, volume in enumerate(volumes):
        volume = as_dict(volume)
        at = f"{path}[{i}]"
        found = 0
        problems: Errors = []
        for kind in _VOLUME_TYPES:
            if volume.get(kind) is None:
                continue
            if found:
                problems.append(
                    FieldError.forbidden(f"{at}.{kind}", "may not specify more than 1 volume type")
                )
            else:
                found += 1
                problems += _validate_volume_source(volume, kind, at)
        if not found:
            problems.append(FieldError.required(at, "must specify a volume type"))
        name = as_str(volume.get("name"))
        if not name:
            problems.append(FieldError.required(f"{at}.name", ""))
        else:
            problems += each(is_dns1123_label(name), f"{at}.name", name)
        if name in names:
            problems.append(FieldError.duplicate(f"{at}.name", name))
        # As ValidateVolumes: a volume that is itself invalid is not one mounts can name.
        if problems:
            errs += problems
        else:
            names.add(name)
    return names, errs


def validate_port_num_or_name(port: Any, path: str) -> Errors:
    if isinstance(port, str):
        return each(is_valid_port_name(port), path, port)
    number = as_int(port)
    if number is None or not 1 <= number <= 65535:
        return [FieldError.invalid(path, port if number is None else number, PORT_RANGE)]
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
                errs += each(problems, f"{at}.name", name)
            elif name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            else:
                names.add(name)
        container_port = as_int(port.get("containerPort")) or 0
        if not container_port:
            errs.append(FieldError.required(f"{at}.containerPort", ""))
        elif not 1 <= container_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.containerPort", container_port, PORT_RANGE))
        host_port = as_int(port.get("hostPort")) or 0
        if host_port and not 1 <= host_port <= 65535:
            errs.append(FieldError.invalid(f"{at}.hostPort", host_port, PORT_RANGE))
        protocol = as_str(port.get("protocol"))
        if not protocol:
            errs.append(FieldError.required(f"{at}.protocol", ""))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(f"{at}.protocol", protocol, PROTOCOLS))
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
    errs = each(is_dns1123_subdomain(name), f"{path}.name", name) if name else []
    key = as_str(ref.get("key"))
    if not key:
        errs.append(FieldError.required(f"{path}.key", ""))
    else:
        errs += each(is_config_map_key(key), f"{path}.key", key)
    return errs


def _validate_env(env: list[Any], path: str) -> Errors:
    errs: Errors = []
    for i, var in enumerate(env):
        var = as_dict(var)
        at = f"{path}[{i}]"
        name = as_str(var.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        errs += each(_env_name_problems(name), f"{at}.name", name)
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
        # Upstream reports these two at the list's path, not the mount's.
        sub_path = as_str(mount.get("subPath"))
        if sub_path:
            errs += _local_descending_path(sub_path, f"{path}.subPath")
        expression = as_str(mount.get("subPathExpr"))
        if expression:
            if sub_path:
                errs.append(
                    FieldError.invalid(
                        f"{at}.subPathExpr",
                        expression,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            errs += _local_descending_path(expression, f"{path}.subPathExpr")
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
                errs.append(FieldError.invalid(f"{path}.{kind}[{name}]", str(raw), NEGATIVE))
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
            errs += validate_port_num_or_name(action.get("port"), f"{at}.port")
            scheme = as_str(action.get("scheme"))
            if scheme not in ("HTTP", "HTTPS"):
                errs.append(FieldError.not_supported(f"{at}.scheme", scheme, ("HTTP", "HTTPS")))
        elif kind == "tcpSocket":
            errs += validate_port_num_or_name(action.get("port"), f"{at}.port")
        elif kind == "grpc":
            port = as_int(action.get("port"))
            if port is None or not 1 <= port <= 65535:
                errs.append(FieldError.invalid(f"{at}.port", action.get("port"), PORT_RANGE))
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
        errs += nonnegative(f"{path}.{key}", probe.get(key))
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
        errs += each(is_dns1123_label(name), f"{path}.name", name)
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
            errs += each(is_qualified_name(key), f"{at}.key", key)
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
                        go_json(toleration),
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
            errs += each(rule(value), f"{path}.{key}", value)
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
            errs += each(is_dns1123_label(value), f"{path}.{key}", value)
    errs += _validate_tolerations(as_list(spec.get("tolerations")), f"{path}.tolerations")
    priority_class = as_str(spec.get("priorityClassName"))
    if priority_class:
        errs += each(
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


# What makes a pod a kubelet's mirror of a static pod (pkg/apis/core MirrorPodAnnotationKey).
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_MIRROR_PATH = f"metadata.annotations[{MIRROR_ANNOTATION}]"


def _mirror_errors(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidatePodSpecificAnnotations: a mirror pod is bound; and
    ValidatePodSpecificAnnotationUpdates: the annotation is neither added, changed nor removed
    (pkg/apis/core/validation/validation.go)."""
    annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    value = annotations.get(MIRROR_ANNOTATION)
    if old is None:
        if value is not None and not as_dict(obj.get("spec")).get("nodeName"):
            message = "must set spec.nodeName if mirror pod annotation is set"
            return [FieldError.invalid(_MIRROR_PATH, value, message)]
        return []
    before = as_dict(as_dict(old.get("metadata")).get("annotations")).get(MIRROR_ANNOTATION)
    if before == value:
        return []
    if before is None:
        return [FieldError.forbidden(_MIRROR_PATH, "may not add mirror pod annotation")]
    return [FieldError.forbidden(_MIRROR_PATH, "may not remove or update mirror pod annotation")]


def validate_pod(obj: Obj) -> list[FieldError]:
    """A new Pod."""
    spec = as_dict(obj.get("spec"))
    errs = validate_pod_spec(spec, "spec")
    errs += _mirror_errors(obj, None)
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
    errs += _mirror_errors(obj, old)
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
    return errs + _qos_class_errors(obj, old)


def _qos_class_errors(obj: Obj, old: Obj) -> list[FieldError]:
    old_qos = as_str(as_dict(old.get("status")).get("qosClass"))
    qos = as_str(as_dict(obj.get("status")).get("qosClass"))
    if old_qos and qos != old_qos:
        return [immutable("status.qosClass", qos)]
    return []


def validate_pod_status_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update through pods/status, as ValidatePodStatusUpdate checks one
    (pkg/apis/core/validation/validation.go): the mirror pod annotation, the node the pod is
    bound to, the QoS class; not the spec, which a /status write keeps as it was."""
    errs = _mirror_errors(obj, old)
    if as_dict(obj.get("spec")).get("nodeName") != as_dict(old.get("spec")).get("nodeName"):
        errs.append(FieldError.forbidden("status.nodeName", "may not be changed directly"))
    return errs + _qos_class_errors(obj, old)


def validate_pod_template_object(obj: Obj) -> list[FieldError]:
    """A PodTemplate object."""
    return validate_pod_template(as_dict(obj.get("template")), "template")


def validate_pod_template_object_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a PodTemplate object."""
    return validate_pod_template_object(obj)
