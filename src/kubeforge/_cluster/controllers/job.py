"""The Job controller: run pods until enough succeed, or give up.

As upstream's (1.33): up to `parallelism` pods run at once, never more than the
completions still missing; without `completions` the job is a work queue, done once any
pod succeeded and none still runs. Pods are named `<job>-<random>`, carry the labels the
API server put on the template (`batch.kubernetes.io/job-name`, `job-name`,
`controller-uid` ...) and the `batch.kubernetes.io/job-tracking` finalizer: a finished pod
is first listed in `status.uncountedTerminatedPods`, then its finalizer is removed, then
it moves into `succeeded`/`failed`, so no pod is counted twice or lost.

A job fails once more pods failed than `backoffLimit` (with restartPolicy OnFailure, once
its pods' containers restarted that often) or when it ran `activeDeadlineSeconds`; it
first gets FailureTarget, its running pods are deleted, and Failed follows when none is
left terminating. Success likewise sets SuccessCriteriaMet, then Complete with
`completionTime`. Replacement pods for failed ones wait an exponential backoff (10 s
doubling to 6 min). Suspended jobs delete their pods.

Indexed jobs give each pod a completion index below `completions` (annotation and label
`batch.kubernetes.io/job-completion-index`, hostname `<job>-<index>`, name
`<job>-<index>-<random>`, variable JOB_COMPLETION_INDEX) and record finished indexes in
`status.completedIndexes`; the job is complete once every index succeeded.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubeforge import clock
from kubeforge._api.machinery.access import (
    controller_ref,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._api.machinery.timestamps import format_time, now, parse_time_or_none
from kubeforge._client.errors import ApiError, NotFound
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._children import generate_name_prefix, pod_from_template
from kubeforge._cluster.controllers._claiming import claim, controllers_of
from kubeforge._cluster.controllers._deletionorder import pods_to_delete
from kubeforge._cluster.controllers._expectations import Expectations, observe_pods
from kubeforge._cluster.controllers._podindex import claimable_pods, index_pods_by_controller
from kubeforge._cluster.controllers._podstate import (
    is_pod_active,
    is_pod_ready,
    is_pod_terminal,
    ready_condition,
)
from kubeforge._cluster.controllers._writes import namespace_terminating, quiet_conflicts, replace
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = [
    "COMPLETION_INDEX",
    "TRACKING_FINALIZER",
    "FinalizerExpectations",
    "JobReconciler",
    "completion_index",
    "format_indexes",
    "parse_indexes",
    "setup",
]

Obj = dict[str, Any]

JOB = "batch/v1/Job"
POD = "v1/Pod"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_CONTROLLER = "kubernetes.io/job-controller"
# Bounds on one sync, as upstream: uncounted UIDs kept in status, pods created or deleted.
MAX_UNCOUNTED_PODS = 500
MAX_POD_CHANGES_PER_SYNC = 500
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 360.0

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
# Generated names add five random characters and must fit a 63-character hostname.
MAX_GENERATED_NAME_LENGTH = 58

COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
SUSPENDED = "Suspended"


def _phase(pod: Mapping[str, Any]) -> str:
    return str(status_of(pod).get("phase") or "")


def _has_finalizer(pod: Mapping[str, Any]) -> bool:
    return TRACKING_FINALIZER in (meta_of(pod).get("finalizers") or ())


def _suspended(job: Mapping[str, Any]) -> bool:
    return spec_of(job).get("suspend") is True


def _only_replace_failed(job: Mapping[str, Any]) -> bool:
    spec = spec_of(job)
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def _is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Failed, or (unless only failed pods are replaced) deleted before it succeeded:
    an orphaned pod may never reach the Failed phase."""
    if _phase(pod) == "Failed":
        return True
    if _only_replace_failed(job):
        return False
    return is_deleting(pod) and _phase(pod) != "Succeeded"


