"""Validation of certificates.k8s.io/v1 CertificateSigningRequests, as
pkg/apis/certificates/validation/validation.go checks them: a signed PKCS#10 request, known
usages, a fully qualified signer name, conditions that agree with each other, and an issued
certificate that parses. Updates go through three doors (the object, /status, /approval),
each allowed to change one part; what an existing object already holds is tolerated.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.certificates import EXTENDED_USAGES, KEY_USAGES
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue
from kubeforge._api.machinery.names import is_dns1123_label, is_dns1123_subdomain
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_json, semantic_equal

__all__ = [
    "LEGACY_UNKNOWN_SIGNER",
    "decode_pem_field",
    "parse_csr",
    "validate_csr",
    "validate_csr_approval_update",
    "validate_csr_status_update",
    "validate_csr_update",
    "validate_signer_name",
]

LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
_USAGES = tuple(sorted({*KEY_USAGES, *EXTENDED_USAGES}))
_TRUE_ONLY = frozenset({"Approved", "Denied", "Failed"})
_ALL_STATUSES = ("False", "True", "Unknown")
_MIN_EXPIRATION = 600
_SUBDOMAIN_MAX = 253
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


# -- PEM and the request -------------------------------------------------------------------


def decode_pem_field(value: Any) -> bytes:
    """A []byte field's bytes (JSON carries them base64-encoded); b"" when unreadable."""
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _pem_blocks(data: bytes) -> list[tuple[str, bytes, bool]]:
    """(type, DER bytes, has headers) of each PEM block, as Go's pem.Decode finds them."""
    blocks = []
    for match in _PEM_BLOCK.finditer(data):
        body = match.group(2)
        headers = False
        lines = body.splitlines()
        if lines and b":" in lines[0]:
            headers = True
            lines = lines[lines.index(b"") + 1 :] if b"" in lines else []
        try:
            der = base64.b64decode(b"".join(line.strip() for line in lines), validate=True)
        except (binascii.Error, ValueError):
            continue
        blocks.append((match.group(1).decode(), der, headers))
    return blocks


def parse_csr(request: bytes) -> x509.CertificateSigningRequest:
    """The PKCS#10 request in the first PEM block (ValueError with the server's words)."""
    blocks = _pem_blocks(request)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return x509.load_der_x509_csr(blocks[0][1])
    except ValueError:
        raise ValueError("x509: malformed certificate request") from None


def _request_problem(request: bytes) -> str | None:
    try:
        csr = parse_csr(request)
    except ValueError as exc:
        return str(exc)
    try:
        valid = csr.is_signature_valid
    except Exception:  # an algorithm cryptography cannot check is no valid signature either
        valid = False
    return None if valid else "x509: signature verification failure"


def _certificate_problem(data: bytes) -> str | None:
    """validateCertificate: only headerless CERTIFICATE blocks, each one that parses."""
    if not data:
        return None
    blocks = _pem_blocks(data)
    for kind, der, headers in blocks:
        if kind != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind}"'
        if headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError:
            return "x509: malformed certificate"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _go_bytes(data: bytes) -> GoValue:
    return GoValue("[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}")


# -- signer names --------------------------------------------------------------------------


