"""One API request as the resource handlers see it: target, options and collected warnings,
and the admission it goes through.

Admission is above the handlers: they know it only as the two protocols below, which the
server's admission (`admission/chain.py`) meets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.request.user import ADMIN, UserInfo
from kubeforge._apiserver.storage.store import Revisions, StoredObject
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Admissions", "Admitting", "Call", "stored_object"]

_FIELD_VALIDATION = ("Strict", "Warn", "Ignore")


class Admitting(Protocol):
    """The admission of one request, at the points the write path names: `mutate` after
    decoding and defaulting, `validate` after validation, `delete` before a deletion,
    `connect` before a connection."""

    async def mutate(
        self, operation: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Run the mutating webhooks; the object as they left it."""

    async def validate(
        self, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        """Run the validating policies and webhooks; raise to refuse."""

    async def delete(self, old: dict[str, Any], options: Mapping[str, Any]) -> None:
        """Admit a deletion of `old` with its DeleteOptions."""

    async def connect(self, options: dict[str, Any]) -> None:
        """Admit a connection with its options."""


class Admissions(Protocol):
    """Starts the admission of a request: None when no webhook or policy may apply to it
    (judged from its resource, subresource and the operations it may be)."""

    def begin(
        self, call: Call, operations: tuple[str, ...], name: str | None = None
    ) -> Admitting | None:
        """The admission of `call`, or None; `name` overrides the request's name (a
        collection's deletes have none)."""


@dataclass
class Call:
    """A resource request after routing."""

    info: RequestInfo
    rt: ResourceType
    query: Mapping[str, str]
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)
    # The requesting user: the one place the write path and admission read it from.
    user: UserInfo = ADMIN
    # Set when admission webhooks or policies may apply to this request; the server's own
    # writes (bootstrap, garbage collection, namespace cleanup) leave it unset.
    admission: Admitting | None = None
    # The request's Audit-Id, for answers that are streamed (their headers go out early).
    audit_id: str = ""

    @property
    def namespace(self) -> str:
        return self.info.namespace or ""

    @property
    def name(self) -> str:
        return self.info.name or ""

    @property
    def dry_run(self) -> bool:
        value = self.query.get("dryRun")
        if value is None:
            return False
        # An empty value is the one-item list [""], which is no supported value either.
        if value != "All":
            options = {"create": "CreateOptions", "update": "UpdateOptions"}.get(
                self.info.verb, "DeleteOptions" if "delete" in self.info.verb else "PatchOptions"
            )
            raise StatusError.unprocessable(
                f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                f'"{value}": supported values: "All"'
            )
        return True

    @property
    def field_validation(self) -> str:
        """Strict, Warn or Ignore; the server default is Warn."""
        value = self.query.get("fieldValidation") or "Warn"
        if value not in _FIELD_VALIDATION:
            raise StatusError.bad_request(
                f"fieldValidation parameter unsupported: {value}; "
                "supported values are Ignore, Warn, Strict"
            )
        return value

    @property
    def field_manager(self) -> str:
        """The manager recorded in managedFields: the fieldManager parameter or the agent."""
        manager = self.query.get("fieldManager")
        if manager:
            if len(manager) > 128:
                raise StatusError.unprocessable(
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: '
                    "may not be more than 128 bytes"
                )
            return manager
        agent = self.user_agent.split("/", 1)[0].strip()
        return agent or "unknown"

    def report_unknown_fields(self, paths: list[str], prefix: str = "") -> None:
        """Apply fieldValidation to fields the decoder dropped."""
        if not paths:
            return
        mode = self.field_validation
        if mode == "Ignore":
            return
        messages = [f'{prefix}unknown field "{p}"' for p in paths]
        if mode == "Strict":
            rt = self.rt
            # Built-in types fail in their typed decoder, which names the kind first.
            lead = (
                ""
                if rt.is_crd
                else f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            )
            raise StatusError.bad_request(lead + "strict decoding error: " + ", ".join(messages))
        self.warnings.extend(messages)


def stored_object(store: Revisions, call: Call) -> StoredObject:
    """The object the request names, or 404."""
    stored = store.get(call.rt.group_resource, call.namespace, call.name)
    if stored is None:
        raise StatusError.not_found(call.rt.group, call.rt.plural, call.name)
    return stored
