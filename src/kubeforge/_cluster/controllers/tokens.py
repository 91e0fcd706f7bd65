"""The token controller: fills `kubernetes.io/service-account-token` Secrets.

A Secret of that type names its account in the `kubernetes.io/service-account.name`
annotation; the controller records the account's uid in
`kubernetes.io/service-account.uid` and writes `token` (a legacy, non-expiring token the
API server accepts while the Secret and the account exist), `ca.crt` and `namespace`, as
kube-controller-manager's token controller does. Secrets whose account does not exist
yet are tried again a little later.
"""

from __future__ import annotations

import base64
from typing import Any

from kubeforge._api.machinery.access import meta_of
from kubeforge._apiserver.auth.tokens import TokenIssuer
from kubeforge._client.errors import NotFound
from kubeforge._client.protocols import Reader
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import Funcs
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["SECRET_TYPE", "TokenController", "setup"]

SECRET = "v1/Secret"
SERVICE_ACCOUNT = "v1/ServiceAccount"
SECRET_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"


def _b64(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return base64.b64encode(data).decode()


class TokenController(Reconciler):
    """Writes the token, CA and namespace into service account token Secrets."""

    def __init__(self, issuer: TokenIssuer, ca_pem: bytes, *, live: Reader) -> None:
        self.issuer = issuer
        self.ca_pem = ca_pem
        # The account is read from the server: its uid must be the current one.
        self.live = live

    async def reconcile(self, request: Request) -> Result | None:
        try:
            secret = await self.client.get(SECRET, request.name, namespace=request.namespace)
        except NotFound:
            return None
        meta = meta_of(secret)
        if secret.get("type") != SECRET_TYPE or meta.get("deletionTimestamp"):
            return None
        annotations = meta.get("annotations") or {}
        account_name = str(annotations.get(NAME_ANNOTATION) or "")
        if not account_name:
            return None
        try:
            account = await self.live.get(
                SERVICE_ACCOUNT, account_name, namespace=request.namespace
            )
        except NotFound:
            return Result(requeue_after=1.0)
        uid = str(meta_of(account).get("uid") or "")
        wanted_uid = annotations.get(UID_ANNOTATION)
        if wanted_uid and wanted_uid != uid:
            return None  # a Secret for an earlier account of that name
        data = secret.get("data") or {}
        if wanted_uid and data.get("token") and data.get("ca.crt") and data.get("namespace"):
            return None
        token = self.issuer.issue_legacy(request.namespace, account_name, uid, request.name)
        patch: dict[str, Any] = {
            "metadata": {"annotations": {UID_ANNOTATION: uid}},
            "data": {
                "token": _b64(token),
                "ca.crt": _b64(self.ca_pem),
                "namespace": _b64(request.namespace),
            },
        }
        await self.client.patch(SECRET, request.name, patch, namespace=request.namespace)
        return None


def setup(manager: Manager, issuer: TokenIssuer, ca_pem: bytes) -> None:
    """Register the token controller with `manager`."""

    def is_token_secret(obj: Any) -> bool:
        return isinstance(obj, dict) and obj.get("type") == SECRET_TYPE

    only_tokens = Funcs(
        on_create=is_token_secret,
        on_update=lambda _old, new: is_token_secret(new),
        on_delete=lambda _obj: False,
        on_generic=is_token_secret,
    )
    (
        manager.controller()
        .named("serviceaccount-token")
        .for_(SECRET, predicates=[only_tokens])
        .with_options(max_concurrent_reconciles=1)
        .complete(TokenController(issuer, ca_pem, live=manager.api_reader))
    )
