"""`POST pods/<name>/eviction`: delete a pod unless that would break its PodDisruptionBudget,
as pkg/registry/core/pod/storage/eviction.go (Kubernetes 1.33) decides.

A pod that already is disrupted (Succeeded, Failed, Pending, or being deleted) is deleted at
once. Otherwise the one budget selecting it must allow a disruption: its status must be
current (observedGeneration) and `disruptionsAllowed` above 0; the eviction then takes one
(`disruptionsAllowed` minus one, the pod listed in `disruptedPods` so the disruption
controller stops counting it) before the pod is deleted. A pod that is not ready is
deleted without taking from the budget when the budget is met anyway, or when its
`unhealthyPodEvictionPolicy` is AlwaysAllow. A refusal is 429 TooManyRequests whose cause
(type DisruptionBudget) names the budget. Before the deletion the pod gets the condition
DisruptionTarget (reason EvictionByEvictionAPI). Eviction bodies of policy/v1 and
policy/v1beta1 are read alike; their `deleteOptions` (grace period, preconditions, dry run)
apply to the deletion.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubeforge import clock
from kubeforge.api.machinery.selectors import label_selector_matches
from kubeforge.api.machinery.timestamps import format_time
from kubeforge.apiserver.handlers.call import Call, stored_object
from kubeforge.apiserver.handlers.writes import Writes
from kubeforge.apiserver.request.deleteoptions import decode_delete_options
from kubeforge.apiserver.request.errors import StatusError
from kubeforge.apiserver.storage.codec import Codec
from kubeforge.apiserver.storage.store import Store, StoredObject
from kubeforge.apiserver.types.registry import Registry
from kubeforge.apiserver.types.resource import ResourceType

__all__ = ["Evictions"]

Obj = dict[str, Any]

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
# Evictions granted but not yet seen by the disruption controller beyond which a budget
# refuses more (MaxDisruptedPodSize).
MAX_DISRUPTED_PODS = 2000
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget."
# Seconds a client is told to wait while a budget's status is behind its spec.
RETRY_AFTER = 10


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _deleting(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _too_many_requests(message: str, retry_after: int, cause: str) -> StatusError:
    details: Obj = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    headers = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return StatusError(429, "TooManyRequests", message, details, headers)


def _still_processing(pdb_name: str) -> StatusError:
    """The budget's status is not current yet: try again shortly."""
    return _too_many_requests(
        REFUSAL,
        RETRY_AFTER,
        f"The disruption budget {pdb_name} is still being processed by the server.",
    )


def _forbidden(pdb_name: str, why: str) -> StatusError:
    return StatusError.forbidden("policy", "poddisruptionbudget", pdb_name, why)


