"""The CSR signer: issues certificates for approved requests to the kube-apiserver-client
signer, signed by the cluster's CA, so the certificate authenticates its holder.

As kube-controller-manager's csrsigning controller does (pkg/controller/certificates/signer):
requests that are not approved, have failed, already hold a certificate, or name another
signer are left alone; a request whose usages a client certificate may not have gets a
`Failed` condition (reason SignerValidationFailure) instead; the certificate lasts the
requested `expirationSeconds` (at least ten minutes) up to a year, never past the CA.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, meta_of
from kubeforge._api.machinery.certificates import ServingCertificates, sign_certificate_request
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.types.validation.certificates import decode_pem_field, parse_csr
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["KUBE_APISERVER_CLIENT", "CSRSigner", "setup"]

CSR = "certificates.k8s.io/v1/CertificateSigningRequest"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
# --cluster-signing-duration's default, and the shortest duration honoured.
MAX_DURATION = dt.timedelta(days=365)
MIN_DURATION = dt.timedelta(minutes=10)
_OPTIONAL_USAGES = frozenset({"digital signature", "key encipherment"})


def _condition_types(csr: dict[str, Any]) -> set[str]:
    conditions = as_list(as_dict(csr.get("status")).get("conditions"))
    return {str(as_dict(c).get("type")) for c in conditions if as_dict(c).get("status") == "True"}


def client_usage_problem(usages: list[Any]) -> str | None:
    """validAPIServerClientUsages: client auth, and nothing but the two optional usages."""
    for usage in usages:
        if usage != "client auth" and usage not in _OPTIONAL_USAGES:
            return f"invalid usage for client certificate: {usage}"
    if "client auth" not in usages:
        return "missing required usage for client certificate: client auth"
    return None


def _duration(seconds: Any) -> dt.timedelta:
    if not isinstance(seconds, int):
        return MAX_DURATION
    return max(MIN_DURATION, min(MAX_DURATION, dt.timedelta(seconds=seconds)))


class CSRSigner(Reconciler):
    """Signs approved kube-apiserver-client requests with the cluster's CA."""

    def __init__(self, certificates: ServingCertificates) -> None:
        self.certificates = certificates

    async def reconcile(self, request: Request) -> Result | None:
        try:
            csr = await self.client.get(CSR, request.name)
        except NotFound:
            return None
        spec = as_dict(csr.get("spec"))
        status = as_dict(csr.get("status"))
        kinds = _condition_types(csr)
        if (
            "Approved" not in kinds
            or "Failed" in kinds
            or status.get("certificate")
            or meta_of(csr).get("deletionTimestamp")
            or spec.get("signerName") != KUBE_APISERVER_CLIENT
        ):
            return None
        usages = as_list(spec.get("usages"))
        problem = client_usage_problem(usages)
        if problem is not None:
            conditions = as_list(status.get("conditions"))
            now = now_rfc3339()
            failed = {
                "type": "Failed",
                "status": "True",
                "reason": "SignerValidationFailure",
                "message": problem,
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
            csr["status"] = {**status, "conditions": [*conditions, failed]}
        else:
            parsed = parse_csr(decode_pem_field(spec.get("request")))
            certificate = sign_certificate_request(
                self.certificates,
                parsed,
                [str(u) for u in usages],
                _duration(spec.get("expirationSeconds")),
            )
            csr["status"] = {**status, "certificate": base64.b64encode(certificate).decode()}
        try:
            await self.client.update_status(csr)
        except (NotFound, Conflict):
            # Gone, or changed meanwhile: the change brings the request back.
            return None
        return None


def setup(manager: Manager, certificates: ServingCertificates) -> None:
    """Register the CSR signer with `manager`."""
    (
        manager.controller()
        .named("csrsigning-kube-apiserver-client")
        .for_(CSR)
        .complete(CSRSigner(certificates))
    )
