"""The CronJob controller: start Jobs on schedule (pkg/controller/cronjob/
cronjob_controllerv2.go and utils.go, Kubernetes 1.33).

At each start time the CronJob's `jobTemplate` becomes a Job named `<cronjob>-<scheduled
time in minutes since the epoch>`, controlled by the CronJob and annotated
`batch.kubernetes.io/cronjob-scheduled-timestamp` (the time in the CronJob's zone). Only
the most recent start time that came is started: older missed ones are skipped, and more
than 100 missed make a TooManyMissedTimes warning. A start later than
`startingDeadlineSeconds` is missed (MissSchedule). `concurrencyPolicy` Forbid skips a
start while a Job runs, Replace deletes the running ones first. The status lists the
running Jobs (`active`), `lastScheduleTime` and `lastSuccessfulTime`; finished Jobs beyond
`successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, oldest first.
`suspend` starts nothing. Schedules are robfig/cron's (kubeforge.api.machinery.cron), in
`timeZone` or UTC.

The controller reads the time from kubeforge.clock and waits for the next start with a
timer of that clock, so schedules follow a clock a test swaps in.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kubeforge import clock
from kubeforge.api.machinery.access import (
    controller_ref,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge.api.machinery.cron import Schedule, ScheduleError, load_zone
from kubeforge.api.machinery.timestamps import format_time, parse_time_or_none
from kubeforge.client.errors import AlreadyExists, ApiError, NotFound
from kubeforge.cluster.controllers._cronschedule import (
    Missed,
    cronjob_schedule,
    job_name,
    most_recent_schedule_time,
    next_schedule_delay,
)
from kubeforge.cluster.controllers._wakeups import Wakeups
from kubeforge.cluster.controllers._writes import namespace_terminating, quiet_conflicts
from kubeforge.runtime.informer import HandlerFuncs
from kubeforge.runtime.manager import Manager
from kubeforge.runtime.ownership import set_controller_reference
from kubeforge.runtime.predicate import Funcs
from kubeforge.runtime.reconcile import Reconciler, Request, Result

__all__ = ["SCHEDULED_TIMESTAMP", "CronJobReconciler", "job_from_template", "setup"]

Obj = dict[str, Any]

CRONJOB = "batch/v1/CronJob"
JOB = "batch/v1/Job"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


# -- jobs ----------------------------------------------------------------------------------


def _finished_condition(job: Mapping[str, Any]) -> str | None:
    """Complete or Failed, when the Job finished (getFinishedStatus)."""
    for condition in status_of(job).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _rfc3339(moment: datetime) -> str:
    """Go's time.RFC3339 layout: seconds, and `Z` for a zero offset."""
    text = moment.isoformat(timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _rfc1123z(moment: datetime) -> str:
    """Go's time.RFC1123Z layout (`Mon, 02 Jan 2006 15:04:05 -0700`)."""
    return moment.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def job_from_template(cronjob: Mapping[str, Any], scheduled: datetime) -> Obj:
    """The Job a CronJob starts at `scheduled` (getJobFromTemplate2): the template's labels,
    annotations and spec, the scheduled time as an annotation, the CronJob as controller."""
    template = spec_of(cronjob).get("jobTemplate") or {}
    template_meta = meta_of(template)
    annotations = dict(template_meta.get("annotations") or {})
    zone = load_zone(str(spec_of(cronjob).get("timeZone") or ""))
    annotations[SCHEDULED_TIMESTAMP] = _rfc3339(scheduled.astimezone(zone))
    metadata: Obj = {
        "name": job_name(name_of(cronjob), scheduled),
        "namespace": namespace_of(cronjob),
        "annotations": annotations,
    }
    labels = template_meta.get("labels")
    if labels:
        metadata["labels"] = dict(labels)
    job: Obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    set_controller_reference(cronjob, job)
    return job


def _reference(job: Mapping[str, Any]) -> Obj:
    """An ObjectReference to a Job, as status.active lists it (ref.GetReference)."""
    meta = meta_of(job)
    return {
        "kind": "Job",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


def _start_order(job: Mapping[str, Any]) -> tuple[int, float, str]:
    """Oldest started first, unstarted last, then by name (byJobStartTime)."""
    started = parse_time_or_none(status_of(job).get("startTime"))
    if started is None:
        return (1, 0.0, name_of(job))
    return (0, started.timestamp(), name_of(job))


# -- the status's active list ----------------------------------------------------------------


def _active(cronjob: Obj) -> list[Obj]:
    status = cronjob.setdefault("status", {})
    active: list[Obj] | None = status.get("active")
    if not isinstance(active, list):
        active = status["active"] = []
    return active


def _in_active(cronjob: Obj, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in status_of(cronjob).get("active") or ())


def _drop_active(cronjob: Obj, uid: str) -> None:
    status = cronjob.setdefault("status", {})
    kept = [ref for ref in status.get("active") or () if ref.get("uid") != uid]
    if kept:
        status["active"] = kept
    else:
        status.pop("active", None)


# -- the reconciler --------------------------------------------------------------------------


class CronJobReconciler(Reconciler):
    """Starts a CronJob's Jobs when they are due and keeps its status (ControllerV2)."""

    def __init__(self, events: Any, wakeups: Wakeups) -> None:
        self.events = events
        self.wakeups = wakeups

    def schedule_updated(self, old: Obj, new: Obj) -> None:
        """A changed schedule or zone: wake at the new schedule's next time rather than now
        (updateCronJob), so a time that came under the old schedule is not started late."""
        if not _schedule_changed(old, new):
            return
        try:
            schedule = cronjob_schedule(new)
        except ScheduleError:
            self.events.record(
                new,
                "Warning",
                "UnParseableCronJobSchedule",
                f"unparseable schedule for cronjob: {spec_of(new).get('schedule')}",
            )
            return
        request = Request(namespace_of(new), name_of(new))
        self.wakeups.after(request, next_schedule_delay(new, clock.now(), schedule))

    # one sync ------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            cronjob: Obj = await self.client.get(CRONJOB, request.name, namespace=request.namespace)
        except NotFound:
            self.wakeups.after(request, None)
            return None
        jobs = await self._jobs_of(cronjob)
        working = copy.deepcopy(cronjob)
        cleaned = await self._clean_up_finished(working, jobs)
        working, delay, changed, error = await self._sync_cronjob(working, jobs)
        if cleaned or changed:
            await self.client.update_status(working)
        self.wakeups.after(request, delay)
        if error is not None and delay is None:
            raise error
        return None

    async def _jobs_of(self, cronjob: Mapping[str, Any]) -> list[Obj]:
        """The Jobs the CronJob controls: by their controller reference's kind and name,
        whatever their labels now say (getJobsToBeReconciled)."""
        jobs: list[Obj] = await self.client.list(JOB, namespace=namespace_of(cronjob))
        name = name_of(cronjob)
        return [
            job
            for job in jobs
            if (ref := controller_ref(job)) is not None
            and _is_cronjob(ref)
            and ref.get("name") == name
        ]

    async def _delete_job(self, cronjob: Obj, job: Mapping[str, Any]) -> bool:
        """Delete a Job (its pods in the background) and drop it from the active list."""
        try:
            await self.client.delete(
                JOB, name_of(job), namespace=namespace_of(job), propagation_policy="Background"
            )
        except ApiError as exc:
            self.events.record(cronjob, "Warning", "FailedDelete", f"Deleted job: {exc}")
            return False
        _drop_active(cronjob, uid_of(job))
        self.events.record(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name_of(job)}")
        return True

    async def _clean_up_finished(self, cronjob: Obj, jobs: Sequence[Obj]) -> bool:
        """Delete the oldest finished Jobs beyond the history limits (cleanupFinishedJobs)."""
        spec = spec_of(cronjob)
        limits = {
            "Complete": spec.get("successfulJobsHistoryLimit"),
            "Failed": spec.get("failedJobsHistoryLimit"),
        }
        changed = False
        for outcome, limit in limits.items():
            if not isinstance(limit, int):
                continue
            finished = sorted(
                (job for job in jobs if _finished_condition(job) == outcome), key=_start_order
            )
            for job in finished[: max(len(finished) - limit, 0)]:
                if await self._delete_job(cronjob, job):
                    changed = True
        return changed

    async def _sync_cronjob(
        self, cronjob: Obj, jobs: Sequence[Obj]
    ) -> tuple[Obj, float | None, bool, Exception | None]:
        """syncCronJob: the CronJob (updated in place, or re-read), seconds until it is due
        again (None: not until something changes), whether its status changed, and an
        error to retry after."""
        now = clock.now()
        changed = False
        children: set[str] = set()
        for job in jobs:
            uid = uid_of(job)
            children.add(uid)
            found = _in_active(cronjob, uid)
            finished = _finished_condition(job)
            if not found and finished is None:
                fresh: Obj = await self.client.api.get(
                    CRONJOB, name_of(cronjob), namespace=namespace_of(cronjob)
                )
                if _in_active(fresh, uid):
                    # Our cache had not seen the status that lists it yet.
                    cronjob = fresh
                    continue
                self.events.record(
                    cronjob,
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {name_of(job)}",
                )
            elif found and finished is not None:
                _drop_active(cronjob, uid)
                self.events.record(
                    cronjob,
                    "Normal",
                    "SawCompletedJob",
                    f"Saw completed job: {name_of(job)}, condition: {finished}",
                )
                changed = True
            elif finished == "Complete":
                # Counted whether or not it was still listed as active.
                completed = status_of(job).get("completionTime")
                last = status_of(cronjob).get("lastSuccessfulTime")
                if completed and (last is None or _later(completed, last)):
                    cronjob.setdefault("status", {})["lastSuccessfulTime"] = completed
                    changed = True
        for ref in list(status_of(cronjob).get("active") or ()):
            if ref.get("uid") in children:
                continue
            # The cache may lag: ask the server before calling the Job gone.
            try:
                await self.client.api.get(JOB, str(ref.get("name")), namespace=ref.get("namespace"))
            except NotFound:
                self.events.record(
                    cronjob, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}"
                )
                _drop_active(cronjob, str(ref.get("uid")))
                changed = True
            except ApiError as exc:
                return cronjob, None, changed, exc
        if meta_of(cronjob).get("deletionTimestamp"):
            return cronjob, None, changed, None
        spec = spec_of(cronjob)
        zone = spec.get("timeZone")
        if isinstance(zone, str):
            try:
                load_zone(zone)
            except ScheduleError as exc:
                self.events.record(
                    cronjob, "Warning", "UnknownTimeZone", f'invalid timeZone: "{zone}": {exc}'
                )
                return cronjob, None, changed, None
        if spec.get("suspend") is True:
            return cronjob, None, changed, None
        schedule_text = str(spec.get("schedule") or "")
        if "TZ" in schedule_text:
            self.events.record(
                cronjob,
                "Warning",
                "UnsupportedSchedule",
                f'CRON_TZ or TZ used in schedule "{schedule_text}" is not officially supported, '
                "see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for "
                "more details",
            )
        try:
            schedule = cronjob_schedule(cronjob)
        except ScheduleError as exc:
            self.events.record(
                cronjob,
                "Warning",
                "UnparseableSchedule",
                f'unparseable schedule: "{schedule_text}" : {exc}',
            )
            return cronjob, None, changed, None
        try:
            scheduled = self._next_schedule_time(cronjob, now, schedule)
        except ScheduleError as exc:
            self.events.record(
                cronjob, "Warning", "InvalidSchedule", f"invalid schedule: {schedule_text} : {exc}"
            )
            return cronjob, None, changed, None
        if scheduled is None:
            return cronjob, next_schedule_delay(cronjob, now, schedule), changed, None
        deadline = spec.get("startingDeadlineSeconds")
        if isinstance(deadline, int) and scheduled.timestamp() + deadline < now.timestamp():
            self.events.record(
                cronjob,
                "Warning",
                "MissSchedule",
                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}",
            )
            return cronjob, next_schedule_delay(cronjob, now, schedule), changed, None
        name = job_name(name_of(cronjob), scheduled)
        last = parse_time_or_none(status_of(cronjob).get("lastScheduleTime"))
        active = status_of(cronjob).get("active") or ()
        if any(ref.get("name") == name for ref in active) or last == scheduled:
            # This start was already made.
            return cronjob, next_schedule_delay(cronjob, now, schedule), changed, None
        policy = spec.get("concurrencyPolicy")
        if policy == "Forbid" and active:
            self.events.record(
                cronjob,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy "
                "is Forbid",
            )
            return cronjob, next_schedule_delay(cronjob, now, schedule), changed, None
        if policy == "Replace":
            for ref in list(active):
                try:
                    running: Obj = await self.client.api.get(
                        JOB, str(ref.get("name")), namespace=ref.get("namespace")
                    )
                except ApiError as exc:
                    self.events.record(cronjob, "Warning", "FailedGet", f"Get job: {exc}")
                    return cronjob, None, changed, exc
                if not await self._delete_job(cronjob, running):
                    error = RuntimeError(
                        f"could not replace job {namespace_of(running)}/{name_of(running)}"
                    )
                    return cronjob, None, changed, error
                changed = True
        return await self._start(cronjob, scheduled, schedule, now, changed)

    def _next_schedule_time(
        self, cronjob: Obj, now: datetime, schedule: Schedule
    ) -> datetime | None:
        """The start time that is due now, if any (nextScheduleTime); a warning event when
        too many went by unmet."""
        due = most_recent_schedule_time(cronjob, now, schedule, with_deadline=True)
        if due.most_recent is None or due.most_recent > now:
            return None
        if due.missed is Missed.MANY:
            self.events.record(
                cronjob,
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
                "check clock skew",
            )
        return due.most_recent

    async def _start(
        self, cronjob: Obj, scheduled: datetime, schedule: Schedule, now: datetime, changed: bool
    ) -> tuple[Obj, float | None, bool, Exception | None]:
        """Create the Job for `scheduled` and list it as active."""
        wanted = job_from_template(cronjob, scheduled)
        try:
            job: Obj = await self.client.create(wanted)
        except AlreadyExists:
            # Made before, by us (when our status write was lost) or by someone else.
            job = await self.client.api.get(JOB, name_of(wanted), namespace=namespace_of(wanted))
            ours = controller_ref(job)
            if ours is None or ours.get("uid") != uid_of(cronjob):
                return cronjob, None, changed, None
            if _in_active(cronjob, uid_of(job)):
                return cronjob, None, changed, None
        except ApiError as exc:
            if not namespace_terminating(exc):
                self.events.record(cronjob, "Warning", "FailedCreate", f"Error creating job: {exc}")
            return cronjob, None, changed, exc
        else:
            self.events.record(cronjob, "Normal", "SuccessfulCreate", f"Created job {name_of(job)}")
        _active(cronjob).append(_reference(job))
        cronjob["status"]["lastScheduleTime"] = format_time(scheduled)
        return cronjob, next_schedule_delay(cronjob, now, schedule), True, None


