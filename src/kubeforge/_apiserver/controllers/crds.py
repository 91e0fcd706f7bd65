"""CustomResourceDefinitions: turning CRD objects into served types, and cleaning up.

Creating a CRD registers its served versions at once (discovery, OpenAPI and the REST paths
change in the same request) and then records, as a visible status update, the
`NamesAccepted` and `Established` conditions controllers and `kubectl wait` look for.
Deleting a CRD marks it Terminating, deletes every instance, and removes the CRD when the
last instance is gone.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.structural import structural_errors
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.conversion import CRDConversion
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import ResourceType, ScalePaths, Subresource
from kubeforge._apiserver.types.typesupport import TypeSupport

__all__ = ["CRDController", "resource_types_for"]

CRD_GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_CRD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def resource_types_for(crd: dict[str, Any]) -> list[ResourceType]:
    """The ResourceTypes a CRD serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    kind = names.get("kind", "")
    plural = names.get("plural", "")
    storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), None)
    conversion = CRDConversion.of(crd)
    types = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        subs = version.get("subresources") or {}
        subresources: list[Subresource] = []
        scale: ScalePaths | None = None
        if "scale" in subs:
            sc = subs["scale"] or {}
            scale = ScalePaths(
                spec_replicas=sc.get("specReplicasPath", ".spec.replicas"),
                status_replicas=sc.get("statusReplicasPath", ".status.replicas"),
                label_selector=sc.get("labelSelectorPath"),
            )
            subresources.append(
                Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")
            )
        if "status" in subs:
            subresources.append(Subresource("status", kind, ("get", "patch", "update")))
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
        selectable = tuple(f.get("jsonPath", "") for f in version.get("selectableFields") or [])
        types.append(
            ResourceType(
                group=group,
                version=version["name"],
                kind=kind,
                plural=plural,
                singular=names.get("singular") or kind.lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                verbs=_CRD_VERBS,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(subresources),
                tracks_generation=True,
                unconditional_update=False,
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                crd_name=crd["metadata"]["name"],
                storage_version=storage,
                deprecated=bool(version.get("deprecated")),
                deprecation_warning=version.get("deprecationWarning"),
                scale=scale,
                conversion=conversion,
                extras={"selectable_fields": selectable},
            )
        )
    return types


def _condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "lastTransitionTime": now_rfc3339(),
        "reason": reason,
        "message": message,
    }


