"""POST to a collection (k8s.io/apiserver pkg/endpoints/handlers/create.go): the body
becomes a new object through the write pipeline.

Three kinds of resource are created otherwise: the review APIs and Binding are answered,
never stored (`Reviews`, `Bind`, from the stages that own them); a pod of a server that
mounts ServiceAccount tokens waits briefly for its namespace's `default` account
(`PodAccounts`); and a custom resource whose CRD is being deleted takes no new objects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kubeforge._apiserver.handlers.call import Admissions, Call
from kubeforge._apiserver.handlers.exchange import admitted, body, finish, written
from kubeforge._apiserver.handlers.writes import Writes, Written
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Bind", "CreateHandler", "PodAccounts", "Reviews"]

# Answers a review (SubjectAccessReview, TokenReview, ...) once admitted: (call, body).
Reviews = Callable[[Call, Any], dict[str, Any]]
# Assigns a pod to a node: (call, the Binding, the pod's name).
Bind = Callable[[Call, Any, str], Awaitable[dict[str, Any]]]


class PodAccounts(Protocol):
    """The ServiceAccount admission of pods, as far as a create waits for it."""

    def missing_account(self, call: Call, body: Any) -> bool:
        """Whether the pod's namespace has no `default` account yet (and the pod uses it)."""

    async def wait_for_default(self, namespace: str) -> None:
        """Wait a little for the namespace's `default` account."""


class CreateHandler:
    """Answers create."""

    def __init__(
        self,
        writes: Writes,
        admission: Admissions,
        reviews: Reviews,
        bind: Bind,
        refuses_instances: Callable[[ResourceType], bool],
        pod_accounts: PodAccounts | None = None,
        pods: ResourceType | None = None,
    ) -> None:
        self.writes = writes
        self.admission = admission
        self.reviews = reviews
        self.bind = bind
        self.refuses_instances = refuses_instances
        # Only pods of a server that admits them wait for their namespace's account.
        self.pod_accounts = pod_accounts
        self.pods = pods

    def handle(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """POST to a collection."""
        rt = call.rt
        decoded = body(request)
        if rt.virtual:
            call.admission = self.admission.begin(call, ("CREATE",))
            return finish(call, written(201, self._virtual(call, decoded)))
        accounts = self.pod_accounts
        if rt is self.pods and accounts is not None and accounts.missing_account(call, decoded):
            call.admission = self.admission.begin(call, ("CREATE",))
            return admitted(call, self._create_pod_later(accounts, call, decoded))
        if self.refuses_instances(rt):
            raise StatusError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
            )
        call.admission = self.admission.begin(call, ("CREATE",))
        return finish(call, self.writes.create(call, decoded))

    async def _virtual(self, call: Call, body: Any) -> dict[str, Any]:
        if call.rt.kind == "Binding":
            name = (body.get("metadata") or {}).get("name", "") if isinstance(body, dict) else ""
            return await self.bind(call, body, name)
        review = call.admission
        if review is not None and isinstance(body, dict):
            typed = {**body, "apiVersion": call.rt.api_version, "kind": call.rt.kind}
            body = await review.mutate("CREATE", typed, None)
            await review.validate("CREATE", body, None)
        return self.reviews(call, body)

    async def _create_pod_later(self, accounts: PodAccounts, call: Call, body: Any) -> Written:
        # ServiceAccount admission waits a little for a new namespace's `default` account,
        # which the service account controller creates soon after the namespace.
        await accounts.wait_for_default(call.namespace)
        return await self.writes.create(call, body)