def _finish_time(pod: Mapping[str, Any]) -> float:
    """When a pod finished: its Ready=False transition, its containers' end, its deletion."""
    ready = ready_condition(pod)
    if is_pod_terminal(pod) and ready is not None and ready.get("status") == "False":
        when = parse_time_or_none(ready.get("lastTransitionTime"))
        if when is not None:
            return when.timestamp()
    ends = []
    for status in status_of(pod).get("containerStatuses") or ():
        terminated = (status.get("state") or {}).get("terminated") or {}
        ends.append(parse_time_or_none(terminated.get("finishedAt")))
    if ends and all(end is not None for end in ends):
        return max(end.timestamp() for end in ends if end is not None)
    deleted = parse_time_or_none(meta_of(pod).get("deletionTimestamp"))
    return deleted.timestamp() if deleted is not None else clock.time()


# -- indexed jobs ----------------------------------------------------------------------------


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """A pod's completion index (None when missing or invalid)."""
    try:
        value = int((meta_of(pod).get("annotations") or {})[COMPLETION_INDEX])
    except (KeyError, ValueError):
        return None
    return value if value >= 0 else None


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """`1,3-5` as {1, 3, 4, 5}, ignoring what is out of range or malformed."""
    found: set[int] = set()
    for part in (text or "").split(","):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            continue
        found.update(range(max(low, 0), min(high, completions - 1) + 1))
    return found


def format_indexes(indexes: set[int]) -> str:
    """{1, 3, 4, 5} as `1,3-5` (status.completedIndexes)."""
    parts: list[str] = []
    run: list[int] = []
    for index in sorted(indexes):
        if run and index == run[-1] + 1:
            run.append(index)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [index]
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(parts)


def _indexed_template(template: Mapping[str, Any], job_name: str, index: int) -> Obj:
    """The pod template for one completion index: index annotation and label, hostname
    `<job>-<index>` and the JOB_COMPLETION_INDEX variable in every container."""
    result = copy.deepcopy(dict(template))
    meta = result.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COMPLETION_INDEX: str(index)}
    meta["labels"] = {**(meta.get("labels") or {}), COMPLETION_INDEX: str(index)}
    spec = result.setdefault("spec", {})
    spec["hostname"] = f"{job_name}-{index}"
    field_ref = {"fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": field_ref}})
    return result


