"""Issuing a cert-manager Certificate: a private key and an X.509 certificate for its spec,
signed by itself (a `selfSigned` issuer) or by a CA key pair (a `ca` issuer), with
cert-manager's defaults: an RSA 2048 key in PKCS#1, 90 days of validity renewed when a
third is left, the usages "digital signature" and "key encipherment".
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from kubeforge._api.machinery import timestamps
from kubeforge._api.machinery.certificates import EXTENDED_USAGES, KEY_USAGES

__all__ = ["CertificateError", "Issued", "Signer", "go_duration", "issue", "up_to_date"]

DEFAULT_DURATION = dt.timedelta(hours=2160)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


class CertificateError(Exception):
    """The Certificate's spec cannot be issued; the message says which field."""


@dataclass(frozen=True)
class Signer:
    """A CA key pair (a `ca` issuer's Secret): its certificate and private key, PEM."""

    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True)
class Issued:
    """What goes into the Certificate's Secret, and the validity for its status."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes
    not_before: dt.datetime
    not_after: dt.datetime


def go_duration(text: str) -> dt.timedelta:
    """A Go duration (`2160h`, `1h30m`, `90s`); ValueError when it is not one."""
    text = text.strip()
    if not text or _DURATION_PART.sub("", text):
        raise ValueError(f"invalid duration {text!r}")
    seconds = sum(float(n) * _UNITS[u] for n, u in _DURATION_PART.findall(text))
    return dt.timedelta(seconds=seconds)


def durations(spec: Mapping[str, Any]) -> tuple[dt.timedelta, dt.timedelta]:
    """The Certificate's duration and how long before expiry it is renewed."""
    try:
        duration = go_duration(str(spec["duration"])) if spec.get("duration") else DEFAULT_DURATION
        renew = go_duration(str(spec["renewBefore"])) if spec.get("renewBefore") else duration / 3
    except ValueError as exc:
        raise CertificateError(f"spec.duration or spec.renewBefore: {exc}") from None
    if renew >= duration:
        renew = duration / 3
    return duration, renew


def _private_key(spec: Mapping[str, Any]) -> PrivateKey:
    settings = spec.get("privateKey") or {}
    algorithm = str(settings.get("algorithm") or "RSA")
    size = settings.get("size")
    if algorithm == "RSA":
        bits = int(size or 2048)
        if bits not in (2048, 4096, 8192):
            raise CertificateError(
                f"spec.privateKey.size: RSA keys are 2048, 4096 or 8192 bits, not {bits}"
            )
        return rsa.generate_private_key(public_exponent=65537, key_size=bits)
    if algorithm == "ECDSA":
        curves = {256: ec.SECP256R1(), 384: ec.SECP384R1(), 521: ec.SECP521R1()}
        curve = curves.get(int(size or 256))
        if curve is None:
            raise CertificateError(
                f"spec.privateKey.size: ECDSA keys are 256, 384 or 521 bits, not {size}"
            )
        return ec.generate_private_key(curve)
    if algorithm == "Ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise CertificateError(f"spec.privateKey.algorithm: {algorithm!r} is not RSA, ECDSA or Ed25519")


def _key_pem(key: PrivateKey, encoding: str) -> bytes:
    traditional = encoding != "PKCS8" and not isinstance(key, ed25519.Ed25519PrivateKey)
    fmt = (
        serialization.PrivateFormat.TraditionalOpenSSL
        if traditional
        else serialization.PrivateFormat.PKCS8
    )
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())


def _subject(spec: Mapping[str, Any]) -> x509.Name:
    attributes = []
    if spec.get("commonName"):
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, str(spec["commonName"])))
    for organization in (spec.get("subject") or {}).get("organizations") or ():
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, str(organization)))
    return x509.Name(attributes)