def _later(a: Any, b: Any) -> bool:
    first, second = parse_time_or_none(a), parse_time_or_none(b)
    return first is not None and (second is None or first > second)


def _schedule_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    before, after = spec_of(old), spec_of(new)
    return before.get("schedule") != after.get("schedule") or before.get("timeZone") != after.get(
        "timeZone"
    )


def _is_cronjob(ref: Mapping[str, Any]) -> bool:
    """A reference to a batch CronJob (not an operator's own kind of that name)."""
    return ref.get("kind") == "CronJob" and str(ref.get("apiVersion", "")).startswith("batch/")


def _controlling_cronjob(job: Mapping[str, Any]) -> list[Request]:
    ref = controller_ref(job)
    if ref is None or not _is_cronjob(ref):
        return []
    return [Request(namespace_of(job), str(ref.get("name") or ""))]


# -- wiring ------------------------------------------------------------------------------------


def setup(manager: Manager) -> None:
    """Register the CronJob controller with `manager`."""
    wakeups = Wakeups()
    reconciler = CronJobReconciler(manager.event_recorder("cronjob-controller"), wakeups)
    (
        manager.controller()
        .named("cronjob")
        # A new schedule is handled at its own next time (schedule_updated), not at once.
        .for_(
            CRONJOB, predicates=[Funcs(on_update=lambda old, new: not _schedule_changed(old, new))]
        )
        .watches(JOB, _controlling_cronjob)
        .watches_source(wakeups.channel)
        .with_options(max_concurrent_reconciles=5)
        .complete(reconciler)
    )
    manager.cache.informer_for(CRONJOB).add_handler(
        HandlerFuncs(update=reconciler.schedule_updated)
    )
