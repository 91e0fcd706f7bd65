"""Throwaway certificate authorities: a CA, a serving certificate it signs, client certificates.

The one home of certificate generation (the `cryptography` package): the API server's
credentials, the webhook server's certificate when webhooks are served from this machine
(`kubeforge run`, TestEnv), the self-signed certificate of secure metrics. Generation is
pure computation. Building an SSL context from the result is the exception to this package's
no-I/O rule, and a small one: Python's `ssl` loads a key only from a file, so the key passes
through an anonymous memory file (Linux) or else a private temporary directory removed at once.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "EXTENDED_USAGES",
    "KEY_USAGES",
    "ServingCertificates",
    "client_certificate",
    "generate_certificates",
    "load_chain_from_memory",
    "sign_certificate_request",
    "user_subject",
]


@dataclass(frozen=True)
class ServingCertificates:
    """PEM-encoded CA certificate, serving certificate and its private key, and the CA's
    key (which signs client certificates)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes = b""

    def server_context(self, *, client_certificates: bool = True) -> ssl.SSLContext:
        """An SSL context that serves the certificate (see load_chain_from_memory) and,
        unless `client_certificates` is off, asks clients for a certificate signed by the CA
        without requiring one: a client certificate authenticates its user, as
        kube-apiserver's --client-ca-file does."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        if client_certificates:
            ctx.load_verify_locations(cadata=self.ca_pem.decode())
            ctx.verify_mode = ssl.CERT_OPTIONAL
        load_chain_from_memory(ctx, self.cert_pem + self.ca_pem, self.key_pem)
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """An SSL context that trusts only this CA."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def load_chain_from_memory(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a PEM certificate chain and key made in memory. `ssl` reads them only from files:
    on Linux, anonymous memory files (memfd), which need no writable directory (the manager's
    pod has a read-only root filesystem); elsewhere a private temporary directory."""
    if hasattr(os, "memfd_create"):
        fds: list[int] = []
        try:
            for data in (cert, key):
                fd = os.memfd_create("kubeforge-tls", 0)
                fds.append(fd)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            ctx.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
            return
        except OSError:
            pass  # no /proc: fall back to files
        finally:
            for fd in fds:
                os.close(fd)
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert_path.write_bytes(cert)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key)
        ctx.load_cert_chain(cert_path, key_path)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate_certificates(
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1"),
    days: int = 365,
    *,
    common_name: str = "kubeforge-apiserver",
) -> ServingCertificates:
    """Create a CA and a serving certificate valid for `hosts` (IP addresses or DNS names),
    named `common_name`.

    Elliptic-curve keys keep generation to a few milliseconds, so every server start (and
    every test environment) gets fresh credentials. Dated by the machine's clock, which is
    what TLS checks them against.
    """
    now = dt.datetime.now(dt.UTC)
    start = now - dt.timedelta(minutes=5)  # tolerate small clock differences
    end = now + dt.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kubeforge-ca")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):  # once each, in order
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificates(
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=_key_pem(key),
        ca_key_pem=_key_pem(ca_key),
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


# The usages a CertificateSigningRequest or a cert-manager Certificate may ask for (both APIs
# name the same list), as X.509 key usages (KeyUsage's fields) and extended key usages; the
# table of k8s.io/client-go/util/cert, which the controller manager's signer uses too.
KEY_USAGES: dict[str, str] = {
    "signing": "digital_signature",
    "digital signature": "digital_signature",
    "content commitment": "content_commitment",
    "key encipherment": "key_encipherment",
    "key agreement": "key_agreement",
    "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign",
    "crl sign": "crl_sign",
    "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}
EXTENDED_USAGES: dict[str, x509.ObjectIdentifier] = {
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1"),
}
# Issued certificates start this long ago, so clocks a little behind accept them at once.
_BACKDATE = dt.timedelta(minutes=5)


def user_subject(user: str, groups: tuple[str, ...] = ()) -> x509.Name:
    """The subject kube reads a user from: one O for each group, then the user as CN."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    return x509.Name(attributes)


def _signing_ca(
    certs: ServingCertificates, what: str
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """The CA's key and certificate, to sign `what` with."""
    if not certs.ca_key_pem:
        raise ValueError(f"the CA's private key is not available to sign {what}")
    ca_key = serialization.load_pem_private_key(certs.ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("unexpected CA key type")
    return ca_key, x509.load_pem_x509_certificate(certs.ca_pem)


def _signed(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
    subject: x509.Name,
    public_key: CertificatePublicKeyTypes,
    usages: list[str],
    lifetime: dt.timedelta,
    names: x509.SubjectAlternativeName | None = None,
) -> bytes:
    """A leaf certificate the CA signs, PEM-encoded: backdated a little, never valid past
    the CA's own end, with the given usages (see KEY_USAGES, EXTENDED_USAGES) and names.
    Dated by the machine's clock, which is what TLS checks them against."""
    ca_key, ca_cert = ca
    now = dt.datetime.now(dt.UTC)
    flags = dict.fromkeys(set(KEY_USAGES.values()), False)
    for usage in usages:
        if usage in KEY_USAGES:
            flags[KEY_USAGES[usage]] = True
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(min(now + lifetime, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if any(flags.values()):
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    extended = [EXTENDED_USAGES[u] for u in dict.fromkeys(usages) if u in EXTENDED_USAGES]
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    if names is not None:
        builder = builder.add_extension(names, critical=False)
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def client_certificate(
    certs: ServingCertificates, user: str, groups: tuple[str, ...] = (), days: int = 365
) -> tuple[bytes, bytes]:
    """A client certificate for `user` (CN) in `groups` (one O each), signed by the CA:
    (certificate PEM, key PEM)."""
    ca = _signing_ca(certs, "client certificates")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = user_subject(user, groups)
    lifetime = dt.timedelta(days=days)
    return _signed(ca, subject, key.public_key(), ["client auth"], lifetime), _key_pem(key)


def sign_certificate_request(
    certs: ServingCertificates,
    request: x509.CertificateSigningRequest,
    usages: list[str],
    lifetime: dt.timedelta,
) -> bytes:
    """A certificate for `request`, signed by the CA, PEM-encoded: the request's subject,
    names and key, the given usages, valid for `lifetime` (never past the CA's own end).

    As the controller manager's signer does (pkg/controller/certificates/authority): the
    request's own extensions are not copied, and the start is backdated five minutes."""
    ca = _signing_ca(certs, "certificates")
    try:
        names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = None
    return _signed(ca, request.subject, request.public_key(), usages, lifetime, names)
