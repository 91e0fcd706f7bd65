"""Validation of batch/v1: Jobs and CronJobs, and the cron schedule grammar the server
accepts."""

from __future__ import annotations

import re

from kubeforge._api.machinery.access import as_dict, as_int, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import go_label_selector, go_string_map
from kubeforge._api.machinery.names import immutable, is_dns1123_label, validate_label_selector
from kubeforge._api.machinery.selectors import label_selector_matches, selector_converts
from kubeforge._apiserver.types.validation.common import (
    Errors,
    Obj,
    go_json,
    go_str,
    nonnegative,
    selector_immutable,
    semantic_equal,
    validate_template_selected,
)
from kubeforge._apiserver.types.validation.core_pods import validate_pod_template

__all__ = [
    "cron_schedule_error",
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


# -- cron schedules --------------------------------------------------------------------------

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
_GO_DURATION_RE = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+\Z|^[-+]?0\Z")


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
            return f"failed to parse duration {spec}: time: invalid duration {go_str(duration)}"
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
