"""Validation of apiextensions.k8s.io/v1 CustomResourceDefinitions: names, group, scope,
versions and their printer columns, conversion, stored versions. Their schemas are checked by
`kubeforge._api.machinery.structural`."""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_string_slice
from kubeforge._api.machinery.names import immutable, is_dns1035_label, is_dns1123_subdomain
from kubeforge._apiserver.types.validation import admissionregistration
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_str

__all__ = ["validate_crd", "validate_crd_update"]

_PRINTER_TYPES = ("boolean", "date", "integer", "number", "string")
_PRINTER_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


def _go_bool(value: Any) -> str:
    return "true" if value is True else "false"


def _go_versions(versions: list[Any]) -> GoValue:
    # Go prints the nested pointers as addresses; only the identifying fields are kept.
    items = ", ".join(
        "apiextensions.CustomResourceDefinitionVersion{"
        f"Name:{go_str(as_dict(v).get('name'))}, Served:{_go_bool(as_dict(v).get('served'))}, "
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
            errs += admissionregistration.validate_client_config(
                webhook["clientConfig"], "spec.conversion.webhookClientConfig"
            )
        errs += admissionregistration.validate_review_versions(
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
