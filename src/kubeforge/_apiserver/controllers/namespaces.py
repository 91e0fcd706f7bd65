"""Namespace deletion: emptying a terminating namespace, then letting it go.

Deleting a namespace only marks it (deletionTimestamp, phase Terminating, the `kubernetes`
entry still in spec.finalizers). This controller then deletes every namespaced object in it
(built-in and CRD-defined, each honouring its own finalizers), reports progress in the
namespace's status conditions as the real namespace controller does, and once nothing is
left removes `kubernetes` through the finalize subresource, after which the namespace goes.
It looks again whenever something in a terminating namespace changes or goes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.gc import (
    CONTROLLER_AGENT,
    StorageTypes,
    WorkQueue,
    controller_call,
)
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import Written, run_now
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["Finalize", "NamespaceController"]

# The namespace's finalize subresource (handlers/subresources.py): (call, the Namespace with
# the finalizers that remain).
Finalize = Callable[[Call, dict[str, Any]], Coroutine[Any, Any, Written]]

FINALIZER = "kubernetes"
_NAMESPACES = GroupResource("", "namespaces")


def _condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def _conditions(
    remaining: Counter[str], finalizers: Counter[str], failures: list[str]
) -> list[dict[str, Any]]:
    """The five conditions the namespace controller keeps while it deletes content."""
    if failures:
        content = _condition(
            "NamespaceDeletionContentFailure",
            "True",
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(failures)} remaining: "
            + ", ".join(sorted(failures)),
        )
    else:
        content = _condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        )
    if remaining:
        parts = sorted(f"{gr} has {n} resource instances" for gr, n in remaining.items())
        left = _condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: " + ", ".join(parts),
        )
    else:
        left = _condition(
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
        )
    if finalizers:
        parts = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())
        held = _condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: " + ", ".join(parts),
        )
    else:
        held = _condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        )
    return [
        _condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        _condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        content,
        left,
        held,
    ]


def _same(new: list[dict[str, Any]], old: Any) -> bool:
    """Whether the conditions say the same as before (transition times aside)."""
    if not isinstance(old, list) or len(old) != len(new):
        return False
    for mine, theirs in zip(new, old, strict=True):
        if not isinstance(theirs, dict):
            return False
        if any(mine[k] != theirs.get(k) for k in ("type", "status", "reason", "message")):
            return False
    return True


class NamespaceController:
    """Deletes the content of terminating namespaces and then finalizes them."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        codec: Codec,
        writer: Writer,
        finalize: Finalize,
    ) -> None:
        self.store = store
        self.codec = codec
        self.writer = writer
        self.finalize = finalize
        self.types = StorageTypes(registry)
        # Names of namespaces being deleted: changes inside them trigger a new look.
        self.terminating: set[str] = set()
        self.queue = WorkQueue(self._sync, "namespace controller")
        self._scanned = False

    def start(self) -> None:
        """Pick up namespaces already terminating (first start) and start working."""
        if not self._scanned:
            self._scanned = True
            for stored in self.store.current(_NAMESPACES)[0]:
                if stored.obj["metadata"].get("deletionTimestamp"):
                    self._terminating(stored.key[1])
        self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Note namespaces starting to terminate, and changes inside terminating ones."""
        namespace = new.key[0]
        if namespace:
            if namespace in self.terminating:
                self.queue.add(namespace)
            return
        if rt.plural != "namespaces" or rt.group:
            return
        name = new.key[1]
        if event == "DELETED":
            self.terminating.discard(name)
        elif new.obj["metadata"].get("deletionTimestamp") and name not in self.terminating:
            self._terminating(name)

    def _terminating(self, name: str) -> None:
        self.terminating.add(name)
        self.queue.add(name)

    def _namespace_type(self) -> ResourceType:
        rt = self.types.get(_NAMESPACES)
        assert rt is not None
        return rt

    async def _sync(self, name: str) -> None:
        ns_type = self._namespace_type()
        stored = self.store.get(_NAMESPACES, "", name)
        if stored is None or not stored.obj["metadata"].get("deletionTimestamp"):
            self.terminating.discard(name)
            return
        spec_finalizers = (stored.obj.get("spec") or {}).get("finalizers") or []
        if FINALIZER not in spec_finalizers:
            return  # not ours to finish
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        failures: list[str] = []
        store = self.store
        for rt in self.types:
            if not rt.namespaced:
                continue
            gr = rt.group_resource
            objects, _ = store.current(gr, name)
            if not objects:
                continue
            for obj in objects:
                if obj.obj["metadata"].get("deletionTimestamp"):
                    continue
                call = controller_call(rt, name, obj.key[1], "delete")
                try:
                    await self.writer.delete_stored(
                        call, obj, {"propagationPolicy": "Background"}, answer=False
                    )
                except StatusError as exc:
                    failures.append(f"{gr}: {exc.message}")
            objects, _ = store.current(gr, name)
            if objects:
                remaining[str(gr)] = len(objects)
                for obj in objects:
                    finalizers.update(obj.obj["metadata"].get("finalizers") or ())
        conditions = _conditions(remaining, finalizers, list(dict.fromkeys(failures)))
        stored = self._write_conditions(ns_type, name, conditions)
        if remaining or failures or stored is None:
            return
        rest_finalizers = [f for f in spec_finalizers if f != FINALIZER]
        info = RequestInfo("", ns_type.version, None, "namespaces", name, "finalize", "update")
        call = Call(info, ns_type, {}, CONTROLLER_AGENT)
        run_now(self.finalize(call, {"spec": {"finalizers": rest_finalizers}}))

    def _write_conditions(
        self, rt: ResourceType, name: str, conditions: list[dict[str, Any]]
    ) -> StoredObject | None:
        """Record the conditions in the namespace's status (when they say something new);
        the namespace as it now is."""
        stored = self.store.get(_NAMESPACES, "", name)
        if stored is None:
            return None
        status = stored.obj.get("status") or {}
        if _same(conditions, status.get("conditions")):
            return stored
        old = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, dict)}
        now = now_rfc3339()
        for condition in conditions:
            before = old.get(condition["type"])
            same_status = before is not None and before.get("status") == condition["status"]
            condition["lastTransitionTime"] = (
                before.get("lastTransitionTime", now) if before and same_status else now
            )
        obj = self.codec.served(rt, stored)
        obj.setdefault("status", {})["conditions"] = conditions
        info = RequestInfo("", rt.version, None, "namespaces", name, "status", "update")
        run_now(self.writer.write_update(Call(info, rt, {}, CONTROLLER_AGENT), obj, stored))
        return self.store.get(_NAMESPACES, "", name)