def _alt_names(spec: Mapping[str, Any]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(str(n)) for n in spec.get("dnsNames") or ()]
    for address in spec.get("ipAddresses") or ():
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(str(address))))
        except ValueError:
            raise CertificateError(f"spec.ipAddresses: {address!r} is not an IP address") from None
    names.extend(x509.UniformResourceIdentifier(str(u)) for u in spec.get("uris") or ())
    names.extend(x509.RFC822Name(str(e)) for e in spec.get("emailAddresses") or ())
    return names


def issue(spec: Mapping[str, Any], signer: Signer | None) -> Issued:
    """Issue the certificate `spec` describes: self-signed without a `signer`."""
    subject = _subject(spec)
    alt_names = _alt_names(spec)
    if not subject and not alt_names:
        raise CertificateError(
            "at least one of commonName, dnsNames, uris, ipAddresses or emailAddresses must be set"
        )
    duration, _ = durations(spec)
    key = _private_key(spec)
    is_ca = bool(spec.get("isCA"))
    usages = [str(u) for u in spec.get("usages") or ()]
    if not usages:
        usages = ["digital signature"] + (
            ["key encipherment"] if isinstance(key, rsa.RSAPrivateKey) else []
        )
    if is_ca and "cert sign" not in usages:
        usages.append("cert sign")
    flags = dict.fromkeys(KEY_USAGES.values(), False)
    for usage in usages:
        if usage in KEY_USAGES:
            flags[KEY_USAGES[usage]] = True
        elif usage not in EXTENDED_USAGES:
            raise CertificateError(f"spec.usages: unknown usage {usage!r}")
    extended = [EXTENDED_USAGES[u] for u in usages if u in EXTENDED_USAGES]

    now = timestamps.now()
    if signer is None:
        issuer_name, signing_key = subject, key
    else:
        try:
            ca_cert = x509.load_pem_x509_certificate(signer.cert_pem)
            loaded = serialization.load_pem_private_key(signer.key_pem, password=None)
        except ValueError as exc:
            raise CertificateError(f"the CA's key pair cannot be read: {exc}") from None
        if not isinstance(
            loaded, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
        ):
            raise CertificateError("the CA's private key is not RSA, ECDSA or Ed25519")
        issuer_name, signing_key = ca_cert.subject, loaded
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + duration)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(**flags), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if alt_names:
        # With an empty subject the alternative names are all there is: critical (RFC 5280).
        builder = builder.add_extension(
            x509.SubjectAlternativeName(alt_names), critical=not subject
        )
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    if signer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signing_key.public_key()),
            critical=False,
        )
    algorithm = None if isinstance(signing_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = builder.sign(signing_key, algorithm)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    encoding = str((spec.get("privateKey") or {}).get("encoding") or "PKCS1")
    return Issued(
        cert_pem=cert_pem,
        key_pem=_key_pem(key, encoding),
        # A self-signed certificate is its own CA; a CA issuer's is the CA's certificate.
        ca_pem=cert_pem if signer is None else signer.cert_pem,
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
    )


def up_to_date(
    spec: Mapping[str, Any], tls_crt: bytes, tls_key: bytes, now: dt.datetime
) -> dt.datetime | None:
    """When the certificate in a Secret is due for renewal, or None when it must be issued
    again now: unreadable, not matching the spec or its key, or past its renewal time."""
    try:
        cert = x509.load_pem_x509_certificate(tls_crt)
        key = serialization.load_pem_private_key(tls_key, password=None)
    except ValueError:
        return None
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(
        serialization.Encoding.PEM, public
    ) != cert.public_key().public_bytes(serialization.Encoding.PEM, public):
        return None
    try:
        wanted_names = {repr(n) for n in _alt_names(spec)}
        _, renew_before = durations(spec)
    except CertificateError:
        return None
    try:
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = {repr(n) for n in present}
    except x509.ExtensionNotFound:
        names = set()
    if names != wanted_names or cert.subject != _subject(spec):
        return None
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if is_ca != bool(spec.get("isCA")):
        return None
    renewal = cert.not_valid_after_utc - renew_before
    return None if now >= renewal else renewal