def _indexed_name_prefix(job_name: str, index: int) -> str:
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[: MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _indexed_removals(pods: Sequence[Obj], completions: int) -> tuple[list[Obj], list[Obj]]:
    """Pods with no valid index, an index past completions, or a duplicate index (all but
    the one most worth keeping) go; returns those and the rest."""
    remove: list[Obj] = []
    keep: list[Obj] = []
    by_index: dict[int, list[Obj]] = {}
    for pod in pods:
        index = completion_index(pod)
        if index is None or index >= completions:
            remove.append(pod)
        else:
            by_index.setdefault(index, []).append(pod)
    for same in by_index.values():
        ordered = pods_to_delete(same, (), len(same))
        remove.extend(ordered[:-1])
        keep.append(ordered[-1])
    return remove, keep


# -- conditions --------------------------------------------------------------------------------


def _condition(kind: str, reason: str, message: str, at: datetime, status: str = "True") -> Obj:
    stamp = format_time(at)
    return {
        "type": kind,
        "status": status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def _find(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for condition in conditions:
        if condition.get("type") == kind:
            return condition
    return None


def _finished(job: Mapping[str, Any]) -> bool:
    conditions = status_of(job).get("conditions") or ()
    return any(
        c.get("type") in (COMPLETE, FAILED) and c.get("status") == "True" for c in conditions
    )


def _ensure_condition(
    conditions: list[Obj], kind: str, status: str, reason: str, message: str, at: datetime
) -> bool:
    """Set a condition (replacing it whole when anything differs); a False condition is
    not added when absent. Returns whether anything changed."""
    for i, condition in enumerate(conditions):
        if condition.get("type") != kind:
            continue
        if (condition.get("status"), condition.get("reason", ""), condition.get("message", "")) == (
            status,
            reason,
            message,
        ):
            return False
        conditions[i] = _condition(kind, reason, message, at, status)
        return True
    if status == "False":
        return False
    conditions.append(_condition(kind, reason, message, at, status))
    return True


# -- expectations of finalizer removals --------------------------------------------------------


class FinalizerExpectations:
    """Pods whose tracking finalizer this controller removed but whose update the cache has
    not shown yet: they are counted already and must not be counted again."""

    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def expect(self, key: str, uids: Sequence[str]) -> None:
        self._uids.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        uids = self._uids.get(key)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._uids[key]

    def get(self, key: str) -> frozenset[str]:
        return frozenset(self._uids.get(key, ()))

    def forget(self, key: str) -> None:
        self._uids.pop(key, None)


@dataclass
class _Backoff:
    """Failures since the last success and when the latest happened (epoch seconds)."""

    failures: int = 0
    last_failure: float | None = None

    def remaining(self, base: float, ceiling: float, at: float) -> float:
        if self.failures == 0 or self.last_failure is None:
            return 0.0
        delay = base
        for _ in range(1, self.failures):
            delay *= 2
            if delay >= ceiling:
                delay = ceiling
                break
        elapsed = at - self.last_failure
        return 0.0 if delay < elapsed else delay - elapsed


def _next_backoff(old: _Backoff, succeeded: Sequence[Obj], failed: Sequence[Obj]) -> _Backoff:
    """The backoff after newly finished pods: a success resets it, except for failures that
    came after the latest success."""
    failures = sorted(_finish_time(p) for p in failed)
    if not succeeded:
        if not failures:
            return old
        return _Backoff(old.failures + len(failures), failures[-1])
    last_success = max(_finish_time(p) for p in succeeded)
    later = [t for t in failures if t > last_success]
    return _Backoff(len(later), later[-1] if later else None)


# -- one sync of one job -----------------------------------------------------------------------


class _JobSync:
    """One pass over a job; `job` is kept equal to the latest version written."""

    def __init__(self, reconciler: JobReconciler, job: Obj, key: str) -> None:
        self.r = reconciler
        self.client = reconciler.client
        self.job = job
        self.key = key
        self.requeue_after: float | None = None
        self.indexed = spec_of(job).get("completionMode") == "Indexed"
        self.completions = int(spec_of(job).get("completions") or 0)
        self.succeeded_indexes: set[int] = set()

    def _valid_index(self, pod: Mapping[str, Any]) -> bool:
        """Pods of an indexed job count only with an index below completions."""
        if not self.indexed:
            return True
        index = completion_index(pod)
        return index is not None and index < self.completions

    @property
    def status(self) -> Obj:
        status = self.job.get("status")
        if not isinstance(status, dict):
            status = self.job["status"] = {}
        return status

    @property
    def uncounted(self) -> Obj:
        value = self.status.get("uncountedTerminatedPods")
        if not isinstance(value, dict):
            value = self.status["uncountedTerminatedPods"] = {}
        return value

    @property
    def conditions(self) -> list[Obj]:
        value = self.status.get("conditions")
        if not isinstance(value, list):
            value = self.status["conditions"] = []
        return value

    def _counter(self, field: str) -> int:
        return int(self.status.get(field) or 0)

    def _set_counter(self, field: str, value: int) -> None:
        if value:
            self.status[field] = value
        else:
            self.status.pop(field, None)

    def _requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.05)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds

    def _event(self, kind: str, reason: str, message: str) -> None:
        self.r.events.record(self.job, kind, reason, message)

    async def write(self) -> None:
        if not self.status.get("conditions"):
            self.status.pop("conditions", None)
        replace(self.job, await self.client.update_status(self.job))

    # pods ---------------------------------------------------------------------------------------

    async def pods(self) -> list[Obj]:
        job = self.job
        selector = spec_of(job).get("selector")
        candidates = await claimable_pods(self.client, job)
        return await claim(
            self.client,
            self.r.live,
            job,
            POD,
            candidates,
            lambda pod: label_selector_matches(selector, labels_of(pod)),
            release_finalizers=(TRACKING_FINALIZER,),
        )

    async def _remove_finalizer(self, pod: Obj) -> None:
        metadata = {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER], "uid": uid_of(pod)}
        await self.client.patch(
            POD,
            name_of(pod),
            {"metadata": metadata},
            patch_type="strategic",
            namespace=namespace_of(pod),
        )

    async def delete_active(self, pods: Sequence[Obj]) -> tuple[int, int, BaseException | None]:
        """Delete pods of a finished job, keeping their finalizers (tracking removes them
        once they are counted). Returns ready pods deleted, pods deleted, first error."""
        results = await asyncio.gather(
            *(self.client.delete(POD, name_of(p), namespace=namespace_of(p)) for p in pods),
            return_exceptions=True,
        )
        deleted = ready = 0
        error: BaseException | None = None
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, NotFound):
                error = error or result
                continue
            deleted += 1
            ready += 1 if is_pod_ready(pod) else 0
        return ready, deleted, error

    async def delete_pods(self, pods: Sequence[Obj]) -> tuple[int, int, BaseException | None]:
        """Delete pods the job no longer wants (its finalizer first, so they go at once)."""
        self.r.expectations.expect_deletions(self.key, [name_of(p) for p in pods])

        async def delete(pod: Obj) -> None:
            try:
                if _has_finalizer(pod):
                    await self._remove_finalizer(pod)
                await self.client.delete(POD, name_of(pod), namespace=namespace_of(pod))
            except ApiError:
                self.r.expectations.deletion_observed(self.key, name_of(pod))
                raise

        results = await asyncio.gather(*(delete(p) for p in pods), return_exceptions=True)
        deleted = ready = 0
        error: BaseException | None = None
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, NotFound):
                error = error or result
                continue
            deleted += 1
            ready += 1 if is_pod_ready(pod) else 0
        return ready, deleted, error

    def _new_pod(self, index: int | None) -> Obj:
        job = self.job
        template = spec_of(job).get("template") or {}
        if index is None:
            prefix = generate_name_prefix(name_of(job))
        else:
            template = _indexed_template(template, name_of(job), index)
            prefix = _indexed_name_prefix(name_of(job), index)
        return pod_from_template(
            template, job, generate_name=prefix, finalizers=[TRACKING_FINALIZER]
        )

    async def create_pods(
        self, count: int, indexes: Sequence[int] = ()
    ) -> tuple[int, BaseException | None]:
        """Create up to `count` pods (one per index for indexed jobs) in slow-start
        batches; returns how many were created."""
        self.r.expectations.expect_creations(self.key, count)
        created = 0
        attempted = 0
        batch = min(count, 1)
        error: BaseException | None = None
        while batch > 0 and error is None:
            pods = [
                self._new_pod(indexes[attempted + i] if indexes else None) for i in range(batch)
            ]
            results = await asyncio.gather(
                *(self.client.create(pod) for pod in pods), return_exceptions=True
            )
            attempted += batch
            for result in results:
                if isinstance(result, BaseException):
                    self.r.expectations.creation_observed(self.key)
                    if isinstance(result, ApiError) and namespace_terminating(result):
                        continue
                    error = error or result
                else:
                    created += 1
                    self._event("Normal", "SuccessfulCreate", f"Created pod: {name_of(result)}")
            batch = min(2 * batch, count - attempted)
        for _ in range(count - attempted):
            self.r.expectations.creation_observed(self.key)
        if error is not None:
            self._event("Warning", "FailedCreate", f"Error creating: {error}")
        return created, error

    # the sync -----------------------------------------------------------------------------------

    async def run(self) -> None:
        job = self.job
        spec = spec_of(job)
        satisfied = self.r.expectations.satisfied(self.key)
        pods = await self.pods()
        active_pods = [p for p in pods if is_pod_active(p)]
        expected_removals = self.r.finalizers.get(self.key)
        uncounted_succeeded = set(self.uncounted.get("succeeded") or ())
        uncounted_failed = set(self.uncounted.get("failed") or ())
        new_succeeded: list[Obj] = []
        new_failed: list[Obj] = []
        for pod in pods:
            uid = uid_of(pod)
            if not _has_finalizer(pod) or uid in expected_removals:
                continue  # counted already
            if not self._valid_index(pod):
                continue
            if _phase(pod) == "Succeeded" and uid not in uncounted_succeeded:
                new_succeeded.append(pod)
            elif _is_pod_failed(pod, job) and uid not in uncounted_failed:
                new_failed.append(pod)
        if self.indexed:
            self.succeeded_indexes = parse_indexes(
                self.status.get("completedIndexes"), self.completions
            )
            self.succeeded_indexes.update(
                index
                for pod in pods
                if _phase(pod) == "Succeeded"
                and _has_finalizer(pod)
                and (index := completion_index(pod)) is not None
                and index < self.completions
            )
            succeeded = len(self.succeeded_indexes)
        else:
            succeeded = self._counter("succeeded") + len(new_succeeded) + len(uncounted_succeeded)
        failed = self._counter("failed") + len(new_failed) + len(uncounted_failed)
        active = len(active_pods)
        ready = sum(1 for p in active_pods if is_pod_ready(p))
        terminating = sum(1 for p in pods if is_deleting(p) and not is_pod_terminal(p))
        at = now()
        if not self.status.get("startTime") and not _suspended(job):
            self.status["startTime"] = format_time(at)
        backoff = _next_backoff(
            self.r.backoffs.get(self.key, _Backoff()), new_succeeded, new_failed
        )

        finished = self._finished_condition(job, pods, failed, at)
        manage_error: BaseException | None = None
        suspend_changed = False
        if finished is not None:
            deleted_ready, deleted, manage_error = await self.delete_active(active_pods)
            if deleted != active or not satisfied:
                # Not finished while pods may remain that the cache has not shown.
                finished = None
            active -= deleted
            terminating += deleted
            ready -= deleted_ready
        else:
            managed = False
            if satisfied and not is_deleting(job):
                active, ready, terminating, manage_error = await self.manage(
                    active_pods, succeeded, terminating, ready, backoff
                )
                managed = True
            completions = spec.get("completions")
            if completions is None:
                complete = succeeded > 0 and active == 0
            else:
                complete = succeeded >= int(completions) and active == 0
            if complete:
                finished = _condition(
                    SUCCESS_CRITERIA_MET,
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    at,
                )
            elif managed:
                suspend_changed = self._sync_suspended(at)

        needs_flush = (
            suspend_changed
            or active != self._counter("active")
            or self.status.get("ready") != ready
            or self.status.get("terminating") != terminating
        )
        self._set_counter("active", active)
        self.status["ready"] = ready
        self.status["terminating"] = terminating
        await self.track(pods, finished, needs_flush, expected_removals, terminating, backoff, at)
        if manage_error is not None:
            raise manage_error

    def _finished_condition(
        self, job: Mapping[str, Any], pods: Sequence[Obj], failed: int, at: datetime
    ) -> Obj | None:
        conditions = self.conditions
        met = _find(conditions, SUCCESS_CRITERIA_MET)
        if met is not None and met.get("status") == "True":
            return dict(met)
        target = _find(conditions, FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            return _condition(
                FAILED, str(target.get("reason", "")), str(target.get("message", "")), at
            )
        spec = spec_of(job)
        if failed > int(spec.get("backoffLimit", 6)) or self._past_backoff_limit_on_failure(pods):
            return _condition(
                FAILURE_TARGET,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                at,
            )
        deadline = spec.get("activeDeadlineSeconds")
        started = parse_time_or_none(self.status.get("startTime"))
        if deadline is not None and started is not None and not _suspended(job):
            remaining = started.timestamp() + int(deadline) - at.timestamp()
            if remaining <= 0:
                return _condition(
                    FAILURE_TARGET,
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    at,
                )
            self._requeue(remaining)
        return None

    def _past_backoff_limit_on_failure(self, pods: Sequence[Obj]) -> bool:
        """With restartPolicy OnFailure failures are container restarts in running pods."""
        spec = spec_of(self.job)
        template_spec = spec_of(spec.get("template") or {})
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for pod in pods:
            if _phase(pod) not in ("Running", "Pending"):
                continue
            status = status_of(pod)
            for entry in (
                *(status.get("initContainerStatuses") or ()),
                *(status.get("containerStatuses") or ()),
            ):
                restarts += int(entry.get("restartCount") or 0)
        limit = int(spec.get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

    def _sync_suspended(self, at: datetime) -> bool:
        if _suspended(self.job):
            changed = _ensure_condition(
                self.conditions, SUSPENDED, "True", "JobSuspended", "Job suspended", at
            )
            if changed:
                self._event("Normal", "Suspended", "Job suspended")
            return changed
        changed = _ensure_condition(
            self.conditions, SUSPENDED, "False", "JobResumed", "Job resumed", at
        )
        if changed:
            self._event("Normal", "Resumed", "Job resumed")
            # activeDeadlineSeconds counts time continuously active: start afresh.
            self.status["startTime"] = format_time(at)
        return changed

    async def manage(
        self,
        active_pods: list[Obj],
        succeeded: int,
        terminating: int,
        ready: int,
        backoff: _Backoff,
    ) -> tuple[int, int, int, BaseException | None]:
        """Create or delete pods towards the wanted number running. Returns active, ready,
        terminating and the first error."""
        spec = spec_of(self.job)
        active = len(active_pods)
        if _suspended(self.job):
            removed_ready, removed, error = await self.delete_pods(
                pods_to_delete(active_pods, (), active)
            )
            return active - removed, ready - removed_ready, terminating + removed, error
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        if completions is None:
            # A work queue: once a pod succeeded, let the running ones finish.
            wanted = active if succeeded > 0 else parallelism
        else:
            wanted = max(min(int(completions) - succeeded, parallelism), 0)
        excess = max(active - wanted, 0)
        victims: list[Obj] = []
        candidates = active_pods
        if self.indexed:
            victims, candidates = _indexed_removals(active_pods, self.completions)
        if len(victims) < excess:
            victims += pods_to_delete(candidates, (), excess - len(victims))
        if victims:
            victims = victims[:MAX_POD_CHANGES_PER_SYNC]
            removed_ready, removed, error = await self.delete_pods(victims)
            return active - removed, ready - removed_ready, terminating + removed, error
        # Pods still terminating count against the wanted ones when only failed pods are
        # replaced.
        pending = terminating if _only_replace_failed(self.job) else 0
        missing = wanted - pending - active
        if missing <= 0:
            return active, ready, terminating, None
        wait = backoff.remaining(self.r.pod_failure_backoff, self.r.max_backoff, clock.time())
        if wait > 0:
            self._requeue(wait)
            return active, ready, terminating, None
        count = min(missing, MAX_POD_CHANGES_PER_SYNC)
        indexes: list[int] = []
        if self.indexed:
            taken = self.succeeded_indexes | {completion_index(p) for p in active_pods}
            indexes = [i for i in range(self.completions) if i not in taken][:count]
            count = len(indexes)
            if not count:
                return active, ready, terminating, None
        created, error = await self.create_pods(count, indexes)
        return active + created, ready, terminating, error

    async def track(
        self,
        pods: Sequence[Obj],
        finished: Obj | None,
        needs_flush: bool,
        expected_removals: frozenset[str],
        terminating: int,
        backoff: _Backoff,
        at: datetime,
    ) -> None:
        """Count finished pods through uncountedTerminatedPods, remove their finalizers,
        and set the finished conditions once every pod is accounted for."""
        job = self.job
        with_finalizer = {
            uid_of(p) for p in pods if _has_finalizer(p) and uid_of(p) not in expected_removals
        }
        needs_flush = self._count_released(with_finalizer) or needs_flush
        to_release: list[Obj] = []
        full = False
        for pod in pods:
            uid = uid_of(pod)
            if not _has_finalizer(pod) or uid in expected_removals:
                continue
            failed = _is_pod_failed(pod, job)
            if not (
                is_deleting(job) or finished is not None or _phase(pod) == "Succeeded" or failed
            ):
                continue
            to_release.append(pod)
            succeeded_list: list[str] = self.uncounted.setdefault("succeeded", [])
            failed_list: list[str] = self.uncounted.setdefault("failed", [])
            if _phase(pod) == "Succeeded" and uid not in failed_list:
                if self.indexed:
                    pass  # the completion index records it; no uid needed
                elif uid not in succeeded_list:
                    succeeded_list.append(uid)
                    needs_flush = True
            elif (
                _counts_as_failed(failed, finished)
                and uid not in failed_list
                and self._valid_index(pod)
            ):
                failed_list.append(uid)
                needs_flush = True
            self._drop_empty_uncounted()
            if len(succeeded_list) + len(failed_list) >= MAX_UNCOUNTED_PODS:
                full = True
                break
        if self.indexed:
            completed = format_indexes(self.succeeded_indexes)
            if completed != (self.status.get("completedIndexes") or ""):
                needs_flush = True
            if completed:
                self.status["completedIndexes"] = completed
            else:
                self.status.pop("completedIndexes", None)
            self._set_counter("succeeded", len(self.succeeded_indexes))
        if finished is not None and finished["type"] == FAILURE_TARGET:
            # The reason is recorded before the pods' finalizers go.
            self.conditions.append(finished)
            needs_flush = True
            finished = _condition(FAILED, finished["reason"], finished["message"], at)
        if finished is not None and finished["type"] == SUCCESS_CRITERIA_MET:
            if _find(self.conditions, SUCCESS_CRITERIA_MET) is None:
                self.conditions.append(finished)
                needs_flush = True
            finished = _condition(COMPLETE, finished["reason"], finished["message"], at)
        if needs_flush:
            await self.write()
            self.r.backoffs[self.key] = backoff
            needs_flush = False
        error: BaseException | None = None
        if to_release:
            error = await self._release(to_release, with_finalizer)
        if self._count_released(with_finalizer):
            needs_flush = True
        if error is not None:
            if needs_flush:
                await self.write()
            raise error
        done = not full and self._enact_finished(finished, terminating)
        if done or needs_flush:
            await self.write()
        if done and finished is not None:
            if finished["type"] == COMPLETE:
                self._event("Normal", "Completed", "Job completed")
            else:
                self._event("Warning", finished["reason"], finished["message"])

    def _drop_empty_uncounted(self) -> None:
        for field in ("succeeded", "failed"):
            if not self.uncounted.get(field):
                self.uncounted.pop(field, None)

    def _count_released(self, with_finalizer: set[str]) -> bool:
        """Move uncounted pods that no longer hold the finalizer into the counters."""
        changed = False
        for field in ("succeeded", "failed"):
            listed = list(self.uncounted.get(field) or ())
            kept = [uid for uid in listed if uid in with_finalizer]
            if len(kept) != len(listed):
                self._set_counter(field, self._counter(field) + len(listed) - len(kept))
                self.uncounted[field] = kept
                changed = True
        self._drop_empty_uncounted()
        return changed

    async def _release(self, pods: Sequence[Obj], with_finalizer: set[str]) -> BaseException | None:
        """Remove the tracking finalizer from counted pods."""
        uids = [uid_of(p) for p in pods]
        self.r.finalizers.expect(self.key, uids)
        results = await asyncio.gather(
            *(self._remove_finalizer(p) for p in pods), return_exceptions=True
        )
        error: BaseException | None = None
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, BaseException):
                # No update will show this removal.
                self.r.finalizers.observed(self.key, uid_of(pod))
                if not isinstance(result, NotFound):
                    error = error or result
                    continue
            with_finalizer.discard(uid_of(pod))
        return error

    def _enact_finished(self, finished: Obj | None, terminating: int) -> bool:
        if finished is None:
            return False
        if self.uncounted.get("succeeded") or self.uncounted.get("failed"):
            return False
        if terminating > 0:
            return False
        _ensure_condition(
            self.conditions,
            finished["type"],
            "True",
            finished["reason"],
            finished["message"],
            _finished_at(finished),
        )
        if finished["type"] == COMPLETE:
            self.status["completionTime"] = finished["lastTransitionTime"]
        return True


def _counts_as_failed(failed: bool, finished: Mapping[str, Any] | None) -> bool:
    # Once the job has failed, every pod that did not succeed counts as failed.
    return failed or (finished is not None and finished["type"] != SUCCESS_CRITERIA_MET)


def _finished_at(condition: Mapping[str, Any]) -> datetime:
    return parse_time_or_none(condition.get("lastTransitionTime")) or now()


# -- the reconciler ----------------------------------------------------------------------------


class JobReconciler(Reconciler):
    """Runs each Job's pods and keeps its status (upstream's syncJob)."""

    def __init__(
        self,
        expectations: Expectations,
        events: Any,
        *,
        live: Reader,
        pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF,
        max_backoff: float = MAX_POD_FAILURE_BACKOFF,
    ) -> None:
        self.expectations = expectations
        self.live = live
        self.finalizers = FinalizerExpectations()
        self.backoffs: dict[str, _Backoff] = {}
        self.events = events
        self.pod_failure_backoff = pod_failure_backoff
        self.max_backoff = max_backoff

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        try:
            job: Obj = await self.client.get(JOB, request.name, namespace=request.namespace)
        except NotFound:
            self.expectations.forget(key)
            self.finalizers.forget(key)
            self.backoffs.pop(key, None)
            return None
        if _finished(job):
            self.backoffs.pop(key, None)
            return None
        managed_by = spec_of(job).get("managedBy")
        if managed_by is not None and managed_by != JOB_CONTROLLER:
            return None
        mode = spec_of(job).get("completionMode") or "NonIndexed"
        if mode not in ("NonIndexed", "Indexed"):
            self.events.record(
                job,
                "Warning",
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            )
            return None
        sync = _JobSync(self, job, key)
        await sync.run()
        pending = self.expectations.remaining_wait(key)
        if pending:
            sync._requeue(pending)
        return Result(requeue_after=sync.requeue_after) if sync.requeue_after else None


# -- wiring ------------------------------------------------------------------------------------


def setup(manager: Manager, *, pod_failure_backoff: float) -> None:
    """Register the Job controller with `manager` (`pod_failure_backoff`: seconds before
    the first replacement of a failed pod, doubling per failure up to six minutes)."""
    expectations = Expectations()
    reconciler = JobReconciler(
        expectations,
        manager.event_recorder("job-controller"),
        live=manager.api_reader,
        pod_failure_backoff=pod_failure_backoff,
    )
    cache = manager.cache

    def job_key(pod: Mapping[str, Any]) -> str | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "Job":
            return None
        return f"{namespace_of(pod)}/{ref.get('name')}"

    def updated(old: Obj, new: Obj) -> None:
        key = job_key(new)
        if key is not None and _has_finalizer(old) and not _has_finalizer(new):
            reconciler.finalizers.observed(key, uid_of(new))

    def deleted(pod: Obj) -> None:
        key = job_key(pod)
        if key is not None:
            reconciler.finalizers.observed(key, uid_of(pod))

    (
        manager.controller()
        .named("job")
        .for_(JOB)
        .watches(POD, lambda pod: controllers_of(cache, pod, JOB))
        .with_options(max_concurrent_reconciles=5)
        .complete(reconciler)
    )
    observe_pods(manager, "Job", expectations, on_update=updated, on_delete=deleted)
    index_pods_by_controller(manager)
