"""The Customcluster controller, written the client-go way: informers, listers, a work queue.

    informer event -> handler -> queue.add(key) -> worker: get() -> sync_handler(key) -> done()
                                                     error: add_rate_limited(key); ok: forget(key)

Two informers (Customclusters and Pods) come from the manager's cache, which plays the part
of client-go's shared informer factory; their stores are the listers. Event handlers only turn
events into `namespace/name` keys. Workers take keys from the queue, which never hands the same
key to two workers at once, and call `sync_handler`, which reads everything it needs from the
listers and writes to the API server. `run(stop)` is registered with the manager as a runnable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Literal, Self

import kubeforge
from kubeforge.cache import HandlerFuncs, Informer, Store
from kubeforge.events import EventRecorder
from kubeforge.metrics import Metrics
from kubeforge.models import Pod
from kubeforge.workqueue import ShutDown, WorkQueue

from api.v1alpha1 import Customcluster
from controllers.pods import customcluster_keys, new_pod, plan

log = logging.getLogger(__name__)

NAME = "customcluster"
"""The controller's name: its queue, its metrics' `controller` label."""

BY_CUSTOMCLUSTER = "customcluster"
"""The pod lister's index: pods by the Customcluster key they are labelled for or owned by."""


class NotManaged(Exception):
    """A pod has the name a Customcluster needs but belongs to someone else."""


