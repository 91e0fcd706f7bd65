"""Validation of batch/v1: Jobs and CronJobs, and the cron schedule grammar the server
accepts."""

from __future__ import annotations

import re

from kubeforge.api.machinery.access import as_dict, as_int, as_str
from kubeforge.api.machinery.cron import ScheduleError, load_zone, schedule_error
from kubeforge.api.machinery.fielderror import FieldError
from kubeforge.api.machinery.govalues import go_label_selector, go_string_map
from kubeforge.api.machinery.names import immutable, is_dns1123_label, validate_label_selector
from kubeforge.api.machinery.selectors import label_selector_matches, selector_converts
from kubeforge.apiserver.types.validation.common import (
    Errors,
    Obj,
    go_json,
    nonnegative,
    selector_immutable,
    semantic_equal,
    validate_template_selected,
)
from kubeforge.apiserver.types.validation.core_pods import validate_pod_template

__all__ = [
    "validate_cronjob",
    "validate_cronjob_update",
    "validate_job",
    "validate_job_update",
]

# -- Jobs ------------------------------------------------------------------------------------


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
        errs += nonnegative(f"{prefix}.{key}", spec.get(key))
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
        if selector_converts(selector) and not label_selector_matches(selector, expected):
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
    if selector_converts(selector):
        errs += validate_template_selected(spec)
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
    errs += selector_immutable(obj, old)
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
        errs.append(immutable("spec.template", go_json(spec.get("template"))))
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
                immutable(f"spec.{key}", go_json(value) if isinstance(value, dict) else value)
            )
    return errs


# -- CronJobs --------------------------------------------------------------------------------

_TIME_ZONE_PART_RE = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}\Z")


def _validate_cronjob(obj: Obj, old: Obj | None) -> Errors:
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict(old.get("spec")) if old is not None else None
    errs: Errors = []
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        errs.append(FieldError.required("spec.schedule", ""))
    else:
        problem = schedule_error(schedule)
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
    errs += nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
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
        else:
            if zone.lower() == "local":
                errs.append(
                    FieldError.invalid(
                        "spec.timeZone",
                        zone,
                        "timeZone must be an explicit time zone as defined in "
                        "https://www.iana.org/time-zones",
                    )
                )
            # time.LoadLocation knows "Local" (the server's own zone), no other spelling.
            if zone != "Local":
                try:
                    load_zone(zone)
                except ScheduleError as exc:
                    errs.append(FieldError.invalid("spec.timeZone", zone, str(exc)))
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
    errs += nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    errs += nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"))
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
