"""The development cluster's built-in cert-manager subset: issuers, Certificates issued into
their Secrets (self-signed and by a CA), renewal of a lost Secret, and CA injection into
webhook configurations and CRDs."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography import x509

from kubeforge import Client, NotFound
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv, eventually

NS = "default"
CERTIFICATE = "cert-manager.io/v1/Certificate"
ISSUER = "cert-manager.io/v1/Issuer"


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=(), options=ClusterOptions(cert_manager=True)) as env:
        yield env


def issuer(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def certificate(name: str, issuer_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"secretName": f"{name}-tls", "issuerRef": {"name": issuer_name}, **spec},
    }


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    """The Ready condition ({} when there is none yet)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), {})


async def wait_ready(client: Client, kind: str, name: str, status: str = "True") -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def reached() -> bool:
        found.update(await client.get(kind, name, namespace=NS))
        return ready(found).get("status") == status

    await eventually(reached, timeout=15)
    return found


async def secret_data(client: Client, name: str) -> dict[str, bytes]:
    secret = await client.get("v1/Secret", name, namespace=NS)
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


async def test_a_self_signed_certificate_is_issued_into_its_secret(env: TestEnv) -> None:
    client = env.client
    await client.create(issuer("selfsigned", {"selfSigned": {}}))
    names = ["webhook-service.system.svc", "webhook-service.system.svc.cluster.local"]
    await client.create(certificate("serving-cert", "selfsigned", dnsNames=names))
    issued = await wait_ready(client, CERTIFICATE, "serving-cert")
    assert ready(issued) == {
        **ready(issued),
        "reason": "Ready",
        "message": "Certificate is up to date and has not expired",
    }
    status = issued["status"]
    assert status["revision"] == 1
    not_after = dt.datetime.fromisoformat(status["notAfter"])
    not_before = dt.datetime.fromisoformat(status["notBefore"])
    assert not_after - not_before == dt.timedelta(hours=2160)
    renewal = dt.datetime.fromisoformat(status["renewalTime"])
    assert renewal == not_after - dt.timedelta(hours=720)
    assert ready(await client.get(ISSUER, "selfsigned", namespace=NS))["reason"] == "IsReady"

    secret = await client.get("v1/Secret", "serving-cert-tls", namespace=NS)
    assert secret["type"] == "kubernetes.io/tls"
    annotations = secret["metadata"]["annotations"]
    assert annotations["cert-manager.io/certificate-name"] == "serving-cert"
    assert annotations["cert-manager.io/issuer-name"] == "selfsigned"
    assert annotations["cert-manager.io/issuer-kind"] == "Issuer"
    assert annotations["cert-manager.io/alt-names"] == ",".join(names)
    data = await secret_data(client, "serving-cert-tls")
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.DNSName) == names
    assert data["ca.crt"] == data["tls.crt"]  # self-signed: its own CA
    assert b"BEGIN RSA PRIVATE KEY" in data["tls.key"]  # RSA, PKCS#1: cert-manager's default

    # A lost Secret is issued again.
    await client.delete("v1/Secret", "serving-cert-tls", namespace=NS)

    async def reissued() -> bool:
        found = await client.get(CERTIFICATE, "serving-cert", namespace=NS)
        return found["status"].get("revision") == 2

    await eventually(reissued, timeout=15)
    again = await secret_data(client, "serving-cert-tls")
    assert again["tls.crt"] != data["tls.crt"]


async def test_a_ca_issuer_signs_with_the_key_pair_of_its_secret(env: TestEnv) -> None:
    client = env.client
    await client.create(issuer("root", {"selfSigned": {}}))
    ca = certificate(
        "root-ca", "root", isCA=True, commonName="dev root", privateKey={"algorithm": "ECDSA"}
    )
    await client.create(ca)
    await client.create(issuer("ca", {"ca": {"secretName": "root-ca-tls"}}))
    await client.create(certificate("leaf", "ca", dnsNames=["leaf.example.com"]))
    await wait_ready(client, CERTIFICATE, "leaf")
    assert ready(await client.get(ISSUER, "ca", namespace=NS))["message"] == "Signing CA verified"
    root = await secret_data(client, "root-ca-tls")
    leaf = await secret_data(client, "leaf-tls")
    root_cert = x509.load_pem_x509_certificate(root["tls.crt"])
    leaf_cert = x509.load_pem_x509_certificate(leaf["tls.crt"])
    leaf_cert.verify_directly_issued_by(root_cert)
    assert root_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert leaf["ca.crt"] == root["tls.crt"]

    # An issuer whose Secret is missing is not ready, and says why.
    await client.create(issuer("broken", {"ca": {"secretName": "nowhere"}}))
    broken = await wait_ready(client, ISSUER, "broken", "False")
    assert ready(broken)["message"] == (
        'Error getting keypair for CA issuer: secrets "nowhere" not found'
    )
    await client.create(issuer("acme", {"acme": {"server": "https://acme.example.com"}}))
    assert ready(await wait_ready(client, ISSUER, "acme", "False"))["reason"] == "NotSupported"


