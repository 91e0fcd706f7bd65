"""The write pipeline every create, update and delete ends in, whoever asks for it.

As kube-apiserver's generic registry store does (k8s.io/apiserver pkg/registry/generic/
registry/store.go), each write runs the same steps: decode (drop unknown fields, default),
mutating admission, system metadata, strategy (status handling, generation), field
ownership, validation, validating admission, and then one atomic commit (`storage/commits.py`).
The verb handlers (`create.py`, `update.py`, `patch.py`, `delete.py`, the subresources) read
a request into an object and hand it here; the server's own loops write through the same
three operations (`create`, `write_update`, `delete_stored`).

The writes are coroutines because admission and conversion call webhooks. A write the
request's admission does not apply to (`call.admission` unset: the server's own writes, and
every request when no webhook or policy may match) of a type no conversion webhook converts
never suspends, and `run_now` finishes it at once. Anything awaited before a commit is
followed by a check that the object is still the one the write started from. Only metadata
changes when an object is marked for deletion, so that write keeps the version the object is
stored in.

Besides admission, a few checks and changes belong to particular kinds and come from the
stages above (the server adds them): mutators (a Service's cluster IP), validators (a CRD's
schema) and admitters (RBAC escalation, who may approve a CertificateSigningRequest).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import orjson

from kubeforge import clock
from kubeforge._api.machinery.access import name_of
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import validate_object_meta, validate_object_meta_update
from kubeforge._api.machinery.timestamps import format_time, now_rfc3339
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError, status_success
from kubeforge._apiserver.request.metadecoding import MetadataDecodeError, decode_object_meta
from kubeforge._apiserver.storage import managedfields, patch, preconditions
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.objectmeta import (
    carry_system_fields,
    fill_system_fields,
    generate_name,
    spec_changed,
)
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.builtin_schemas import STRICT_INTEGERS
from kubeforge._apiserver.types.customobjects import settle_numbers
from kubeforge._apiserver.types.resource import GroupResource, ResourceType
from kubeforge._apiserver.types.typesupport import TypeSupport

__all__ = ["Admitter", "Mutator", "Validator", "Writes", "Written", "run_now"]

T = TypeVar("T")

# What a write answers: the status code and the object (its stored bytes when they serve).
Written = tuple[int, bytes | dict[str, Any]]
# Server-side changes made before validation (e.g. allocating a Service's cluster IP):
# (type, new object, old object or None on create).
Mutator = Callable[[ResourceType, dict[str, Any], dict[str, Any] | None], None]
# Extra checks for particular resources (e.g. CRD schemas): (type, new, old) -> errors.
Validator = Callable[[ResourceType, dict[str, Any], dict[str, Any] | None], list[FieldError]]
# Checks that depend on who writes (e.g. RBAC escalation), after validation: raise to refuse.
Admitter = Callable[[Call, dict[str, Any], dict[str, Any] | None], None]

_GC_FINALIZERS = ("orphan", "foregroundDeletion")
_NAMESPACES = GroupResource("", "namespaces")


def run_now(write: Coroutine[Any, Any, T]) -> T:
    """Finish a write that has no admission to wait for, without an event loop turn."""
    try:
        write.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    write.close()
    raise RuntimeError("a write without admission waited for something")


class Writes:
    """Creates, updates and deletes objects of every served type."""

    def __init__(self, store: Store, commits: Commits, types: TypeSupport, codec: Codec) -> None:
        self.store = store
        self.commits = commits
        self.types = types
        self.codec = codec
        self.mutators: list[Mutator] = []
        self.validators: list[Validator] = []
        self.admitters: list[Admitter] = []
        # Namespaces that accept no new objects (set while they terminate).
        self.protected_namespaces = frozenset({"default", "kube-system", "kube-public"})

    # what every write does ----------------------------------------------------------------

    def still_current(self, call: Call, name: str, old: StoredObject | None) -> None:
        """After waiting for admission, the object must still be the one the write started
        from; a write that went in meanwhile makes this one a conflict."""
        if self.store.get(call.rt.group_resource, call.namespace, name) is not old:
            raise StatusError.stale(call.rt.group, call.rt.plural, name)

    def check_type_meta(
        self, rt: ResourceType, obj: Any, patched: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The body's kind and apiVersion checked and filled in, and its metadata decoded as
        ObjectMeta (the first thing every write does to an object). `patched` is the patched
        object when `obj` is the result of a patch: it fails as kube-apiserver's patch
        handler reports a result it cannot decode (422), a body as its decoder does (400)."""
        if not isinstance(obj, dict):
            raise StatusError.bad_request(
                f"the request body must be a JSON object describing a {rt.kind}"
            )
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if kind is not None and kind != rt.kind:
            if rt.is_crd:
                raise StatusError.invalid(
                    rt.group,
                    rt.kind,
                    name_of(obj),
                    [FieldError.invalid("kind", kind, f"must be {rt.kind}")],
                )
            raise StatusError.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        if api_version is not None and api_version != rt.api_version:
            raise StatusError.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version})"
            )
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        try:
            # Custom objects' metadata is decoded on its own; built-ins' inside the kind.
            obj["metadata"] = decode_object_meta(
                obj.get("metadata"), None if rt.is_crd else rt.kind
            )
        except MetadataDecodeError as exc:
            if patched is not None:
                raise StatusError.invalid(
                    "", "", "", [FieldError.invalid("patch", _compact(patched), exc.detail)]
                ) from None
            raise StatusError.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"{exc.detail}"
            ) from None
        return obj

    def check_namespace(self, call: Call, obj: dict[str, Any]) -> None:
        """The object's namespace is the request's (a cluster-scoped object has none)."""
        meta = obj["metadata"]
        rt = call.rt
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        body_ns = meta.get("namespace")
        if body_ns and call.namespace and body_ns != call.namespace:
            raise StatusError.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        if call.namespace:
            meta["namespace"] = call.namespace

    def namespace_lifecycle(self, call: Call) -> None:
        """New objects need an existing namespace that is not being terminated."""
        if not call.rt.namespaced:
            return
        ns = self.store.get(_NAMESPACES, "", call.namespace)
        if ns is None:
            raise StatusError.not_found("", "namespaces", call.namespace)
        if ns.obj["metadata"].get("deletionTimestamp") or (
            (ns.obj.get("status") or {}).get("phase") == "Terminating"
        ):
            raise StatusError.forbidden(
                call.rt.group,
                call.rt.plural,
                call.name,
                f"unable to create new content in namespace {call.namespace} because it is "
                "being terminated",
                [
                    {
                        "type": "NamespaceTerminating",
                        "message": f"namespace {call.namespace} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            )

    def decode(
        self,
        call: Call,
        obj: dict[str, Any],
        prefix: str = "",
        integers: str = STRICT_INTEGERS,
        patched: dict[str, Any] | None = None,
    ) -> None:
        """Decode `obj` as its type (unknown fields dropped, defaults applied); the dropped
        fields are reported as the request's fieldValidation asks. `patched`: the merge
        patch `obj` results from (TypeSupport.prune)."""
        unknown = self.types.decode(call.rt, obj, integers, patched)
        call.report_unknown_fields(unknown, prefix)

    def validate(self, call: Call, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """The kind's own changes (mutators), then metadata, type and kind-specific
        validation (422 with every error), then the admitters."""
        rt = call.rt
        for mutate in self.mutators:
            mutate(rt, obj, old)
        meta = obj["metadata"]
        if old is None:
            errors = validate_object_meta(meta, rt.namespaced, rt.name_rule, True)
        else:
            errors = validate_object_meta(meta, rt.namespaced, rt.name_rule, False)
            errors += validate_object_meta_update(meta, old["metadata"])
        # CEL and schema checks only make sense once the metadata is sound.
        errors += self.types.validate(rt, obj, old, call.info.subresource)
        for check in self.validators:
            errors += check(rt, obj, old)
        if errors:
            raise StatusError.invalid(rt.group, rt.kind, meta.get("name", ""), errors)
        if rt.is_crd:
            settle_numbers(obj)
        for admit in self.admitters:
            admit(call, obj, old)

    def commit_create(self, call: Call, obj: dict[str, Any]) -> StoredObject:
        """Store a new object (converted to its storage form)."""
        rt = call.rt
        return self.commits.create(rt, self.codec.to_storage(rt, obj))

    def _commit_update(self, call: Call, obj: dict[str, Any], old: StoredObject) -> StoredObject:
        rt = call.rt
        meta = obj["metadata"]
        old_meta = old.obj["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not _held(rt, obj)
            and old_meta.get("deletionGracePeriodSeconds") == 0
        ):
            # The last finalizer is gone: the object leaves with this final state.
            return self.commits.delete(rt, old, self.codec.to_storage(rt, obj))
        return self.commits.update(rt, self.codec.to_storage(rt, obj), old)

    # create ------------------------------------------------------------------------------

    async def create(self, call: Call, body: Any) -> Written:
        """POST to a collection: 201 with the stored object."""
        rt = call.rt
        obj = self.check_type_meta(rt, body)
        self.decode(call, obj)
        self.check_namespace(call, obj)
        if call.info.verb == "create":
            self.namespace_lifecycle(call)
        if call.admission is not None:
            obj = await call.admission.mutate("CREATE", obj, None)
        meta = obj["metadata"]
        if not meta.get("name") and not meta.get("generateName"):
            raise StatusError.invalid(
                rt.group,
                rt.kind,
                "",
                [FieldError.required("metadata.name", "name or generateName is required")],
            )
        generated = not meta.get("name")
        if generated:
            meta["name"] = generate_name(str(meta["generateName"]))
        self.prepare_create(call, obj)
        self.validate(call, obj, None)
        if call.admission is not None:
            await call.admission.validate("CREATE", obj, None)
        if rt.webhook_conversion is not None:
            # Converted (and refused, when the webhook fails) before anything is stored;
            # a dry run converts too, as the storage codec would.
            stored_form = await self.codec.storage_form(rt, patch.json_copy(obj))

        if not call.dry_run:
            # Storage refuses a version before it looks for the key; a dry run never reaches
            # it (registry/generic/registry/dryrun.go), so it answers with the object as
            # given, its resourceVersion included.
            preconditions.check_create(meta)
        gr = rt.group_resource
        for _ in range(8):
            if self.store.get(gr, call.namespace, meta["name"]) is None:
                break
            if not generated:
                raise StatusError.already_exists(rt.group, rt.plural, meta["name"])
            meta["name"] = generate_name(str(meta["generateName"]))
        else:
            raise StatusError.already_exists(rt.group, rt.plural, meta["name"], generated=True)

        if call.dry_run:
            return 201, obj
        meta.pop("resourceVersion", None)
        if rt.webhook_conversion is None:
            stored = self.commit_create(call, obj)
            return 201, self.codec.served_raw(rt, stored)
        stored_form["metadata"]["name"] = meta["name"]
        stored = self.commit_create(call, stored_form)
        return 201, await self.codec.answer(rt, stored)

    def prepare_create(self, call: Call, obj: dict[str, Any]) -> None:
        """System metadata, status reset, strategy and managedFields for a new object, as
        the client sent it or mutating admission left it: the same rules for both."""
        rt = call.rt
        meta = obj["metadata"]
        fill_system_fields(meta, rt.tracks_generation)
        if rt.has_status:
            obj.pop("status", None)
        strategy = self.types.strategy(rt)
        strategy.prepare_create(obj)
        strategy.prepare_create_for(obj, call.user)
        if "managedFields" not in meta or not isinstance(meta.get("managedFields"), list):
            meta.pop("managedFields", None)
        managedfields.update_managed_fields(
            None,
            obj,
            call.field_manager,
            self.types.view(rt),
            rt.api_version,
            call.info.subresource,
            now_rfc3339(),
        )

    # update ------------------------------------------------------------------------------

    async def write_update(
        self,
        call: Call,
        obj: dict[str, Any],
        old: StoredObject,
        track_fields: bool = True,
    ) -> Written:
        """The update pipeline after decoding: mutating admission, strategy, ownership,
        validation, commit.

        Every update of a stored object comes through here, so here is where the
        resourceVersion it carries is held against the stored one (storage/preconditions.py) and the
        metadata the server owns is kept (carry_system_fields, then refused changes in
        validation): after mutating admission, as kube-apiserver's registry does both, so
        what a webhook returns is held to the same rules as what a client sent.
        """
        rt = call.rt
        old_obj = (
            self.codec.served(rt, old)
            if rt.webhook_conversion is None
            else await self.codec.read_as(rt, old)
        )
        if call.admission is not None:
            obj = await call.admission.mutate("UPDATE", obj, old_obj)
        meta = obj["metadata"]
        old_meta = old_obj["metadata"]
        preconditions.check_update(rt, call.name, meta, _stored_version(old))
        carry_system_fields(meta, old_meta)
        sub = call.info.subresource
        strategy = self.types.strategy(rt, sub)
        # A CSR's /approval, like /status, writes only (part of) the status.
        if sub == "status" or sub == "approval":
            obj = _status_only(obj, old_obj, rt.status_keeps_annotations)
            meta = obj["metadata"]
            strategy.prepare_status_update(obj, old_obj)
        else:
            if rt.has_status:
                if "status" in old_obj:
                    obj["status"] = old_obj["status"]
                else:
                    obj.pop("status", None)
            strategy.prepare_update(obj, old_obj)
            if rt.tracks_generation and spec_changed(obj, old_obj):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if track_fields:
            managedfields.update_managed_fields(
                old_obj,
                obj,
                call.field_manager,
                self.types.view(rt),
                rt.api_version,
                sub,
                now_rfc3339(),
            )
        self.validate(call, obj, old_obj)
        if call.admission is not None:
            await call.admission.validate("UPDATE", obj, old_obj)
            self.still_current(call, call.name, old)

        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if rt.webhook_conversion is not None:
            return await self._commit_converted(call, obj, old)
        if obj == old_obj and old.api_version == rt.storage_api_version:
            # Nothing changed: no new revision, no event. An object stored in an older
            # version is written again (in the storage version), as an unchanged object
            # kube-apiserver encodes differently from its stored bytes is.
            return 200, self.codec.served_raw(rt, old)
        if call.dry_run:
            return 200, obj
        stored = self._commit_update(call, obj, old)
        return 200, self.codec.served_raw(rt, stored)

    async def _commit_converted(
        self, call: Call, obj: dict[str, Any], old: StoredObject
    ) -> Written:
        """The end of an update of an object its CRD's webhook converts: the object in the
        storage version is what is compared with the stored one (an unchanged object stored
        in an older version is written again) and what is stored."""
        rt = call.rt
        stored_form = await self.codec.storage_form(rt, patch.json_copy(obj))
        self.still_current(call, call.name, old)
        if stored_form == old.obj:
            return 200, await self.codec.answer(rt, old)
        if call.dry_run:
            return 200, obj
        stored = self._commit_update(call, stored_form, old)
        return 200, await self.codec.answer(rt, stored)

    # delete ------------------------------------------------------------------------------

    async def delete_stored(
        self, call: Call, old: StoredObject, options: dict[str, Any], answer: bool = True
    ) -> Written:
        """Delete (or mark deleting) a stored object. Without `answer` (the server's own
        deletions) an object is answered as it is stored, never converted."""
        rt = call.rt
        old_meta = old.obj["metadata"]
        name = old_meta["name"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old_meta.get("uid"):
            raise StatusError.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                f"{old_meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != old_meta.get("resourceVersion"):
            raise StatusError.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                f"{old_meta.get('resourceVersion')}",
            )
        policy = options.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise StatusError.unprocessable(
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"'
            )
        orphan_opt = options.get("orphanDependents")
        if orphan_opt is not None and policy is not None:
            raise StatusError.unprocessable(
                'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                f'"{policy}": orphanDependents and deletionPropagation cannot be both set'
            )
        if _is_namespace(rt) and name in self.protected_namespaces:
            raise StatusError.forbidden("", "namespaces", name, "this namespace may not be deleted")
        if call.admission is not None:
            await call.admission.delete(await self.codec.read_as(rt, old), options)
            self.still_current(call, name, old)
        converted = rt.webhook_conversion is not None
        # Marking an object deleting changes its metadata only: one a webhook converts keeps
        # the version it is stored in.
        obj = old.thaw() if converted else self.codec.served(rt, old)
        meta = obj["metadata"]
        finalizers = _strings(meta.get("finalizers"))
        new_finalizers = _gc_finalizers(finalizers, policy, orphan_opt)
        grace = _grace_period(rt, obj, options)
        # A namespace is also held by spec.finalizers until its contents are gone.
        held_by_spec = _is_namespace(rt) and bool((obj.get("spec") or {}).get("finalizers"))

        if new_finalizers or grace or held_by_spec:
            deleting = bool(meta.get("deletionTimestamp"))
            shorter = grace < int(meta.get("deletionGracePeriodSeconds") or 0)
            if deleting and new_finalizers == finalizers and not shorter:
                # already being deleted: idempotent
                return 200, await self._deleted_answer(rt, old, answer)
            if new_finalizers:
                meta["finalizers"] = new_finalizers
            else:
                meta.pop("finalizers", None)
            if not deleting or shorter:
                meta["deletionTimestamp"] = _deletion_time(grace)
                meta["deletionGracePeriodSeconds"] = grace
            if not deleting and rt.tracks_generation and int(meta.get("generation") or 0) > 0:
                meta["generation"] = int(meta["generation"]) + 1
            if held_by_spec:
                obj.setdefault("status", {})["phase"] = "Terminating"
            if call.dry_run:
                return 200, await self.codec.read_object_as(rt, obj) if converted else obj
            stored = self.commits.update(
                rt, obj if converted else self.codec.to_storage(rt, obj), old
            )
            # 202 only for the old-style orphanDependents=false request, as upstream.
            code = 202 if orphan_opt is False else 200
            return code, await self._deleted_answer(rt, stored, answer)

        if call.dry_run:
            if rt.returns_deleted_object:
                return 200, await self.codec.read_object_as(rt, obj) if converted else obj
            return 200, status_success(rt.group, rt.plural, name, meta.get("uid"))
        deleted = self.commits.delete(rt, old)
        if rt.returns_deleted_object:
            return 200, await self._deleted_answer(rt, deleted, answer)
        return 200, status_success(rt.group, rt.plural, name, meta.get("uid"))

    async def _deleted_answer(
        self, rt: ResourceType, stored: StoredObject, answer: bool
    ) -> bytes | dict[str, Any]:
        if answer:
            return await self.codec.answer(rt, stored)
        if rt.webhook_conversion is not None:
            return stored.raw
        return self.codec.served_raw(rt, stored)


def _stored_version(stored: StoredObject) -> str:
    return str(stored.obj["metadata"].get("resourceVersion") or "")


def _compact(obj: Any) -> str:
    """An object as the compact JSON an error message quotes."""
    try:
        return orjson.dumps(obj).decode()
    except TypeError:
        return repr(obj)


def _strings(value: Any) -> list[str]:
    """The strings of a stored list (metadata is decoded before it is stored; this only
    keeps a delete from misreading anything else)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _status_only(
    obj: dict[str, Any], old: dict[str, Any], keep_annotations: bool = False
) -> dict[str, Any]:
    """A /status write: the old object with only status (and managedFields) from the request
    (and its annotations, for types whose status strategy allows them)."""
    result = dict(old)
    result["metadata"] = dict(old["metadata"])
    if keep_annotations:
        annotations = obj["metadata"].get("annotations")
        if annotations:
            result["metadata"]["annotations"] = annotations
        else:
            result["metadata"].pop("annotations", None)
    if "status" in obj:
        result["status"] = obj["status"]
    else:
        result.pop("status", None)
    if "managedFields" in obj["metadata"]:
        result["metadata"]["managedFields"] = obj["metadata"]["managedFields"]
    return result


def _is_namespace(rt: ResourceType) -> bool:
    return rt.group == "" and rt.plural == "namespaces"


def _held(rt: ResourceType, obj: dict[str, Any]) -> bool:
    """Whether something still holds a deleting object: finalizers (or, for a namespace,
    the finalizers in its spec)."""
    if obj["metadata"].get("finalizers"):
        return True
    return _is_namespace(rt) and bool((obj.get("spec") or {}).get("finalizers"))


def _gc_finalizers(finalizers: list[str], policy: str | None, orphan_opt: bool | None) -> list[str]:
    """The object's finalizers after a delete's propagation choice (orphan/foreground)."""
    if orphan_opt is not None:
        orphan = bool(orphan_opt)
    elif policy is not None:
        orphan = policy == "Orphan"
    else:
        orphan = "orphan" in finalizers
    if orphan_opt is not None:
        foreground = False
    elif policy is not None:
        foreground = policy == "Foreground"
    else:
        foreground = "foregroundDeletion" in finalizers
    result = [f for f in finalizers if f not in _GC_FINALIZERS]
    if orphan:
        result.append("orphan")
    if foreground:
        result.append("foregroundDeletion")
    return result


def _grace_period(rt: ResourceType, obj: dict[str, Any], options: dict[str, Any]) -> int:
    """Seconds a pod may take to stop; 0 (delete at once) for everything else."""
    if rt.plural != "pods" or rt.group:
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    current = obj["metadata"].get("deletionGracePeriodSeconds")
    if current is not None and grace > current:
        grace = current
    return max(int(grace), 0)


def _deletion_time(grace: int) -> str:
    return format_time(clock.now() + dt.timedelta(seconds=grace))
