"""Validation of apiregistration.k8s.io/v1 APIServices, as
kube-aggregator's pkg/apis/apiregistration/validation/validation.go checks them."""

from __future__ import annotations

from kubeforge._api.machinery.access import as_dict, as_int, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import is_dns1035_label, is_dns1123_subdomain
from kubeforge._apiserver.types.validation.common import Errors, Obj

__all__ = ["validate_api_service", "validate_api_service_update"]

_CONDITION_STATUSES = ("False", "True", "Unknown")


def validate_api_service(obj: Obj) -> list[FieldError]:
    """ValidateAPIService: named `<version>.<group>`, priorities in range, and a Service
    reference (with its port and trust settings) unless served locally."""
    spec = as_dict(obj.get("spec"))
    group = as_str(spec.get("group"))
    version = as_str(spec.get("version"))
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    required = f"{version}.{group}"
    errs: Errors = []
    if name and name != required:
        errs.append(
            FieldError.invalid(
                "metadata.name", name, f'must be `spec.version+"."+spec.group`: "{required}"'
            )
        )
    if not group and version != "v1":
        errs.append(
            FieldError.required(
                "spec.group", "only v1 may have an empty group and it better be legacy kube"
            )
        )
    if group:
        errs += [FieldError.invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
    errs += [FieldError.invalid("spec.version", version, m) for m in is_dns1035_label(version)]
    group_priority = as_int(spec.get("groupPriorityMinimum")) or 0
    if not 0 < group_priority <= 20000:
        errs.append(
            FieldError.invalid(
                "spec.groupPriorityMinimum", group_priority, "must be positive and less than 20000"
            )
        )
    version_priority = as_int(spec.get("versionPriority")) or 0
    if not 0 < version_priority <= 1000:
        errs.append(
            FieldError.invalid(
                "spec.versionPriority", version_priority, "must be positive and less than 1000"
            )
        )
    ca_bundle = as_str(spec.get("caBundle"))
    skip_verify = spec.get("insecureSkipTLSVerify") is True
    service = spec.get("service")
    if not isinstance(service, dict):
        if ca_bundle:
            # The bytes are shown as their count, never their content.
            size = len(ca_bundle) * 3 // 4 - ca_bundle.count("=")
            errs.append(
                FieldError.invalid(
                    "spec.caBundle", f"{size} bytes", "local APIServices may not have a caBundle"
                )
            )
        if skip_verify:
            errs.append(
                FieldError.invalid(
                    "spec.insecureSkipTLSVerify",
                    True,
                    "local APIServices may not have insecureSkipTLSVerify",
                )
            )
        return errs
    if not as_str(service.get("namespace")):
        errs.append(FieldError.required("spec.service.namespace", ""))
    if not as_str(service.get("name")):
        errs.append(FieldError.required("spec.service.name", ""))
    port = as_int(service.get("port"))
    if port is not None and not 0 < port < 65536:
        errs.append(
            FieldError.invalid(
                "spec.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    if skip_verify and ca_bundle:
        errs.append(
            FieldError.invalid(
                "spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"
            )
        )
    return errs


def validate_api_service_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateAPIServiceUpdate (and ValidateAPIServiceStatus for the conditions)."""
    errs = validate_api_service(obj)
    for i, condition in enumerate(as_dict(obj.get("status")).get("conditions") or []):
        status = as_dict(condition).get("status")
        if status not in _CONDITION_STATUSES:
            errs.append(
                FieldError.not_supported(
                    f"status.conditions[{i}].status", status, _CONDITION_STATUSES
                )
            )
        if not as_dict(condition).get("type"):
            errs.append(FieldError.required(f"status.conditions[{i}].type", ""))
    return errs