def validate_signer_name(path: str, signer: str) -> Errors:
    """ValidateSignerName: `<domain>/<path>`, a domain of at least two DNS labels, a path of
    DNS subdomains, the whole fitting in one subdomain."""
    if not signer:
        return [FieldError.required(path, "")]
    segments = signer.split("/")
    if len(segments) != 2:
        return [
            FieldError.invalid(
                path,
                signer,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )
        ]
    domain, name = segments
    errs: Errors = []
    if len(domain) > _SUBDOMAIN_MAX:
        errs.append(FieldError.too_long(path, _SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:
        problems = is_dns1123_label(label)
        if problems:
            errs += [
                FieldError.invalid(path, domain, f'validating label "{label}": {m}')
                for m in problems
            ]
            break
    if len(labels) < 2:
        errs.append(
            FieldError.invalid(
                path, domain, "should be a domain with at least two segments separated by dots"
            )
        )
    for label in name.split("."):
        problems = is_dns1123_subdomain(label)
        if problems:
            errs += [
                FieldError.invalid(path, name, f'validating label "{label}": {m}') for m in problems
            ]
            break
    limit = _SUBDOMAIN_MAX - len(domain) - 1
    if len(signer) > limit:
        errs.append(FieldError.too_long(path, limit))
    return errs


# -- the object ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    """What an update may do (by the door it comes through) or must tolerate (because the
    stored object already does it)."""

    set_approval: bool = False
    set_certificate: bool = False
    both_approved_and_denied: bool = False
    legacy_signer: bool = False
    duplicate_conditions: bool = False
    empty_condition_type: bool = False
    arbitrary_certificate: bool = False
    unknown_usages: bool = False
    duplicate_usages: bool = False


def _conditions(obj: Obj) -> list[Obj]:
    return [as_dict(c) for c in as_list(as_dict(obj.get("status")).get("conditions"))]


def _types(obj: Obj) -> list[str]:
    return [as_str(c.get("type")) for c in _conditions(obj)]


def _certificate(obj: Obj) -> bytes:
    return decode_pem_field(as_dict(obj.get("status")).get("certificate"))


def _options(new: Obj, old: Obj | None, **doors: bool) -> _Options:
    if old is None:
        return _Options(**doors)
    old_types = _types(old)
    old_usages = [as_str(u) for u in as_list(as_dict(old.get("spec")).get("usages"))]
    old_cert = _certificate(old)
    return _Options(
        both_approved_and_denied="Approved" in old_types and "Denied" in old_types,
        legacy_signer=as_str(as_dict(old.get("spec")).get("signerName")) == LEGACY_UNKNOWN_SIGNER,
        duplicate_conditions=len(set(old_types)) != len(old_types),
        empty_condition_type="" in old_types,
        arbitrary_certificate=_certificate(new) == old_cert
        or _certificate_problem(old_cert) is not None,
        unknown_usages=any(u not in _USAGES for u in old_usages),
        duplicate_usages=len(set(old_usages)) != len(old_usages),
        **doors,
    )


def _validate_conditions(obj: Obj, opts: _Options) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(_conditions(obj)):
        path = f"status.conditions[{i}]"
        kind = as_str(condition.get("type"))
        if not kind and not opts.empty_condition_type:
            errs.append(FieldError.required(f"{path}.type", ""))
        allowed = ("True",) if kind in _TRUE_ONLY else _ALL_STATUSES
        status = condition.get("status")
        if not status:
            errs.append(FieldError.required(f"{path}.status", ""))
        elif status not in allowed:
            errs.append(FieldError.not_supported(f"{path}.status", status, allowed))
        if not opts.both_approved_and_denied:
            if kind == "Approved":
                approved = True
                if denied:
                    errs.append(
                        FieldError.invalid(
                            f"{path}.type",
                            kind,
                            "Approved and Denied conditions are mutually exclusive",
                        )
                    )
            elif kind == "Denied":
                denied = True
                if approved:
                    errs.append(
                        FieldError.invalid(
                            f"{path}.type",
                            kind,
                            "Approved and Denied conditions are mutually exclusive",
                        )
                    )
        if not opts.duplicate_conditions:
            if kind in seen:
                errs.append(FieldError.duplicate(f"{path}.type", kind))
            seen.add(kind)
    return errs


def _validate(obj: Obj, opts: _Options) -> Errors:
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    request = decode_pem_field(spec.get("request"))
    problem = _request_problem(request)
    if problem is not None:
        errs.append(FieldError.invalid("spec.request", _go_bytes(request), problem))
    usages = as_list(spec.get("usages"))
    if not usages:
        errs.append(FieldError.required("spec.usages", ""))
    if not opts.unknown_usages:
        for i, usage in enumerate(usages):
            if usage not in _USAGES:
                errs.append(FieldError.not_supported(f"spec.usages[{i}]", usage, _USAGES))
    if not opts.duplicate_usages:
        seen: set[Any] = set()
        for i, usage in enumerate(usages):
            if usage in seen:
                errs.append(FieldError.duplicate(f"spec.usages[{i}]", usage))
            seen.add(usage)
    signer = as_str(spec.get("signerName"))
    if not opts.legacy_signer and signer == LEGACY_UNKNOWN_SIGNER:
        errs.append(
            FieldError.invalid(
                "spec.signerName",
                signer,
                "the legacy signerName is not allowed via this API version",
            )
        )
    else:
        errs += validate_signer_name("spec.signerName", signer)
    expiration = as_int(spec.get("expirationSeconds"))
    if expiration is not None and expiration < _MIN_EXPIRATION:
        errs.append(
            FieldError.invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration less than 600 seconds (10 minutes)",
            )
        )
    errs += _validate_conditions(obj, opts)
    if not opts.arbitrary_certificate:
        problem = _certificate_problem(_certificate(obj))
        if problem is not None:
            errs.append(FieldError.invalid("status.certificate", "<certificate data>", problem))
    return errs


def _validate_update(obj: Obj, old: Obj, opts: _Options) -> Errors:
    errs = _validate(obj, opts)
    new_conditions, old_conditions = _conditions(obj), _conditions(old)
    for kind in ("Approved", "Denied", "Failed"):
        if sum(c.get("type") == kind for c in new_conditions) < sum(
            c.get("type") == kind for c in old_conditions
        ):
            errs.append(
                FieldError.forbidden(
                    "status.conditions", f'updates may not remove a condition of type "{kind}"'
                )
            )
    if not opts.set_approval:
        for kind in ("Approved", "Denied"):
            before = [c for c in old_conditions if c.get("type") == kind]
            after = [c for c in new_conditions if c.get("type") == kind]
            if len(after) > len(before):
                errs.append(
                    FieldError.forbidden(
                        "status.conditions", f'updates may not add a condition of type "{kind}"'
                    )
                )
            elif len(after) == len(before) and not semantic_equal(after, before):
                errs.append(
                    FieldError.forbidden(
                        "status.conditions",
                        f'updates may not modify a condition of type "{kind}"\n{go_json(after)}',
                    )
                )
    if _certificate(obj) != _certificate(old):
        if not opts.set_certificate:
            errs.append(
                FieldError.forbidden(
                    "status.certificate", "updates may not set certificate content"
                )
            )
        elif _certificate(old):
            errs.append(
                FieldError.forbidden(
                    "status.certificate", "updates may not modify existing certificate content"
                )
            )
    return errs


def validate_csr(obj: Obj) -> list[FieldError]:
    """ValidateCertificateSigningRequestCreate."""
    return _validate(obj, _options(obj, None))


def validate_csr_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCertificateSigningRequestUpdate: neither approval nor the certificate."""
    return _validate_update(obj, old, _options(obj, old))


def validate_csr_status_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCertificateSigningRequestStatusUpdate: /status may set the certificate."""
    return _validate_update(obj, old, _options(obj, old, set_certificate=True))


def validate_csr_approval_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCertificateSigningRequestApprovalUpdate: /approval may approve or deny."""
    return _validate_update(obj, old, _options(obj, old, set_approval=True))
