"""The server's admission chain: mutating webhooks, then validating policies and webhooks.

`Admission` keeps the configurations compiled, recompiling them at every committed change
of a Mutating-/ValidatingWebhookConfiguration or ValidatingAdmissionPolicy(Binding), so a
change takes effect with the next request. For each request it decides from the route alone
whether anything may apply (a cached answer per resource, subresource and operation), so a
server with no webhooks or policies, or none for this resource, does no admission work at
all. `RequestAdmission` runs the chain for one request at the points the write path names.

What each kind of admission leaves out follows kube-apiserver: webhooks never see objects
of the admission configuration kinds, so a broken webhook cannot lock out its own repair
(k8s.io/apiserver pkg/admission/plugin/webhook/predicates/rules/rules.go,
IsExemptAdmissionConfigurationResource); policies see the webhook configurations too and
skip only their own policy and binding resources and the reviews, which are never stored
(pkg/admission/plugin/policy/generic/plugin.go and kubernetes
pkg/kubeapiserver/admission/exclusion/resources.go).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.selectors import LabelSelector
from kubeforge._api.machinery.versions import version_priority
from kubeforge._apiserver.admission.attributes import GVK, Attributes, operation_options
from kubeforge._apiserver.admission.expressions import Authorize, allow_all
from kubeforge._apiserver.admission.matching import subresource_kind
from kubeforge._apiserver.admission.policy import Binding, Policy, dispatch_policies
from kubeforge._apiserver.admission.webhooks import (
    Webhook,
    dispatch_mutating,
    dispatch_validating,
    internal_error,
    parse_webhooks,
)
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.managedfields import managed_fields_error
from kubeforge._apiserver.storage.patch import json_copy
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.builtin_schemas import DecodeError
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType
from kubeforge._apiserver.types.typesupport import TypeSupport
from kubeforge._apiserver.webhookclient.client import WebhookClient

__all__ = ["Admission", "RequestAdmission"]

log = logging.getLogger("kubeforge.apiserver.admission")

GROUP = "admissionregistration.k8s.io"
_MUTATING = GroupResource(GROUP, "mutatingwebhookconfigurations")
_VALIDATING = GroupResource(GROUP, "validatingwebhookconfigurations")
_POLICIES = GroupResource(GROUP, "validatingadmissionpolicies")
_BINDINGS = GroupResource(GROUP, "validatingadmissionpolicybindings")
# Kinds webhooks are never called for.
_WEBHOOK_EXEMPT_KINDS = frozenset(
    {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)
# Resources (all their subresources and versions) policies are never evaluated for.
_POLICY_EXCLUDED = frozenset(
    {
        _POLICIES,
        _BINDINGS,
        GroupResource(GROUP, "mutatingadmissionpolicies"),
        GroupResource(GROUP, "mutatingadmissionpolicybindings"),
        GroupResource("authentication.k8s.io", "selfsubjectreviews"),
        GroupResource("authentication.k8s.io", "tokenreviews"),
        GroupResource("authorization.k8s.io", "localsubjectaccessreviews"),
        GroupResource("authorization.k8s.io", "selfsubjectaccessreviews"),
        GroupResource("authorization.k8s.io", "selfsubjectrulesreviews"),
        GroupResource("authorization.k8s.io", "subjectaccessreviews"),
    }
)
_NAMESPACES = GroupResource("", "namespaces")
_INVALID_MANAGED_FIELDS = (
    ".metadata.managedFields was in an invalid state after admission; this could be caused "
    "by an outdated mutating admission controller; please fix your requests: "
)


class Admission:
    """Admission webhooks and policies for one server."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        types: TypeSupport,
        codec: Codec,
        client: WebhookClient,
        authorize: Authorize = allow_all,
    ) -> None:
        self.store = store
        self.registry = registry
        self.types = types
        self.codec = codec
        self.client = client
        # Answers the CEL `authorizer` of matchConditions and policies.
        self.authorize = authorize
        self.mutating: tuple[Webhook, ...] = ()
        self.validating: tuple[Webhook, ...] = ()
        self.policies: tuple[tuple[Policy, tuple[Binding, ...]], ...] = ()
        # Whether any webhook or bound policy exists: the one check every request pays.
        self.active = False
        # Per resource, subresource and operations: whether webhooks, and policies, may apply.
        self._candidates: dict[tuple[int, str, tuple[str, ...]], tuple[bool, bool]] = {}
        self._registry_generation = -1
        self.reload()

    # configurations ---------------------------------------------------------------------

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Recompile the configurations when one of them was committed."""
        if rt.group == GROUP:
            self.reload()

    def reload(self) -> None:
        """Compile the configurations as they are stored now."""
        mutating: list[Webhook] = []
        for stored in self.store.current(_MUTATING)[0]:  # key order is name order
            mutating += parse_webhooks(stored.obj, mutating=True)
        validating: list[Webhook] = []
        for stored in self.store.current(_VALIDATING)[0]:
            validating += parse_webhooks(stored.obj, mutating=False)
        bindings: dict[str, list[Binding]] = {}
        for stored in self.store.current(_BINDINGS)[0]:
            binding = Binding.parse(stored.obj)
            bindings.setdefault(binding.policy, []).append(binding)
        policies = []
        for stored in self.store.current(_POLICIES)[0]:
            policy = Policy.parse(stored.obj)
            if policy.name in bindings:  # a policy does nothing until something binds it
                policies.append((policy, tuple(bindings[policy.name])))
        self.mutating = tuple(mutating)
        self.validating = tuple(validating)
        self.policies = tuple(policies)
        self.active = bool(mutating or validating or policies)
        self._candidates.clear()

    # which requests admission applies to --------------------------------------------------

    def begin(
        self, call: Call, operations: tuple[str, ...], name: str | None = None
    ) -> RequestAdmission | None:
        """The admission of `call` when a webhook or policy may apply to it (judged from its
        resource, subresource and possible operations), else None. `name` overrides the
        request's name as admission reports it (a collection's deletes have none)."""
        if not self.active:
            return None
        rt = call.rt
        subresource = call.info.subresource or ""
        if self.registry.generation != self._registry_generation:
            self._candidates.clear()
            self._registry_generation = self.registry.generation
        key = (id(rt), subresource, operations)
        applies = self._candidates.get(key)
        if applies is None:
            applies = (
                self._webhooks_may_apply(rt, subresource, operations),
                self._policies_may_apply(rt, subresource, operations),
            )
            self._candidates[key] = applies
        webhooks, policies = applies
        if not (webhooks or policies):
            return None
        return RequestAdmission(self, call, name, webhooks, policies)

    def _webhooks_may_apply(
        self, rt: ResourceType, subresource: str, operations: tuple[str, ...]
    ) -> bool:
        kind = subresource_kind(rt, subresource)
        if kind[0] == GROUP and kind[2] in _WEBHOOK_EXEMPT_KINDS:
            return False
        return any(
            hook.matcher.may_match(operation, rt, subresource, self.equivalents)
            for operation in operations
            for hook in (*self.mutating, *self.validating)
        )

    def _policies_may_apply(
        self, rt: ResourceType, subresource: str, operations: tuple[str, ...]
    ) -> bool:
        if rt.group_resource in _POLICY_EXCLUDED:
            return False
        return any(
            policy.constraints is None
            or policy.constraints.may_match(operation, rt, subresource, self.equivalents)
            for operation in operations
            for policy, _ in self.policies
        )

    # what webhooks and policies need from the server --------------------------------------

    def equivalents(self, rt: ResourceType, subresource: str) -> list[ResourceType]:
        """The other served versions of the same resource (sharing its storage)."""
        others = [
            other
            for other in self.registry.versions_of(rt.group_resource)
            if other is not rt and (not subresource or other.subresource(subresource))
        ]
        return sorted(others, key=lambda other: (other.group, version_priority(other.version)))

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        stored = self.store.get(_NAMESPACES, "", name)
        if stored is None:
            return None
        labels = stored.obj["metadata"].get("labels")
        return labels if isinstance(labels, dict) else {}

    def namespace_object(self, name: str) -> dict[str, Any] | None:
        """The namespace as policies see it (condition.go CreateNamespaceObject)."""
        stored = self.store.get(_NAMESPACES, "", name)
        if stored is None:
            return None
        obj = stored.thaw()
        meta = obj.get("metadata") or {}
        kept = [
            "name",
            "generateName",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "finalizers",
        ]
        return {
            "metadata": {k: meta[k] for k in kept if k in meta},
            "spec": obj.get("spec") or {},
            "status": obj.get("status") or {},
        }

    async def convert(
        self, obj: dict[str, Any], source: ResourceType, target: ResourceType
    ) -> dict[str, Any]:
        """The request's object in the version a webhook or policy matched (through the
        conversion webhook of a CRD that has one); a failure is an internal error, as
        kube-apiserver's VersionedAttributes conversion reports it."""
        codec = self.codec
        if target.webhook_conversion is None:
            return codec.to_served(target, codec.to_storage(source, json_copy(obj)))
        try:
            return await codec.read_object_as(target, json_copy(obj))
        except StatusError as exc:
            raise internal_error(exc.message) from None

    def redecode(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """A patched object decoded again: unknown fields dropped, defaults applied; what a
        typed decoder cannot read is the webhook's fault (500, as upstream)."""
        types = self.types
        if rt.schema is None and rt.definition is not None:
            try:
                types.schemas.validate(rt.definition, obj)
            except DecodeError as exc:
                raise internal_error(exc.detail) from None
        try:
            types.decode(rt, obj)
        except StatusError as exc:
            if exc.code != 400:
                raise
            # An integer field the patch filled with what Go cannot decode into it.
            raise internal_error(exc.message) from None

    def param_type(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        return self.registry.by_kind(group, version, kind)

    async def find_params(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str | None,
        selector: LabelSelector | None,
    ) -> list[dict[str, Any]]:
        gr = rt.group_resource
        if name is not None:
            stored = self.store.get(gr, namespace or "", name)
            return [] if stored is None else [await self.codec.read_as(rt, stored)]
        found = []
        for stored in self.store.current(gr, namespace)[0]:
            labels = stored.obj["metadata"].get("labels") or {}
            if selector is None or selector.matches(labels):
                found.append(stored)
        return [
            obj if isinstance(obj, dict) else orjson.loads(obj)
            for obj in await self.codec.read_all(rt, found)
        ]


def _printable(text: str) -> str:
    """A warning fit for a header: control characters become spaces."""
    return "".join(" " if unicodedata.category(c)[0] == "C" else c for c in text)


class RequestAdmission:
    """Admission for one request: the write path calls `mutate` after decoding and
    defaulting, `validate` after validation, and `delete` before a deletion."""

    __slots__ = ("admission", "call", "name", "policies", "webhooks")

    def __init__(
        self,
        admission: Admission,
        call: Call,
        name: str | None = None,
        webhooks: bool = True,
        policies: bool = True,
    ) -> None:
        self.admission = admission
        self.call = call
        self.name = name
        # Whether the request's resource is one webhooks, and policies, may be called for.
        self.webhooks = webhooks
        self.policies = policies

    def warn(self, text: str) -> None:
        text = _printable(text)
        if text and text not in self.call.warnings:
            self.call.warnings.append(text)

    def attributes(
        self,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        kind: GVK | None = None,
        options: dict[str, Any] | None = None,
    ) -> Attributes:
        call = self.call
        rt = call.rt
        if self.name is None:
            # A create names what it creates in its body; a generated name is not known yet.
            if call.name:
                self.name = call.name
            else:
                meta = (obj or {}).get("metadata")
                self.name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
        namespace = call.namespace
        if rt.group == "" and rt.plural == "namespaces" and not namespace:
            namespace = self.name
        if options is None and operation in ("CREATE", "UPDATE"):
            options = operation_options(operation, call.query)
        return Attributes(
            operation=operation,
            rt=rt,
            subresource=call.info.subresource or "",
            kind=kind or subresource_kind(rt, call.info.subresource or ""),
            name=self.name,
            namespace=namespace,
            object=obj,
            old_object=old,
            options=options,
            dry_run=call.dry_run if operation != "CONNECT" else False,
            user=call.user,
        )

    async def mutate(
        self,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        kind: GVK | None = None,
    ) -> dict[str, Any]:
        """Run the mutating webhooks; the object as they left it. The write path then holds
        it to the rules it holds a client's object to (Writes.prepare_create, write_update)."""
        admission = self.admission
        attrs = self.attributes(operation, obj, old, kind)
        if self.webhooks and admission.mutating:
            await dispatch_mutating(admission, admission.mutating, attrs, self.warn)
        result = attrs.object
        assert result is not None
        if result is obj or kind is not None:
            return result
        meta = result.get("metadata")
        if not isinstance(meta, dict):
            return result
        if self.call.rt.namespaced:
            namespace = meta.get("namespace")
            if namespace and namespace != self.call.namespace:
                raise StatusError.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
        before = obj["metadata"].get("managedFields")
        after = meta.get("managedFields")
        if after != before:
            # As kube-apiserver's managedFieldsValidatingAdmissionController: entries a
            # webhook made unreadable are put back as they were, with a warning (k8s.io/
            # apiserver pkg/endpoints/handlers/fieldmanager/admission.go).
            error = managed_fields_error(after)
            if error is not None:
                if before is None:
                    del meta["managedFields"]
                else:
                    meta["managedFields"] = before
                self.warn(_INVALID_MANAGED_FIELDS + error)
        return result

    async def validate(
        self,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        kind: GVK | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Run the validating policies, then the validating webhooks."""
        admission = self.admission
        attrs = self.attributes(operation, obj, old, kind, options)
        if self.policies and admission.policies:
            await dispatch_policies(admission, admission.policies, attrs, self.warn)
        if self.webhooks and admission.validating:
            await dispatch_validating(admission, admission.validating, attrs, self.warn)

    async def delete(self, old: dict[str, Any], options: Mapping[str, Any]) -> None:
        """A deletion: mutating webhooks (which may not patch) and validation, with the
        object as it is and the DeleteOptions."""
        opts = operation_options("DELETE", self.call.query, options)
        admission = self.admission
        attrs = self.attributes("DELETE", None, old, None, opts)
        if self.webhooks and admission.mutating:
            await dispatch_mutating(admission, admission.mutating, attrs, self.warn)
        await self.validate("DELETE", None, old, None, opts)

    async def connect(self, options: dict[str, Any]) -> None:
        """A CONNECT (exec, attach, port-forward, proxy): the connect options are the
        object, as kube-apiserver's connect handler admits them."""
        admission = self.admission
        attrs = self.attributes("CONNECT", options, None)
        if self.webhooks and admission.mutating:
            await dispatch_mutating(admission, admission.mutating, attrs, self.warn)
        await self.validate("CONNECT", attrs.object, None)
