"""The service account controller: every active namespace has a `default` ServiceAccount.

Namespaces are reconciled when they appear or change and when one of their service
accounts is deleted, so a deleted `default` account comes back. Terminating namespaces
are left alone, as upstream does.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import is_deleting, name_of, namespace_of, status_of
from kubeforge._client.errors import AlreadyExists, ApiError, NotFound
from kubeforge._cluster.controllers._writes import namespace_terminating
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import Funcs
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["MANAGED_ACCOUNTS", "ServiceAccountReconciler", "setup"]

NAMESPACE = "v1/Namespace"
SERVICE_ACCOUNT = "v1/ServiceAccount"
# The accounts every namespace gets.
MANAGED_ACCOUNTS = ("default",)


class ServiceAccountReconciler(Reconciler):
    """Creates the managed service accounts missing from a namespace."""

    async def reconcile(self, request: Request) -> Result | None:
        try:
            namespace = await self.client.get(NAMESPACE, request.name)
        except NotFound:
            return None
        if status_of(namespace).get("phase", "Active") != "Active":
            return None
        if is_deleting(namespace):
            return None
        for account in MANAGED_ACCOUNTS:
            try:
                await self.client.get(SERVICE_ACCOUNT, account, namespace=request.name)
                continue
            except NotFound:
                pass
            body = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": request.name},
            }
            try:
                await self.client.create(body)
            except AlreadyExists:
                pass  # the cache had not seen it yet
            except ApiError as exc:
                # The namespace began terminating after it was read.
                if not namespace_terminating(exc):
                    raise
        return None


def _namespace_of_account(account: dict[str, Any]) -> list[Request]:
    if name_of(account) not in MANAGED_ACCOUNTS:
        return []
    return [Request("", namespace_of(account))]


def setup(manager: Manager) -> None:
    """Register the service account controller with `manager`."""
    deletes_only = Funcs(on_create=lambda _obj: False, on_update=lambda _old, _new: False)
    (
        manager.controller()
        .named("serviceaccount")
        .for_(NAMESPACE)
        .watches(SERVICE_ACCOUNT, _namespace_of_account, predicates=[deletes_only])
        .with_options(max_concurrent_reconciles=1)
        .complete(ServiceAccountReconciler())
    )