class CRDController:
    """Keeps the registry in step with CRD objects (runs inside the server's write path: the
    server adds `observe` to the commit observers and `validate` to the write pipeline)."""

    def __init__(
        self,
        store: Store,
        commits: Commits,
        registry: Registry,
        types: TypeSupport,
        writer: Writer,
        on_change: Any = None,
    ) -> None:
        self.store = store
        self.commits = commits
        self.registry = registry
        self.types = types
        self.writer = writer
        self.on_change = on_change

    def crd_type(self) -> ResourceType:
        rt = self.registry.get(CRD_GROUP, "v1", "customresourcedefinitions")
        assert rt is not None
        return rt

    # validation -------------------------------------------------------------------------

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[FieldError]:
        if rt.group != CRD_GROUP or rt.plural != "customresourcedefinitions":
            return []
        errors: list[FieldError] = []
        spec = obj.get("spec") or {}
        for i, version in enumerate(spec.get("versions") or []):
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            path = f"spec.versions[{i}].schema.openAPIV3Schema"
            if schema is None:
                errors.append(FieldError.required(path, "schemas are required"))
                continue
            errors.extend(structural_errors(schema, path))
        errors.extend(self._name_conflicts(obj))
        return errors

    def _name_conflicts(self, crd: dict[str, Any]) -> list[FieldError]:
        spec = crd.get("spec") or {}
        group = spec.get("group")
        names = spec.get("names") or {}
        mine = crd["metadata"].get("name")
        errors = []
        for rt in self.registry:
            if rt.group != group or rt.crd_name == mine:
                continue
            if rt.plural == names.get("plural"):
                errors.append(
                    FieldError.invalid(
                        "spec.names.plural", rt.plural, "is already in use by another resource"
                    )
                )
                break
        return errors

    # registration -----------------------------------------------------------------------

    def register(self, crd: dict[str, Any]) -> None:
        """Serve (or re-serve, after a change) the versions of one CRD."""
        name = crd["metadata"]["name"]
        registry = self.registry
        before = {rt.version: rt for rt in registry if rt.crd_name == name}
        for rt in before.values():
            self.types.forget(rt)
        registry.remove_crd(name)
        served = resource_types_for(crd)
        for rt in served:
            registry.add(rt)
        if before:
            # A changed CRD ends the watches on its objects, as kube-apiserver replaces a
            # CRD's storage: a watch keeps the type it started with (its schemas, its
            # conversion), and its client watches again from where it was.
            self.store.drop(next(iter(before.values())).group_resource)
        if self.on_change is not None:
            self.on_change()

    def unregister(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        for rt in [t for t in self.registry if t.crd_name == name]:
            self.types.forget(rt)
            self.store.drop(rt.group_resource)
        self.registry.remove_crd(name)
        if self.on_change is not None:
            self.on_change()

    def restore(self) -> None:
        """Serve every stored CRD (after loading a persisted store)."""
        crds, _ = self.store.current(self.crd_type().group_resource)
        for stored in crds:
            if not stored.obj["metadata"].get("deletionTimestamp"):
                self.register(stored.thaw())

    # reacting to writes ------------------------------------------------------------------

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        if rt.group == CRD_GROUP and rt.plural == "customresourcedefinitions":
            self._crd_changed(event, new, old)
        elif rt.is_crd and event == "DELETED":
            self._maybe_finish(rt.crd_name or "")

    def _crd_changed(self, event: str, new: StoredObject, old: StoredObject | None) -> None:
        crd = new.obj
        if event == "DELETED":
            self.unregister(crd)
            return
        if crd["metadata"].get("deletionTimestamp"):
            self._terminate(new)
            return
        spec_changed = old is None or old.obj.get("spec") != crd.get("spec")
        if spec_changed:
            self.register(crd)
        self._accept(new)

    def _accept(self, stored: StoredObject) -> None:
        """Add the cleanup finalizer and the accepted/established status once."""
        crd = stored.thaw()
        spec = crd.get("spec") or {}
        status = crd.setdefault("status", {})
        meta = crd["metadata"]
        changed = False
        finalizers = meta.setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
            changed = True
        names = dict(spec.get("names") or {})
        names.setdefault("singular", names.get("kind", "").lower())
        names.setdefault("listKind", names.get("kind", "") + "List")
        if status.get("acceptedNames") != names:
            status["acceptedNames"] = names
            changed = True
        conditions = status.setdefault("conditions", [])
        kinds = {c.get("type"): c for c in conditions}
        if kinds.get("NamesAccepted", {}).get("status") != "True":
            conditions[:] = [c for c in conditions if c.get("type") != "NamesAccepted"]
            conditions.append(
                _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found")
            )
            changed = True
        if kinds.get("Established", {}).get("status") != "True":
            conditions[:] = [c for c in conditions if c.get("type") != "Established"]
            conditions.append(
                _condition(
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                )
            )
            changed = True
        stored_versions = status.setdefault("storedVersions", [])
        storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), None)
        if storage and storage not in stored_versions:
            stored_versions.append(storage)
            changed = True
        if changed:
            self._write(crd, stored)

    def _write(self, crd: dict[str, Any], old: StoredObject) -> None:
        rt = self.crd_type()
        self.commits.update(rt, crd, old)

    def _terminate(self, stored: StoredObject) -> None:
        """A deleting CRD: refuse new instances, delete existing ones, then let it go."""
        crd = stored.obj
        name = crd["metadata"]["name"]
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Terminating" for c in conditions):
            updated = stored.thaw()
            conds = updated.setdefault("status", {}).setdefault("conditions", [])
            conds.append(
                _condition(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
            )
            self._write(updated, stored)
            self._delete_instances(name)
        self._maybe_finish(name)

    def _instance_type(self, crd_name: str) -> ResourceType | None:
        for rt in self.registry:
            if rt.crd_name == crd_name:
                return rt
        return None

    def _delete_instances(self, crd_name: str) -> None:
        rt = self._instance_type(crd_name)
        if rt is None:
            return
        objects, _ = self.store.current(rt.group_resource)
        for stored in objects:
            ns, name = stored.key
            info = RequestInfo(rt.group, rt.version, ns or None, rt.plural, name, None, "delete")
            current = self.store.get(rt.group_resource, ns, name)
            if current is not None:
                run_now(self.writer.delete_stored(Call(info, rt, {}), current, {}, answer=False))

    def _maybe_finish(self, crd_name: str) -> None:
        crd_rt = self.crd_type()
        stored = self.store.get(crd_rt.group_resource, "", crd_name)
        if stored is None or not stored.obj["metadata"].get("deletionTimestamp"):
            return
        rt = self._instance_type(crd_name)
        if rt is not None and self.store.current(rt.group_resource)[0]:
            return  # instances are still finalizing
        crd = stored.thaw()
        finalizers = [f for f in crd["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
        conds = crd.setdefault("status", {}).setdefault("conditions", [])
        for cond in conds:
            if cond.get("type") == "Terminating":
                cond.update(
                    status="False",
                    reason="InstanceDeletionCompleted",
                    message="removed all instances",
                )
        if finalizers:
            crd["metadata"]["finalizers"] = finalizers
            self._write(crd, stored)
            return
        crd["metadata"].pop("finalizers", None)
        self.commits.delete(crd_rt, stored, crd)

    def refuses_instances(self, rt: ResourceType) -> bool:
        """Whether new instances of `rt` must be refused (its CRD is being deleted)."""
        if not rt.crd_name:
            return False
        stored = self.store.get(self.crd_type().group_resource, "", rt.crd_name)
        return stored is not None and bool(stored.obj["metadata"].get("deletionTimestamp"))
