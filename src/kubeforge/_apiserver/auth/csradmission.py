"""Who may approve and sign CertificateSigningRequests, and what may be asked for.

The three admission plugins kube-apiserver runs for CSRs (plugin/pkg/admission/certificates):
- CertificateApproval: a write through `/approval` needs the `approve` verb on the request's
  signer (`signers` in certificates.k8s.io, named after the signer, or `<domain>/*`);
- CertificateSigning: a `/status` write that changes the certificate needs `sign` likewise;
- CertificateSubjectRestriction: nobody may ask the kube-apiserver-client signer for a
  certificate in the `system:masters` group.
Update and patch rights on the subresources alone are not enough, so a user who may write
`certificatesigningrequests/approval` still approves only for signers they are trusted with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography.x509.oid import NameOID

from kubeforge._api.machinery.access import as_dict, as_str
from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.user import MASTERS, UserInfo
from kubeforge._apiserver.types.validation.certificates import decode_pem_field, parse_csr

__all__ = ["KUBE_APISERVER_CLIENT", "CertificateAdmission"]

GROUP = "certificates.k8s.io"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"


def _signer(obj: dict[str, Any]) -> str:
    return as_str(as_dict(obj.get("spec")).get("signerName"))


class CertificateAdmission:
    """An admitter of the write pipeline (handlers/writes.py) for CertificateSigningRequest
    writes."""

    def __init__(self, allowed: Callable[[Attributes], tuple[bool, str]]) -> None:
        self.allowed = allowed

    def _require(self, user: UserInfo, verb: str, signer: str, name: str) -> None:
        """IsAuthorizedForSignerName: `verb` on the signer by name, or on every signer of its
        domain; 403 otherwise."""
        for signer_name in (signer, signer.split("/")[0] + "/*"):
            attrs = Attributes(user, verb, True, GROUP, "*", "signers", "", "", signer_name)
            if self.allowed(attrs)[0]:
                return
        raise StatusError.forbidden(
            GROUP,
            "certificatesigningrequests",
            name,
            f'user not permitted to {verb} requests with signerName "{signer}"',
        )

    def __call__(self, call: Call, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        rt = call.rt
        if rt.group != GROUP or rt.plural != "certificatesigningrequests":
            return
        sub = call.info.subresource
        name = as_str(obj["metadata"].get("name"))
        if old is None and not sub:
            self._restrict_subject(obj, name)
        elif sub == "approval":
            # The new object's signer: an attempt to change it is refused by validation.
            self._require(call.user, "approve", _signer(obj), name)
        elif sub == "status" and old is not None:
            certificate = as_dict(obj.get("status")).get("certificate")
            if certificate == as_dict(old.get("status")).get("certificate"):
                return
            self._require(call.user, "sign", _signer(old), name)

    @staticmethod
    def _restrict_subject(obj: dict[str, Any], name: str) -> None:
        signer = _signer(obj)
        if signer != KUBE_APISERVER_CLIENT:
            return
        try:
            csr = parse_csr(decode_pem_field(as_dict(obj.get("spec")).get("request")))
        except ValueError as exc:
            raise StatusError.forbidden(
                GROUP, "certificatesigningrequests", name, f"failed to parse CSR: {exc}"
            ) from None
        organizations = csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        if any(o.value == MASTERS for o in organizations):
            raise StatusError.forbidden(
                GROUP,
                "certificatesigningrequests",
                name,
                f"use of {signer} signer with {MASTERS} group is not allowed",
            )