async def test_a_certificate_waits_for_its_issuer(env: TestEnv) -> None:
    client = env.client
    await client.create(certificate("early", "later", dnsNames=["early.example.com"]))
    waiting = await wait_ready(client, CERTIFICATE, "early", "False")
    assert ready(waiting)["message"] == 'Issuer "later" not found'
    with pytest.raises(NotFound):
        await client.get("v1/Secret", "early-tls", namespace=NS)
    await client.create(issuer("later", {"selfSigned": {}}))
    await wait_ready(client, CERTIFICATE, "early")


async def test_every_usage_cert_manager_names_is_issued(env: TestEnv) -> None:
    # cert-manager's KeyUsage list is the one of CertificateSigningRequests, extended key
    # usages included (some without a name in `cryptography`).
    client = env.client
    await client.create(issuer("selfsigned", {"selfSigned": {}}))
    usages = ["digital signature", "s/mime", "ipsec end system", "ipsec user", "netscape sgc"]
    await client.create(certificate("usages", "selfsigned", commonName="u", usages=usages))
    issued = await wait_ready(client, CERTIFICATE, "usages")
    assert ready(issued)["reason"] == "Ready"
    cert = x509.load_pem_x509_certificate((await secret_data(client, "usages-tls"))["tls.crt"])
    extended = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert [oid.dotted_string for oid in extended] == [
        "1.3.6.1.5.5.7.3.4",  # s/mime is email protection
        "1.3.6.1.5.5.7.3.5",
        "1.3.6.1.5.5.7.3.7",
        "2.16.840.1.113730.4.1",
    ]
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature


async def test_ca_bundles_are_injected_where_the_annotations_say(env: TestEnv) -> None:
    client = env.client
    webhooks = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": "checks",
            "annotations": {"cert-manager.io/inject-ca-from": f"{NS}/serving-cert"},
        },
        "webhooks": [
            {
                "name": f"v{i}.example.com",
                "clientConfig": {"service": {"name": "svc", "namespace": NS, "path": "/v"}},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "resources": ["things"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
            for i in range(2)
        ],
    }
    # Created before its certificate: the bundle arrives once the Secret does.
    await client.create(webhooks)
    await client.create(issuer("selfsigned", {"selfSigned": {}}))
    await client.create(certificate("serving-cert", "selfsigned", dnsNames=["svc.default.svc"]))

    async def injected(name: str, kind: str, path: tuple[Any, ...], expected: bytes) -> bool:
        obj: Any = await client.get(kind, name)
        for step in path:
            obj = obj.get(step, {}) if isinstance(obj, dict) else obj[step]
        return obj == base64.b64encode(expected).decode()

    await wait_ready(client, CERTIFICATE, "serving-cert")
    ca = (await secret_data(client, "serving-cert-tls"))["ca.crt"]
    kind = "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"
    for i in range(2):
        path = ("webhooks", i, "clientConfig", "caBundle")
        await eventually(lambda path=path: injected("checks", kind, path, ca))

    # From a Secret named directly (which must allow it), into a CRD's conversion webhook;
    # and the API server's own CA.
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "bundle",
                "namespace": NS,
                "annotations": {"cert-manager.io/allow-direct-injection": "true"},
            },
            "data": {"ca.crt": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()},
        }
    )
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "things.example.com",
            "annotations": {"cert-manager.io/inject-ca-from-secret": f"{NS}/bundle"},
        },
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"service": {"name": "svc", "namespace": NS, "path": "/c"}},
                },
            },
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": v == "v1",
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for v in ("v1", "v2")
            ],
        },
    }
    await client.create(crd)
    crd_kind = "apiextensions.k8s.io/v1/CustomResourceDefinition"
    conversion = ("spec", "conversion", "webhook", "clientConfig", "caBundle")
    await eventually(
        lambda: injected(
            "things.example.com", crd_kind, conversion, b"-----BEGIN CERTIFICATE-----\n"
        )
    )
    assert env.cluster is not None
    await client.patch(
        kind,
        "checks",
        {"metadata": {"annotations": {
            "cert-manager.io/inject-ca-from": None,
            "cert-manager.io/inject-apiserver-ca": "true",
        }}},
    )  # fmt: skip
    await eventually(
        lambda: injected(
            "checks", kind, ("webhooks", 0, "clientConfig", "caBundle"), env.cluster.server.ca_pem
        )
    )
