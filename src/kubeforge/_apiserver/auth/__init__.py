"""Authentication and authorization for the embedded API server.

`Auth` ties the parts together the way kube-apiserver's filters do: authenticate (client
certificate, bearer token, anonymous), apply impersonation, then authorize the request
(system:masters first, then RBAC). It also answers the review APIs and TokenRequest, checks
RBAC writes for escalation (`escalation.py`), and holds the admission plugins that ask the
authorizer or read ServiceAccounts (`csradmission.py`, `serviceaccounts.py`); the server adds
those to the write pipeline and its RBAC cache (`observe`) to the commit observers.

May import the stages below it: admission, handlers, discovery, printing, storage, types,
webhookclient, request, http.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.authenticator import Authenticator
from kubeforge._apiserver.auth.escalation import EscalationCheck
from kubeforge._apiserver.auth.forbidden import forbidden
from kubeforge._apiserver.auth.impersonation import impersonated, wants_impersonation
from kubeforge._apiserver.auth.rbac import RBAC_GROUP, RBACAuthorizer
from kubeforge._apiserver.auth.reviews import Reviews
from kubeforge._apiserver.auth.serviceaccounts import PodAdmission, token_request
from kubeforge._apiserver.auth.tokens import TokenIssuer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Auth"]


class Auth:
    """Who a request is from and whether they may make it."""

    def __init__(
        self,
        store: Store,
        schemas: BuiltinSchemas,
        admin_token: str,
        issuer: TokenIssuer,
        anonymous_paths: frozenset[str] | None = None,
    ) -> None:
        self.store = store
        self.schemas = schemas
        self.issuer = issuer
        self.authenticator = Authenticator(admin_token, issuer, store, anonymous_paths)
        self.rbac = RBACAuthorizer(store)
        self.reviews = Reviews(self.authenticator, self.rbac, self.decide)
        # The ServiceAccount admission plugin for pods, and the RBAC escalation check.
        self.pods = PodAdmission(store)
        self.escalation = EscalationCheck(self.rbac, self.decide)

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Keep the RBAC cache current with committed roles and bindings."""
        if rt.group == RBAC_GROUP:
            self.rbac.observe(rt.group_resource, event, new)

    # the request path -------------------------------------------------------------------

    def authenticate(
        self, headers: Mapping[str, str], certificate: bytes | None, path: str
    ) -> UserInfo:
        """The requester (after impersonation); 401 for a rejected credential, or for none
        on a path closed to anonymous requests."""
        user = self.authenticator.authenticate(headers.get("Authorization"), certificate, path, [])
        if user is None:
            raise StatusError.unauthorized()
        if wants_impersonation(headers):
            user = impersonated(user, headers, self.decide)
        return user

    def decide(self, attrs: Attributes) -> tuple[bool, str]:
        """Allowed or not, and the reason (the union of system:masters and RBAC)."""
        if attrs.user.privileged:
            return True, ""
        decision = self.rbac.authorize(attrs)
        if decision.allowed:
            return True, decision.reason
        if not decision.errors:
            return False, ""
        errors = decision.errors
        text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return False, f"RBAC: {text}"

    def check(self, user: UserInfo, asked: Mapping[str, str]) -> tuple[bool, str]:
        """A decision for the CEL `authorizer` of admission expressions: `asked` names the
        verb and either a path or the apiGroup, resource, subresource, namespace and name."""
        path = asked.get("path", "")
        attrs = Attributes(
            user,
            asked.get("verb", ""),
            not path,
            group=asked.get("apiGroup", ""),
            resource=asked.get("resource", ""),
            subresource=asked.get("subresource", ""),
            namespace=asked.get("namespace", ""),
            name=asked.get("name", ""),
            path=path,
        )
        return self.decide(attrs)

    def authorize(
        self,
        user: UserInfo,
        method: str,
        path: str,
        info: RequestInfo | None,
        query: Mapping[str, str],
    ) -> None:
        """Raise Forbidden unless `user` may make this request."""
        if user.privileged:
            return
        if info is None:
            attrs = Attributes(user, method.lower(), False, path=path)
        else:
            attrs = resource_attributes(user, info, query)
        allowed, reason = self.decide(attrs)
        if not allowed:
            raise forbidden(attrs, reason)

    # handlers ---------------------------------------------------------------------------

    def review(self, call: Call, body: Any) -> dict[str, Any]:
        return self.reviews.answer(call, body)

    async def token_request(self, call: Call, body: Any) -> dict[str, Any]:
        """Issue a TokenRequest; admission sees it (as a CREATE) before a token is signed."""
        review = call.admission
        if review is not None and isinstance(body, dict):
            request = {**body, "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
            body = await review.mutate("CREATE", request, None)
            await review.validate("CREATE", body, None)
        return token_request(call, body, self.store, self.issuer, self.schemas)


def resource_attributes(user: UserInfo, info: RequestInfo, query: Mapping[str, str]) -> Attributes:
    """A resource request's attributes, as the apiserver's RequestInfo resolves them: a
    namespace object is in its own namespace; a list or watch selecting one name by
    `metadata.name` addresses that name."""
    name = info.name or ""
    namespace = info.namespace or ""
    if info.resource == "namespaces" and info.namespace is None and name:
        namespace = name
    if not name and info.verb in ("list", "watch"):
        selector = query.get("fieldSelector") or ""
        if selector.startswith("metadata.name=") and "," not in selector:
            name = selector[len("metadata.name=") :]
    return Attributes(
        user,
        info.verb,
        True,
        info.group,
        info.version,
        info.resource,
        info.subresource or "",
        namespace,
        name,
    )
