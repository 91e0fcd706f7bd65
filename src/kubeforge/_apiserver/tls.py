"""The API server's credentials: a CA and serving certificate kept in its credentials
directory. Generating them is `kubeforge._api.machinery.certificates`, shared with the
webhook tooling."""

from __future__ import annotations

from pathlib import Path

from kubeforge._api.machinery.certificates import (
    ServingCertificates,
    client_certificate,
    generate_certificates,
)

__all__ = [
    "ServingCertificates",
    "client_certificate",
    "generate_certificates",
    "load_or_generate",
]


def load_or_generate(directory: Path, hosts: tuple[str, ...]) -> ServingCertificates:
    """Certificates kept in `directory` (created there on first use), so a server restarted on
    the same state keeps the credentials its kubeconfig names."""
    files = [directory / name for name in ("ca.crt", "tls.crt", "tls.key", "ca.key")]
    if all(f.exists() for f in files):
        ca, cert, key, ca_key = (f.read_bytes() for f in files)
        return ServingCertificates(ca, cert, key, ca_key)
    certs = generate_certificates(hosts)
    directory.mkdir(parents=True, exist_ok=True)
    contents = (certs.ca_pem, certs.cert_pem, certs.key_pem, certs.ca_key_pem)
    for f, data in zip(files, contents, strict=True):
        f.write_bytes(data)
    files[2].chmod(0o600)
    files[3].chmod(0o600)
    return certs