class Evictions:
    """Evicts pods, consulting their PodDisruptionBudgets."""

    def __init__(self, store: Store, registry: Registry, writes: Writes, codec: Codec) -> None:
        self.store = store
        self.registry = registry
        self.writes = writes
        self.codec = codec

    def _budget_type(self) -> ResourceType:
        rt = self.registry.get("policy", "v1", "poddisruptionbudgets")
        assert rt is not None
        return rt

    async def evict(self, call: Call, body: Any) -> Obj:
        """Evict the pod `call` names; the Success Status, or the refusal raised."""
        body = _eviction(body)
        if call.admission is not None:
            body = await call.admission.mutate("CREATE", body, None)
        options = self._delete_options(call, body)
        if call.admission is not None:
            await call.admission.validate("CREATE", body, None)
        dry_run = options.get("dryRun") == ["All"]
        # The deletion is not admitted again, and follows the eviction's dry run.
        deleting = replace(call, admission=None)
        if dry_run:
            deleting = replace(deleting, query={**call.query, "dryRun": "All"})
        stored = stored_object(self.store, call)
        pod = self.codec.served(call.rt, stored)
        if _phase(pod) in ("Succeeded", "Failed", "Pending") or _deleting(pod):
            # Already disrupted (or not running yet): no budget to consult (canIgnorePDB).
            if _phase(pod) == "Pending" and not _deleting(pod):
                options = self._pinned(options, stored)
            await self._delete(deleting, stored, options, dry_run)
            return _success()
        budgets = self._budgets_of(pod)
        if len(budgets) > 1:
            # kube-apiserver answers this with its message as an internal error (500); the
            # server is not failing, the budgets are set up so that no eviction can be
            # decided, so here it is the client's 400 with the same message: the eviction
            # still fails as it would on a cluster (kubectl drain stops on it).
            raise StatusError.bad_request(
                "This pod has more than one PodDisruptionBudget, which the eviction "
                "subresource does not support."
            )
        pinned = False
        pdb_name = ""
        if budgets:
            budget_rt = self._budget_type()
            pdb = self.codec.served(budget_rt, budgets[0])
            pdb_name = str(pdb["metadata"]["name"])
            if not _ready(pod) and self._spares_unhealthy(pdb):
                # An unhealthy pod does not count as healthy: evicting it takes nothing
                # from the budget, as long as the pod does not turn ready meanwhile.
                pinned = True
            else:
                self._take_one(budget_rt, budgets[0], pdb, call.name, dry_run)
        try:
            await self._delete(
                deleting, stored, self._pinned(options, stored) if pinned else options, dry_run
            )
        except StatusError as exc:
            client_pinned = (options.get("preconditions") or {}).get("resourceVersion")
            if exc.code == 409 and pinned and not client_pinned:
                # The pod changed since it was judged: let the client ask again.
                raise _still_processing(pdb_name) from None
            raise
        return _success()

    # reading the request ---------------------------------------------------------------

    def _delete_options(self, call: Call, body: Obj) -> Obj:
        """The Eviction's DeleteOptions, with the request's dry run (propagateDryRun)."""
        metadata = body.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if metadata.get("name") != call.name:
            raise StatusError.bad_request("name in URL does not match name in Eviction object")
        namespace = metadata.get("namespace")
        if namespace and namespace != call.namespace:
            raise StatusError.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        given = body.get("deleteOptions")
        options: Obj = {} if given is None else decode_delete_options(given)
        requested = ["All"] if call.dry_run else []
        in_body = options.get("dryRun") or []
        if not in_body:
            if requested:
                options["dryRun"] = requested
        elif requested and in_body != requested:
            raise StatusError.bad_request(
                "Non-matching dry-run options in request and content: "
                f"[{' '.join(requested)}] and [{' '.join(in_body)}]"
            )
        return options

    @staticmethod
    def _pinned(options: Obj, stored: StoredObject) -> Obj:
        """The options with the pod's resourceVersion as a precondition, unless the client
        set one: the pod must not have changed (turned ready, say) since it was judged."""
        preconditions = dict(options.get("preconditions") or {})
        if preconditions.get("resourceVersion"):
            return options
        preconditions["resourceVersion"] = str(stored.obj["metadata"].get("resourceVersion"))
        return {**options, "preconditions": preconditions}

    # the budget ------------------------------------------------------------------------

    def _budgets_of(self, pod: Mapping[str, Any]) -> list[StoredObject]:
        """The budgets of the pod's namespace that select it. An empty selector selects
        nothing here, as eviction.go reads it."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        stored, _ = self.store.current(
            self._budget_type().group_resource, str(pod["metadata"].get("namespace") or "")
        )
        found = []
        for budget in stored:
            selector = (budget.obj.get("spec") or {}).get("selector")
            if not selector or not (
                selector.get("matchLabels") or selector.get("matchExpressions")
            ):
                continue
            if label_selector_matches(selector, labels):
                found.append(budget)
        return found

    @staticmethod
    def _spares_unhealthy(pdb: Mapping[str, Any]) -> bool:
        """Whether a pod that is not ready may go without taking from the budget: always
        under AlwaysAllow, else (IfHealthyBudget) while the budget is met."""
        if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return True
        status = pdb.get("status") or {}
        desired = int(status.get("desiredHealthy") or 0)
        return int(status.get("currentHealthy") or 0) >= desired and desired > 0

    def _take_one(
        self, rt: ResourceType, stored: StoredObject, pdb: Obj, pod_name: str, dry_run: bool
    ) -> None:
        """Take one disruption from the budget, or refuse (checkAndDecrement)."""
        name = str(pdb["metadata"]["name"])
        status = pdb.setdefault("status", {})
        generation = int(pdb["metadata"].get("generation") or 0)
        if int(status.get("observedGeneration") or 0) < generation:
            raise _still_processing(name)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise _forbidden(name, "pdb disruptions allowed is negative")
        disrupted = dict(status.get("disruptedPods") or {})
        if len(disrupted) > MAX_DISRUPTED_PODS:
            raise _forbidden(
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )
        if allowed == 0:
            raise _too_many_requests(
                REFUSAL,
                0,
                f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently",
            )
        status["disruptionsAllowed"] = allowed - 1
        if allowed == 1:
            _no_disruption_allowed(status)
        if dry_run:
            return
        at = format_time(clock.now())
        disrupted[pod_name] = at
        status["disruptedPods"] = disrupted
        self.writes.commits.update(rt, self.codec.to_storage(rt, pdb), stored)

    # the deletion ----------------------------------------------------------------------

    async def _delete(self, call: Call, stored: StoredObject, options: Obj, dry_run: bool) -> None:
        """Mark the pod a disruption target, then delete it (addConditionAndDeletePod)."""
        if not dry_run:
            stored = self._mark_target(call, stored, options)
            if (options.get("preconditions") or {}).get("resourceVersion"):
                # The condition was our own write: hold the deletion to that version.
                version = str(stored.obj["metadata"].get("resourceVersion"))
                options = {
                    **options,
                    "preconditions": {**options["preconditions"], "resourceVersion": version},
                }
        await self.writes.delete_stored(call, stored, options)

    def _mark_target(self, call: Call, stored: StoredObject, options: Obj) -> StoredObject:
        """Add DisruptionTarget=True to the pod's status, after checking the preconditions
        against it as the deletion would."""
        pod = self.codec.served(call.rt, stored)
        meta = pod["metadata"]
        preconditions = options.get("preconditions") or {}
        uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != meta.get("uid"):
            raise StatusError.conflict(
                "",
                "Pod",
                call.name,
                f"the UID in the precondition ({uid}) does not match the UID in record "
                f"({meta.get('uid')}). The object might have been deleted and then recreated",
            )
        if version and version != meta.get("resourceVersion"):
            raise StatusError.conflict(
                "",
                "Pod",
                call.name,
                f"the ResourceVersion in the precondition ({version}) does not match the "
                f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might "
                "have been modified",
            )
        status = pod.setdefault("status", {})
        conditions = [dict(c) for c in status.get("conditions") or ()]
        current = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
        wanted = {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(clock.now()),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
        if current is None:
            conditions.append(wanted)
        else:
            if current.get("status") == "True":
                wanted["lastTransitionTime"] = current.get("lastTransitionTime")
            current.update(wanted)
        status["conditions"] = conditions
        return self.writes.commits.update(call.rt, self.codec.to_storage(call.rt, pod), stored)


def _eviction(body: Any) -> Obj:
    """The request body as an Eviction of policy/v1 or v1beta1 (the two versions read)."""
    if not isinstance(body, dict):
        raise StatusError.bad_request("the request body must be an Eviction")
    api_version = body.get("apiVersion") or "policy/v1"
    if api_version not in EVICTION_VERSIONS:
        raise StatusError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            "version (policy/v1)"
        )
    kind = body.get("kind") or "Eviction"
    if kind != "Eviction":
        raise StatusError.bad_request(f"not a Eviction object: *policy.{kind}")
    return {**body, "apiVersion": api_version, "kind": kind}


def _no_disruption_allowed(status: Obj) -> None:
    """DisruptionAllowed=False (InsufficientPods), as UpdateDisruptionAllowedCondition sets
    it when the last allowed disruption is taken."""
    conditions = [dict(c) for c in status.get("conditions") or ()]
    current = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), None)
    wanted: Obj = {
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
    }
    generation = int(status.get("observedGeneration") or 0)
    if generation:
        wanted["observedGeneration"] = generation
    if current is None:
        wanted["lastTransitionTime"] = format_time(clock.now())
        conditions.append(wanted)
    else:
        if current.get("status") != "False":
            current["lastTransitionTime"] = format_time(clock.now())
        current.pop("observedGeneration", None)
        current.update(wanted)
    status["conditions"] = conditions


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
