"""The DaemonSet controller: one pod on every node that should run it.

It follows pkg/controller/daemon (daemon_controller.go, update.go) step for step. Each
pod template is a ControllerRevision (`_history`) named `<daemonset>-<hash>` and labelled
`controller-revision-hash`; pods are made from the current one (`_daemonpods`: pinned to
their node, with the daemon tolerations) on each node that should run one (nodeSelector,
required node affinity, taints), at most 250 per sync in slow-start batches; pods on nodes
that should no longer run them are deleted, failed ones are deleted and made again (with a
per-node backoff), surplus ones beyond the oldest deleted. `RollingUpdate` replaces old pods
while at most `maxUnavailable` nodes are without an available pod, or, with `maxSurge`,
starts the new pod beside the old one and deletes the old once the new is available;
`OnDelete` leaves replacing to the user. Revisions beyond `revisionHistoryLimit` no pod runs
are deleted. The status counts desired, scheduled, misscheduled, ready, up-to-date and
available pods, which `kubectl rollout status` reads.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge import clock
from kubeforge._api.machinery.access import (
    annotations_of,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._api.machinery.timestamps import now
from kubeforge._client.errors import AlreadyExists, ApiError, NotFound
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._children import generate_name_prefix, pod_from_template
from kubeforge._cluster.controllers._claiming import claim, controllers_of, owner_reference
from kubeforge._cluster.controllers._daemonpods import (
    HASH_LABEL,
    daemon_pod_template,
    is_pod_updated,
    node_should_run,
    pin_to_node,
    target_node,
)
from kubeforge._cluster.controllers._expectations import Expectations, observe_pods
from kubeforge._cluster.controllers._hashing import template_hash
from kubeforge._cluster.controllers._history import (
    CONTROLLER_REVISION,
    claimed_revisions,
    delete_revision,
    go_json,
    renumber,
    revision_number,
    template_patch,
)
from kubeforge._cluster.controllers._podindex import claimable_pods, index_pods_by_controller
from kubeforge._cluster.controllers._podstate import (
    is_pod_available,
    is_pod_ready,
    is_pod_terminal,
    seconds_until_available,
)
from kubeforge._cluster.controllers._writes import (
    gather_errors,
    namespace_terminating,
    quiet_conflicts,
    replace,
)
from kubeforge._cluster.controllers.deployment import scaled_value
from kubeforge._cluster.controllers.replicaset import slow_start
from kubeforge._runtime.handler import Queue
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["BURST_REPLICAS", "DaemonSetReconciler", "setup"]

Obj = dict[str, Any]

DAEMON_SET = "apps/v1/DaemonSet"
POD = "v1/Pod"
NODE = "v1/Node"
# At most this many pods are created or deleted in one sync (BurstReplicas).
BURST_REPLICAS = 250
DEFAULT_HISTORY_LIMIT = 10
# Deleting a failed pod again on the same node waits 1 s, doubling up to 15 minutes.
FAILED_POD_BACKOFF = 1.0
FAILED_POD_BACKOFF_MAX = 900.0


def _creation_order(pod: Mapping[str, Any]) -> tuple[int, str, str]:
    """Scheduled pods first, then the oldest, then by name (podByCreationTimestampAndPhase)."""
    return (
        0 if spec_of(pod).get("nodeName") else 1,
        str(meta_of(pod).get("creationTimestamp") or ""),
        name_of(pod),
    )


class _Backoff:
    """Per-key exponential backoff (client-go's flowcontrol.Backoff), on kubeforge.clock."""

    def __init__(self, initial: float, limit: float) -> None:
        self.initial = initial
        self.limit = limit
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (delay, last update)

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0] if entry is not None else 0.0

    def in_backoff(self, key: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and clock.monotonic() - entry[1] < entry[0]

    def next(self, key: str) -> None:
        at = clock.monotonic()
        entry = self._entries.get(key)
        # An entry untouched for twice the limit starts over.
        if entry is None or at - entry[1] > 2 * self.limit:
            self._entries[key] = (self.initial, at)
        else:
            self._entries[key] = (min(entry[0] * 2, self.limit), at)


class DaemonSetReconciler(Reconciler):
    """Runs a DaemonSet's pod on every node that should run it; reports its status."""

    def __init__(self, expectations: Expectations, events: Any, *, live: Reader) -> None:
        self.expectations = expectations
        self.events = events
        # Reads that must not trust the cache (adoption, a revision name taken) go live.
        self.live = live
        self.failed_backoff = _Backoff(FAILED_POD_BACKOFF, FAILED_POD_BACKOFF_MAX)

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        try:
            ds: Obj = await self.client.get(DAEMON_SET, request.name, namespace=request.namespace)
        except NotFound:
            self.expectations.forget(key)
            return None
        nodes: list[Obj] = list(await self.client.list(NODE))
        selector = spec_of(ds).get("selector")
        if not (selector or {}).get("matchLabels") and not (selector or {}).get("matchExpressions"):
            message = "This daemon set is selecting all pods. A non-empty selector is required."
            self.events.record(ds, "Warning", "SelectingAll", message)
            return None
        if is_deleting(ds):
            # Its revisions may be gone already: nothing can be said of it.
            return None
        current, old = await self._history(ds)
        hash_value = str(labels_of(current).get(HASH_LABEL) or "")
        if not self.expectations.satisfied(key):
            return await self._write_status(ds, nodes, hash_value, observed=False)
        error: ApiError | None = None
        try:
            await self._manage(ds, key, nodes, hash_value)
            strategy = (spec_of(ds).get("updateStrategy") or {}).get("type")
            if self.expectations.satisfied(key) and strategy == "RollingUpdate":
                await self._rolling_update(ds, key, nodes, hash_value)
            await self._cleanup_history(ds, old)
        except ApiError as exc:
            error = exc
        result = await self._write_status(ds, nodes, hash_value, observed=True)
        if error is not None:
            raise error
        return result

    # pods by node ------------------------------------------------------------------------------

    async def _pods_by_node(
        self, ds: Obj, *, deleted_terminal: bool = False
    ) -> dict[str, list[Obj]]:
        """The DaemonSet's pods (adopting and releasing by selector) by the node they are
        for; terminal pods being deleted only with `deleted_terminal`."""
        selector = spec_of(ds).get("selector")
        pods = await claim(
            self.client,
            self.live,
            ds,
            POD,
            await claimable_pods(self.client, ds),
            lambda pod: label_selector_matches(selector, labels_of(pod)),
        )
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            if not deleted_terminal and is_deleting(pod) and is_pod_terminal(pod):
                continue
            node = target_node(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        return by_node

    # manage ------------------------------------------------------------------------------------

    async def _manage(self, ds: Obj, key: str, nodes: Sequence[Obj], hash_value: str) -> None:
        """Create the pods nodes lack, delete those nodes should not run."""
        by_node = await self._pods_by_node(ds)
        create_on: list[str] = []
        delete: list[str] = []
        for node in nodes:
            to_create, to_delete = self._pods_for_node(ds, node, by_node, hash_value)
            create_on += to_create
            delete += to_delete
        # Unscheduled pods for nodes that are gone (the pod GC cannot see them).
        existing = {name_of(n) for n in nodes}
        for node_name, pods in by_node.items():
            if node_name not in existing:
                delete += [name_of(p) for p in pods if not spec_of(p).get("nodeName")]
        await self._sync_nodes(ds, key, delete, create_on, hash_value)

    def _pods_for_node(
        self, ds: Obj, node: Mapping[str, Any], by_node: Mapping[str, list[Obj]], hash_value: str
    ) -> tuple[list[str], list[str]]:
        """The node to make a pod on, and the pods to delete there (podsShouldBeOnNode)."""
        node_name = name_of(node)
        should_run, should_continue = node_should_run(node, ds)
        pods = by_node.get(node_name)
        if should_run and not pods:
            return [node_name], []
        if not should_continue:
            return [], [name_of(p) for p in pods or () if not is_deleting(p)]
        create: list[str] = []
        delete: list[str] = []
        running: list[Obj] = []
        for pod in pods or ():
            if is_deleting(pod):
                continue
            phase = status_of(pod).get("phase")
            if phase == "Failed":
                observed = status_of(ds).get("observedGeneration") or 0
                backoff_key = f"{meta_of(ds).get('uid')}/{observed}/{node_name}"
                if self.failed_backoff.in_backoff(backoff_key):
                    continue
                self.failed_backoff.next(backoff_key)
                message = (
                    f"Found failed daemon pod {namespace_of(pod)}/{name_of(pod)} on node "
                    f"{node_name}, will try to kill it"
                )
                self.events.record(ds, "Warning", "FailedDaemonPod", message)
                delete.append(name_of(pod))
            elif phase == "Succeeded":
                message = (
                    f"Found succeeded daemon pod {namespace_of(pod)}/{name_of(pod)} on node "
                    f"{node_name}, will try to delete it"
                )
                self.events.record(ds, "Normal", "SucceededDaemonPod", message)
                delete.append(name_of(pod))
            else:
                running.append(pod)
        running.sort(key=_creation_order)
        if self._surge(ds, 1) == 0:
            # Without surge, the oldest pod stays and the others go.
            delete += [name_of(p) for p in running[1:]]
            return create, delete
        if len(running) <= 1:
            if not running and should_run:
                create.append(node_name)
            return create, delete
        # Surging: keep the oldest new pod and the oldest old one, the old one only while
        # it is ready and the new one not yet available.
        newest: Obj | None = None
        oldest: Obj | None = None
        for pod in running:
            if is_pod_updated(pod, hash_value):
                if newest is None:
                    newest = pod
                    continue
            elif oldest is None:
                oldest = pod
                continue
            delete.append(name_of(pod))
        if newest is not None and oldest is not None:
            min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest) or is_pod_available(newest, min_ready, now()):
                delete.append(name_of(oldest))
        return create, delete

    async def _sync_nodes(
        self, ds: Obj, key: str, delete: Sequence[str], create_on: Sequence[str], hash_value: str
    ) -> None:
        """Delete pods and make pods on nodes, at most BURST_REPLICAS of each (syncNodes)."""
        create_on = list(create_on)[:BURST_REPLICAS]
        delete = list(delete)[:BURST_REPLICAS]
        self.expectations.expect(key, len(create_on), delete)
        template = daemon_pod_template(ds, hash_value)
        prefix = generate_name_prefix(name_of(ds))
        nodes = iter(create_on)

        async def create_one() -> bool:
            pod = pod_from_template(template, ds, generate_name=prefix)
            pod["spec"] = pin_to_node(pod["spec"], next(nodes))
            try:
                created = await self.client.create(pod)
            except ApiError as exc:
                self.expectations.creation_observed(key)
                if namespace_terminating(exc):
                    return False
                self.events.record(ds, "Warning", "FailedCreate", f"Error creating: {exc}")
                raise
            self.events.record(ds, "Normal", "SuccessfulCreate", f"Created pod: {name_of(created)}")
            return True

        attempted, first = await slow_start(len(create_on), create_one)
        for _ in range(len(create_on) - attempted):
            self.expectations.creation_observed(key)
        results = await gather_errors(
            [self.client.delete(POD, name, namespace=namespace_of(ds)) for name in delete]
        )
        for name, error in zip(delete, results, strict=True):
            if error is None:
                self.events.record(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
                continue
            self.expectations.deletion_observed(key, name)
            if not isinstance(error, NotFound):
                self.events.record(ds, "Warning", "FailedDelete", f"Error deleting: {error}")
                first = first or error
        if first is not None:
            raise first

    # rolling update (update.go) ----------------------------------------------------------------

    @staticmethod
    def _rolling(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
        strategy = spec_of(ds).get("updateStrategy") or {}
        if strategy.get("type") != "RollingUpdate":
            return None
        rolling = strategy.get("rollingUpdate")
        return rolling if isinstance(rolling, Mapping) else None

    def _surge(self, ds: Mapping[str, Any], desired: int) -> int:
        rolling = self._rolling(ds)
        return scaled_value((rolling or {}).get("maxSurge"), desired, True) if rolling else 0

    def _unavailable(self, ds: Mapping[str, Any], desired: int) -> int:
        rolling = self._rolling(ds)
        if rolling is None:
            return 0
        return scaled_value(rolling.get("maxUnavailable"), desired, True)

    async def _rolling_update(
        self, ds: Obj, key: str, nodes: Sequence[Obj], hash_value: str
    ) -> None:
        """Replace old pods within maxUnavailable, or beside them within maxSurge."""
        by_node = await self._pods_by_node(ds)
        node_by_name = {name_of(n): n for n in nodes}
        desired = 0
        for node in nodes:
            if node_should_run(node, ds)[0]:
                desired += 1
                by_node.setdefault(name_of(node), [])
        max_surge = self._surge(ds, desired)
        max_unavailable = self._unavailable(ds, desired)
        if desired > 0 and max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        at = now()

        def available(pod: Mapping[str, Any]) -> bool:
            return is_pod_available(pod, min_ready, at)

        def should_run(node_name: str) -> bool:
            node = node_by_name.get(node_name)
            return node is not None and node_should_run(node, ds)[0]

        if max_surge == 0:
            unavailable = 0
            replace_now: list[str] = []
            candidates: list[str] = []
            for pods in by_node.values():
                found = _new_and_old(pods, hash_value)
                if found is None:
                    unavailable += 1  # the manage loop prunes the excess first
                    continue
                new_pod, old_pod = found
                if (old_pod is None) == (new_pod is None):
                    unavailable += 1
                elif new_pod is not None:
                    if not available(new_pod):
                        unavailable += 1
                elif old_pod is not None and not available(old_pod):
                    replace_now.append(name_of(old_pod))
                    unavailable += 1
                elif old_pod is not None and unavailable < max_unavailable:
                    candidates.append(name_of(old_pod))
            room = min(max(max_unavailable - unavailable, 0), len(candidates))
            await self._sync_nodes(ds, key, replace_now + candidates[:room], [], hash_value)
            return

        delete: list[str] = []
        leaving: list[str] = []
        create_now: list[str] = []
        create_candidates: list[str] = []
        surging = 0
        available_count = 0
        for node_name, pods in by_node.items():
            found = _new_and_old(pods, hash_value)
            if found is None:
                surging += 1
                continue
            new_pod, old_pod = found
            counted = old_pod if old_pod is not None else new_pod
            if counted is not None and available(counted):
                available_count += 1
            if old_pod is None:
                continue
            if new_pod is None:
                if not available(old_pod):
                    if not should_run(node_name):
                        delete.append(name_of(old_pod))
                        continue
                    create_now.append(node_name)
                elif not should_run(node_name):
                    leaving.append(name_of(old_pod))
                elif surging < max_surge:
                    create_candidates.append(node_name)
                continue
            if not available(new_pod):
                surging += 1
                continue
            delete.append(name_of(old_pod))
        # Pods on nodes they should leave go only as others become available.
        deletable = min(available_count - desired, len(leaving))
        if deletable > 0:
            delete += leaving[:deletable]
        room = min(max(max_surge - surging, 0), len(create_candidates))
        await self._sync_nodes(ds, key, delete, create_now + create_candidates[:room], hash_value)

    # history (update.go) -----------------------------------------------------------------------

    async def _history(self, ds: Obj) -> tuple[Obj, list[Obj]]:
        """The current revision, made if missing, and the old ones (constructHistory)."""
        current: list[Obj] = []
        old: list[Obj] = []
        patch = go_json(template_patch(ds))
        for revision in await claimed_revisions(self.client, self.live, ds, release=True):
            if HASH_LABEL not in labels_of(revision):
                meta = revision["metadata"]
                meta["labels"] = {**(meta.get("labels") or {}), HASH_LABEL: name_of(revision)}
                revision = await self.client.update(revision)
            if go_json(revision.get("data")) == patch:
                current.append(revision)
            else:
                old.append(revision)
        number = max((revision_number(r) for r in old), default=0) + 1
        if not current:
            return await self._snapshot(ds, number), old
        kept = await self._dedup(ds, current)
        if revision_number(kept) < number:
            kept = await renumber(self.client, kept, number)
        return kept, old

    async def _dedup(self, ds: Obj, current: Sequence[Obj]) -> Obj:
        """Keep the newest of several revisions of the current template; pods of the others
        are relabelled to it."""
        if len(current) == 1:
            return current[0]
        kept = max(current, key=revision_number)
        kept_hash = labels_of(kept).get(HASH_LABEL)
        for pods in (await self._pods_by_node(ds, deleted_terminal=True)).values():
            for pod in pods:
                if labels_of(pod).get(HASH_LABEL) != kept_hash:
                    await self.client.patch(
                        POD,
                        name_of(pod),
                        {"metadata": {"labels": {HASH_LABEL: kept_hash}}},
                        patch_type="merge",
                        namespace=namespace_of(pod),
                    )
        for revision in current:
            if revision is not kept:
                await delete_revision(self.client, revision)
        return kept

    async def _snapshot(self, ds: Obj, number: int) -> Obj:
        """Record the current template as revision `number` (snapshot). A name taken by
        another template counts a collision, so the next try hashes differently."""
        collisions = status_of(ds).get("collisionCount")
        hash_value = template_hash(spec_of(ds).get("template") or {}, collisions)
        name = f"{name_of(ds)}-{hash_value}"
        revision = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": namespace_of(ds),
                "labels": {**labels_of(spec_of(ds).get("template")), HASH_LABEL: hash_value},
                "annotations": dict(annotations_of(ds)),
                "ownerReferences": [owner_reference(ds)],
            },
            "data": template_patch(ds),
            "revision": number,
        }
        try:
            created: Obj = await self.client.create(revision)
            return created
        except AlreadyExists:
            existing: Obj = await self.live.get(
                CONTROLLER_REVISION, name, namespace=namespace_of(ds)
            )
            if go_json(existing.get("data")) == go_json(revision["data"]):
                return existing
            fresh: Obj = await self.live.get(DAEMON_SET, name_of(ds), namespace=namespace_of(ds))
            if status_of(fresh).get("collisionCount") == collisions:
                fresh.setdefault("status", {})["collisionCount"] = int(collisions or 0) + 1
                await self.client.update_status(fresh)
            raise

    async def _cleanup_history(self, ds: Obj, old: Sequence[Obj]) -> None:
        """Delete the oldest revisions no pod runs beyond revisionHistoryLimit."""
        limit = spec_of(ds).get("revisionHistoryLimit")
        limit = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        surplus = len(old) - limit
        if surplus <= 0:
            return
        by_node = await self._pods_by_node(ds, deleted_terminal=True)
        live = {labels_of(p).get(HASH_LABEL) for pods in by_node.values() for p in pods}
        for revision in sorted(old, key=revision_number):
            if surplus <= 0:
                break
            if labels_of(revision).get(HASH_LABEL) in live:
                continue
            await delete_revision(self.client, revision)
            surplus -= 1

    # status ------------------------------------------------------------------------------------

    async def _write_status(
        self, ds: Obj, nodes: Sequence[Obj], hash_value: str, *, observed: bool
    ) -> Result | None:
        """Count and record the status (updateDaemonSetStatus); come back when a ready pod
        turns available."""
        by_node = await self._pods_by_node(ds)
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        at = now()
        desired = scheduled = misscheduled = ready = updated = available = 0
        waits: list[float] = []
        for node in nodes:
            pods = by_node.get(name_of(node)) or []
            if not node_should_run(node, ds)[0]:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            scheduled += 1
            pod = min(pods, key=_creation_order)
            if is_pod_ready(pod):
                ready += 1
                remaining = seconds_until_available(pod, min_ready, at)
                if remaining == 0.0:
                    available += 1
                elif remaining:
                    waits.append(remaining)
            if is_pod_updated(pod, hash_value):
                updated += 1
        status: Obj = dict(status_of(ds))
        generation = int(meta_of(ds).get("generation") or 0)
        if observed:
            status["observedGeneration"] = generation
        counts = {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": scheduled,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
        }
        # Zero counts the API leaves out (omitempty); the first four it always writes.
        for field, value in counts.items():
            if value or field in ("desiredNumberScheduled", "currentNumberScheduled"):
                status[field] = value
            elif field in ("numberMisscheduled", "numberReady"):
                status[field] = 0
            else:
                status.pop(field, None)
        if status != dict(status_of(ds)):
            ds["status"] = status
            replace(ds, await self.client.update_status(ds))
        return Result(requeue_after=min(waits)) if waits else None


def _new_and_old(pods: Sequence[Obj], hash_value: str) -> tuple[Obj | None, Obj | None] | None:
    """The node's one new and one old pod (not being deleted); None when it has more of
    either (findUpdatedPodsOnNode)."""
    new_pod: Obj | None = None
    old_pod: Obj | None = None
    for pod in pods:
        if is_deleting(pod):
            continue
        if is_pod_updated(pod, hash_value):
            if new_pod is not None:
                return None
            new_pod = pod
        else:
            if old_pod is not None:
                return None
            old_pod = pod
    return new_pod, old_pod


class _NodeEvents:
    """Node changes that concern DaemonSets: a new node, one that changed whether a
    DaemonSet should run there (labels, taints), and a node gone (its pods leave the
    counts)."""

    def __init__(self, manager: Manager) -> None:
        self.cache = manager.cache

    def _daemonsets(self) -> list[Obj]:
        found: list[Obj] = self.cache.list(DAEMON_SET)
        return found

    @staticmethod
    def _request(ds: Mapping[str, Any]) -> Request:
        return Request(namespace_of(ds), name_of(ds))

    def create(self, obj: Mapping[str, Any], queue: Queue, initial: bool) -> None:
        for ds in self._daemonsets():
            if node_should_run(obj, ds)[0]:
                queue.add(self._request(ds))

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any], queue: Queue) -> None:
        for ds in self._daemonsets():
            if node_should_run(old, ds) != node_should_run(new, ds):
                queue.add(self._request(ds))

    def delete(self, obj: Mapping[str, Any], queue: Queue) -> None:
        for ds in self._daemonsets():
            queue.add(self._request(ds))


# -- wiring ------------------------------------------------------------------------------------


def setup(manager: Manager) -> None:
    """Register the DaemonSet controller with `manager`."""
    expectations = Expectations()
    reconciler = DaemonSetReconciler(
        expectations, manager.event_recorder("daemonset-controller"), live=manager.api_reader
    )
    cache = manager.cache
    (
        manager.controller()
        .named("daemonset")
        .for_(DAEMON_SET)
        .watches(POD, lambda pod: controllers_of(cache, pod, DAEMON_SET))
        .watches(NODE, _NodeEvents(manager))
        .watches(CONTROLLER_REVISION, lambda rev: controllers_of(cache, rev, DAEMON_SET))
        .with_options(max_concurrent_reconciles=2)
        .complete(reconciler)
    )
    observe_pods(manager, "DaemonSet", expectations)
    index_pods_by_controller(manager)
