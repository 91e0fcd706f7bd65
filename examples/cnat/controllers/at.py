"""The At controller: wait for the schedule, run the command in a pod, record how it ended.

    (no phase) -> PENDING -> RUNNING -> DONE

PENDING requeues until the scheduled time (never sleeping in reconcile; the time is
kubeforge.clock's, which a test can run on virtual time); RUNNING creates the pod, owned by the
At, and waits for it to finish; DONE is final. Each pass reads the current
state and does one step, so a restart of the controller at any point loses nothing.

Every At carries the finalizer `cnat.kubeforge.dev/cancel` (`kubeforge.with_finalizer`): an
At deleted before it is DONE has its command stopped at once (its pod deleted) and a
`Cancelled` event recorded before it goes.
"""

from __future__ import annotations

import logging
import shlex

import kubeforge
from kubeforge import clock
from kubeforge.events import EventRecorder
from kubeforge.models import Container, ObjectMeta, Pod, PodSpec

from api.v1 import At, AtStatus
from api.v1.at import Phase

log = logging.getLogger(__name__)

IMAGE = "busybox"
FINISHED = ("Succeeded", "Failed")
FINALIZER = "cnat.kubeforge.dev/cancel"


def pod_for(at: At) -> Pod:
    """The pod that runs the At's command: named after the At (`kubectl logs <at>` works)
    and controlled by it, so it is garbage-collected with it."""
    pod = Pod(
        metadata=ObjectMeta(
            name=at.metadata.name,
            namespace=at.metadata.namespace,
            labels={"cnat.kubeforge.dev/at": at.metadata.name or ""},
        ),
        spec=PodSpec(
            containers=[Container(name="command", image=IMAGE, command=list(at.spec.command))],
            restart_policy="OnFailure",
        ),
    )
    kubeforge.set_controller_reference(at, pod)
    return pod


@kubeforge.rbac(
    groups="cnat.kubeforge.dev", resources="ats", verbs=["get", "list", "watch", "patch"]
)
@kubeforge.rbac(
    groups="cnat.kubeforge.dev", resources="ats/status", verbs=["get", "update", "patch"]
)
@kubeforge.rbac(groups="", resources="pods", verbs=["get", "list", "watch", "create", "delete"])
class AtReconciler(kubeforge.Reconciler):
    """Moves an At through its phases."""

    def __init__(self, events: EventRecorder) -> None:
        self.events = events

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            at = await self.client.get(At, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None  # deleted; its pod goes with it
        return await kubeforge.with_finalizer(
            self.client, at, FINALIZER, apply=self.advance, cleanup=self.cancel
        )

    async def cancel(self, at: At) -> kubeforge.Result | None:
        """The At is being deleted: if its command has not finished, stop it now rather than
        when garbage collection gets to the pod, and say so."""
        phase = at.status.phase if at.status is not None else None
        if phase != "DONE":
            name, namespace = at.metadata.name or "", at.metadata.namespace
            await kubeforge.ignore_not_found(self.client.delete(Pod, name, namespace=namespace))
            log.info("%s/%s: cancelled in phase %s", namespace, name, phase)
            self.events.record(at, "Normal", "Cancelled", f"deleted in phase {phase}")
        return None

    async def advance(self, at: At) -> kubeforge.Result | None:
        """One step through the phases."""
        phase = at.status.phase if at.status is not None else None

        if phase is None:
            await self.set_phase(at, "PENDING")
            return None

        if phase == "PENDING":
            wait = (at.spec.schedule - clock.now()).total_seconds()
            if wait > 0:
                log.info(
                    "%s/%s: %.1f s until %s",
                    at.metadata.namespace,
                    at.metadata.name,
                    wait,
                    at.spec.schedule,
                )
                return kubeforge.Result(requeue_after=wait)
            await self.set_phase(at, "RUNNING")
            return None

        if phase == "RUNNING":
            try:
                pod = await self.client.get(
                    Pod, at.metadata.name or "", namespace=at.metadata.namespace
                )
            except kubeforge.NotFound:
                await kubeforge.ignore_already_exists(self.client.create(pod_for(at)))
                shown = shlex.join(at.spec.command)
                log.info(
                    "%s/%s: started pod running %s", at.metadata.namespace, at.metadata.name, shown
                )
                self.events.record(at, "Normal", "Started", f"pod {at.metadata.name} runs {shown}")
                return None  # the pod's changes bring us back
            pod_phase = pod.status.phase if pod.status is not None else None
            if pod_phase in FINISHED:
                self.events.record(at, "Normal", "Finished", f"pod {pod.metadata.name} {pod_phase}")
                await self.set_phase(at, "DONE")
        return None

    async def set_phase(self, at: At, phase: Phase) -> None:
        """Record the new phase; a conflict (someone else changed the At) is retried by
        raising, and the next pass starts from what is there now."""
        log.info("%s/%s: phase %s", at.metadata.namespace, at.metadata.name, phase)
        at.status = AtStatus(phase=phase)
        await self.client.update_status(at)
        return