@kubeforge.rbac(
    groups="samplecontroller.kubeforge.dev",
    resources="customclusters",
    verbs=["get", "list", "watch"],
)
@kubeforge.rbac(
    groups="samplecontroller.kubeforge.dev",
    resources="customclusters/status",
    verbs=["get", "update", "patch"],
)
@kubeforge.rbac(groups="", resources="pods", verbs=["get", "list", "watch", "create", "delete"])
class CustomclusterController:
    """Keeps `spec.count` pods per Customcluster echoing `spec.message`."""

    def __init__(
        self,
        client: kubeforge.ObjectClient,
        customclusters: Informer,
        pods: Informer,
        *,
        workers: int = 2,
        recorder: EventRecorder | None = None,
        metrics: Metrics | None = None,
        cache_sync_timeout: float = 120.0,
        drain_timeout: float = 30.0,
    ) -> None:
        self.client = client
        self.informers = (customclusters, pods)
        self.customcluster_lister: Store = customclusters.store
        self.pod_lister: Store = pods.store
        self.workers = workers
        self.recorder = recorder
        self.cache_sync_timeout = cache_sync_timeout
        self.drain_timeout = drain_timeout

        # The same series a builder-made controller reports, under this controller's name.
        metrics = metrics if metrics is not None else Metrics()
        metrics.init_controller(NAME, workers)
        self.stats = metrics.controller(NAME)
        queue_metrics = metrics.queue_metrics(NAME)
        self.queue: WorkQueue[str] = WorkQueue(NAME, metrics=queue_metrics)
        queue_metrics.set_unfinished_source(
            lambda: (
                self.queue.unfinished_work_seconds(),
                self.queue.longest_running_processor_seconds(),
            )
        )

        self.pod_lister.add_indexer(BY_CUSTOMCLUSTER, customcluster_keys)
        customclusters.add_handler(
            HandlerFuncs(
                add=lambda obj, _initial: self.enqueue(obj),
                # Every update, resyncs included: a periodic full pass over each Customcluster.
                update=lambda _old, new: self.enqueue(new),
                # Nothing to do on delete: the pods it controls are garbage-collected.
            )
        )
        pods.add_handler(
            HandlerFuncs(
                add=lambda obj, _initial: self.handle_pod(obj),
                update=self.handle_pod_update,
                delete=self.handle_pod,
            )
        )

    @classmethod
    def from_manager(cls, manager: kubeforge.Manager, *, workers: int = 2) -> Self:
        """A controller on `manager`'s shared informers, client, events and metrics (register
        it with `manager.add(controller.run)`)."""
        return cls(
            # The manager's client writes straight to the API server, as a clientset does
            # (its reads would come from the same cache the listers are), and is the one a
            # test's interceptors and crash points wrap.
            manager.client,
            manager.cache.informer_for(Customcluster),
            manager.cache.informer_for(Pod),
            workers=workers,
            recorder=manager.event_recorder("customcluster-controller"),
            metrics=manager.metrics,
        )

    # Event handlers: objects in, keys out. ----------------------------------------------------

    def enqueue(self, obj: dict[str, Any]) -> None:
        """Queue a Customcluster's `namespace/name` key."""
        meta = obj.get("metadata") or {}
        self.queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    def handle_pod(self, pod: dict[str, Any]) -> None:
        """Queue the Customclusters a pod is labelled for or controlled by, if they exist."""
        for key in customcluster_keys(pod):
            if key in self.customcluster_lister:
                self.queue.add(key)

    def handle_pod_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Queue the Customclusters of the pod before and after a change."""
        # A resync repeats the object unchanged: nothing about the pod is new.
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        # Both: a relabelled pod leaves one Customcluster short and may join another.
        self.handle_pod(old)
        self.handle_pod(new)

    # Running: wait for the caches, then the workers. --------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Wait for the informers' first lists, run the workers until `stop` is set, then let
        in-flight syncs finish."""
        log.info("waiting for the informer caches to sync")
        synced = await asyncio.gather(
            *(informer.wait_synced(self.cache_sync_timeout) for informer in self.informers)
        )
        if not all(synced):
            log.error("the caches did not sync within %ss", self.cache_sync_timeout)
            raise TimeoutError(f"{NAME}: caches did not sync within {self.cache_sync_timeout}s")
        tasks = [
            asyncio.create_task(self.run_worker(), name=f"{NAME} worker {index}")
            for index in range(self.workers)
        ]
        log.info("started %d workers", self.workers)
        try:
            await stop.wait()
        finally:
            await self.queue.shutdown_with_drain(self.drain_timeout)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            log.info("workers stopped")

    async def run_worker(self) -> None:
        """Process keys until the queue shuts down."""
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """Sync one key; False once the queue is shut down."""
        try:
            key, _priority = await self.queue.get()
        except ShutDown:
            return False
        self.stats.worker_active(1)
        started = time.perf_counter()
        try:
            await self.sync_handler(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stats.error()
            self.stats.reconciled("error", time.perf_counter() - started)
            # Back off per key (5 ms doubling to 1000 s); an event for the key comes in sooner.
            self.queue.add_rate_limited(key)
            log.error(
                "syncing %s failed (%d in a row), retrying: %s",
                key,
                self.queue.num_requeues(key),
                exc,
                exc_info=not isinstance(exc, kubeforge.ApiError | NotManaged),
            )
        else:
            self.queue.forget(key)
            self.stats.reconciled("success", time.perf_counter() - started)
        finally:
            self.stats.worker_active(-1)
            self.queue.done(key)
        return True

    # The sync handler: compare the spec with the pods, act, report. -----------------------------

    async def sync_handler(self, key: str) -> None:
        """Bring the pods of the Customcluster `key` in line with its spec and report them."""
        raw = self.customcluster_lister.get(key)
        if raw is None:
            log.info("%s is gone; the pods it controlled are garbage-collected", key)
            return
        cc = Customcluster.from_dict(raw)
        pods = [Pod.from_dict(p) for p in self._pods_of(key)]
        todo = plan(cc, pods)
        for pod, reason in todo.delete:
            await self._delete_pod(cc, pod, reason)
        blocked: list[NotManaged] = []
        for pod_name in todo.create:
            try:
                await self._create_pod(cc, pod_name)
            except NotManaged as exc:
                blocked.append(exc)  # the other pods can still be made
        await self._update_status(cc, todo.running)
        if blocked:
            raise blocked[0]  # retried with backoff until the name is free

    def _pods_of(self, key: str) -> list[dict[str, Any]]:
        found = []
        for pod_key in self.pod_lister.by_index(BY_CUSTOMCLUSTER, key):
            pod = self.pod_lister.get(pod_key)
            if pod is not None:
                found.append(pod)
        return found

    async def _create_pod(self, cc: Customcluster, name: str) -> None:
        namespace = cc.metadata.namespace
        if f"{namespace}/{name}" in self.pod_lister:
            # The name is taken by a pod that is neither labelled for nor owned by cc.
            message = f"pod {name} already exists and is not managed by Customcluster"
            self._event(cc, "Warning", "ErrResourceExists", message)
            raise NotManaged(f"{namespace}/{name}: {message} {cc.metadata.name}")
        try:
            await self.client.create(new_pod(cc, name))
        except kubeforge.AlreadyExists:
            return  # created by an earlier sync the cache has not caught up with yet
        log.info("%s/%s: created pod %s", namespace, cc.metadata.name, name)
        self._event(cc, "Normal", "Created", f"created pod {name}")

    async def _delete_pod(self, cc: Customcluster, pod: Pod, reason: str) -> None:
        name = pod.metadata.name or ""
        try:
            # The UID precondition: never delete a newer pod that took over the name.
            await self.client.delete(
                Pod,
                name,
                namespace=pod.metadata.namespace,
                preconditions={"uid": pod.metadata.uid or ""},
            )
        except (kubeforge.NotFound, kubeforge.Conflict):
            return  # already gone
        log.info("%s/%s: deleted %s pod %s", pod.metadata.namespace, cc.metadata.name, reason, name)
        self._event(cc, "Normal", "Deleted", f"deleted {reason} pod {name}")

    async def _update_status(self, cc: Customcluster, running: int) -> None:
        status = cc.status
        if status is not None and (status.running, status.message) == (running, cc.spec.message):
            return
        try:
            await self.client.patch_status(
                Customcluster,
                cc.metadata.name or "",
                {"status": {"running": running, "message": cc.spec.message}},
                namespace=cc.metadata.namespace,
            )
        except kubeforge.NotFound:
            return  # deleted meanwhile

    def _event(
        self, cc: Customcluster, kind: Literal["Normal", "Warning"], reason: str, note: str
    ) -> None:
        if self.recorder is not None:
            self.recorder.record(cc, kind, reason, note)
