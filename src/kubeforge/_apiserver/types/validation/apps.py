"""Validation of apps/v1: Deployments, ReplicaSets, StatefulSets and DaemonSets."""

from __future__ import annotations

import re
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_label_selector
from kubeforge._api.machinery.names import regex_error, validate_label_selector
from kubeforge._api.machinery.selectors import selector_converts
from kubeforge._apiserver.types.validation.common import (
    Errors,
    Obj,
    go_json,
    go_str,
    nonnegative,
    selector_immutable,
    selector_is_empty,
    semantic_equal,
    validate_replicas,
    validate_template_restart_always,
    validate_template_selected,
)
from kubeforge._apiserver.types.validation.core_pods import validate_pod_template

__all__ = [
    "validate_daemonset",
    "validate_daemonset_update",
    "validate_deployment",
    "validate_deployment_update",
    "validate_replicaset",
    "validate_replicaset_update",
    "validate_statefulset",
    "validate_statefulset_update",
]

# -- selectors, strategies and rolling updates -----------------------------------------------

_NOT_POSITIVE = "must be greater than zero"


def _go_int_or_string(value: Any) -> GoValue:
    # IntOrString prints through its String method: the number, or the bare string.
    return GoValue(str(value))


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
        if selector_is_empty(selector):
            errs.append(
                FieldError.invalid(
                    "spec.selector",
                    go_label_selector(as_dict(selector)),
                    f"empty selector is invalid for {kind}",
                )
            )
    if not selector_converts(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector", go_label_selector(as_dict(selector)), "invalid label selector"
            )
        )
        return errs, False
    errs += validate_template_selected(spec)
    return errs, True


_PERCENT_FMT = "[0-9]+%"
_PERCENT_RE = re.compile(r"^[0-9]+%\Z")
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
    return nonnegative(path, value)


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
    return GoValue(f"{go_type}{{Type:{go_str(strategy.get('type'))}, RollingUpdate:{rolling}}}")


# -- Deployments and ReplicaSets -------------------------------------------------------------


def validate_deployment(obj: Obj) -> list[FieldError]:
    """ValidateDeploymentSpec."""
    spec = as_dict(obj.get("spec"))
    errs = nonnegative("spec.replicas", spec.get("replicas"))
    selector_errs, ok = _validate_selector_and_template(spec, "deployment")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
        errs += validate_template_restart_always(spec, "ReplicaSet")
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
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
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


def validate_deployment_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Deployment: the selector is fixed."""
    return validate_deployment(obj) + selector_immutable(obj, old)


def validate_replicaset(obj: Obj) -> list[FieldError]:
    """ValidateReplicaSetSpec."""
    spec = as_dict(obj.get("spec"))
    errs = validate_replicas(spec)
    # The server words the empty-selector error for ReplicaSets as for Deployments.
    selector_errs, ok = _validate_selector_and_template(spec, "deployment")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
        errs += validate_template_restart_always(spec, "ReplicaSet")
    return errs


def validate_replicaset_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ReplicaSet: the selector is fixed."""
    return validate_replicaset(obj) + selector_immutable(obj, old)


# -- StatefulSets ----------------------------------------------------------------------------


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
                    go_json(strategy["rollingUpdate"]),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif kind == "RollingUpdate":
        rolling = as_dict(strategy.get("rollingUpdate"))
        errs += nonnegative("spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
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
    errs += nonnegative("spec.ordinals.start", ordinals.get("start"))
    errs += validate_replicas(spec)
    selector_errs, ok = _validate_selector_and_template(spec, "statefulset")
    errs += selector_errs
    if ok:
        errs += validate_pod_template(
            as_dict(spec.get("template")), "spec.template", _claim_template_names(spec)
        )
    errs += validate_template_restart_always(spec, "StatefulSet")
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


# -- DaemonSets ------------------------------------------------------------------------------


def validate_daemonset(obj: Obj) -> list[FieldError]:
    """ValidateDaemonSetSpec."""
    spec = as_dict(obj.get("spec"))
    selector = spec.get("selector")
    errs = validate_label_selector(selector, "spec.selector")
    if selector_converts(selector):
        errs += validate_template_selected(spec)
    if selector is not None and selector_is_empty(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector",
                go_label_selector(as_dict(selector)),
                "empty selector is invalid for daemonset",
            )
        )
    errs += validate_pod_template(as_dict(spec.get("template")), "spec.template")
    errs += validate_template_restart_always(spec, "DaemonSet")
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += nonnegative("spec.templateGeneration", spec.get("templateGeneration"))
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
    errs += nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    return errs


def validate_daemonset_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a DaemonSet: the selector is fixed."""
    return validate_daemonset(obj) + selector_immutable(obj, old)
