"""CertificateSigningRequests: who asked, approval through /approval, the checks of the
certificate admission plugins, and the dev cluster's kube-apiserver-client signer."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from kubeforge._api.machinery.certificates import user_subject
from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import eventually
from tests.support import RBAC, HTTPClient, bind, grant, kubectl_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
AS_ALICE = {"Impersonate-User": "alice"}


def request_pem(user: str, groups: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A PKCS#10 request for `user` in `groups`, and its private key (both PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(user_subject(user, groups))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return csr.public_bytes(serialization.Encoding.PEM), key_pem


def csr_object(
    name: str, request: bytes, signer: str = CLIENT_SIGNER, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(request).decode(),
            "signerName": signer,
            "usages": ["client auth"],
            **spec,
        },
    }


def causes(reply: Any) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in reply.json()["details"]["causes"]]


async def test_the_requester_is_recorded_from_the_request(http: HTTPClient) -> None:
    request, _ = request_pem("bob")
    body = csr_object("bob", request, username="mallory", groups=["system:masters"])
    admin_alice = {**AS_ALICE, "Impersonate-Group": "system:masters"}
    created = await http.post(CSRS, body, headers=admin_alice)
    assert created.status == 201, created.body
    spec = created.json()["spec"]
    assert spec["username"] == "alice"
    assert spec["groups"] == ["system:masters", "system:authenticated"]
    assert created.json()["status"] == {}
    # The object's own update changes neither spec nor status.
    stored = created.json()
    stored["spec"]["usages"] = ["server auth"]
    stored["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    updated = (await http.put(f"{CSRS}/bob", stored)).json()
    assert updated["spec"]["usages"] == ["client auth"]
    assert updated["status"] == {}


async def test_requests_are_validated(http: HTTPClient) -> None:
    request, _ = request_pem("carol")
    bad = csr_object("carol", b"not a request", signer="example", expirationSeconds=60)
    bad["spec"]["usages"] = ["client auth", "flying", "client auth"]
    reply = await http.post(CSRS, bad)
    assert reply.status == 422
    found = causes(reply)
    assert found[0].startswith("spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74,")
    assert found[0].endswith("PEM block type must be CERTIFICATE REQUEST")
    assert found[1].startswith('spec.usages[1]: Unsupported value: "flying": supported values: ')
    assert found[2:] == [
        'spec.usages[2]: Duplicate value: "client auth"',
        'spec.signerName: Invalid value: "example": must be a fully qualified domain and path '
        "of the form 'example.com/signer-name'",
        "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 "
        "seconds (10 minutes)",
    ]
    legacy = await http.post(CSRS, csr_object("legacy", request, "kubernetes.io/legacy-unknown"))
    assert causes(legacy) == [
        'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName '
        "is not allowed via this API version"
    ]


async def test_nobody_asks_the_client_signer_for_system_masters(http: HTTPClient) -> None:
    request, _ = request_pem("root", ("system:masters",))
    reply = await http.post(CSRS, csr_object("root", request))
    assert reply.status == 403
    assert reply.json()["message"] == (
        'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    )
    # Another signer may be asked; requests can be selected by signer.
    other = await http.post(CSRS, csr_object("root", request, "example.com/internal"))
    assert other.status == 201
    selected = await http.get(f"{CSRS}?fieldSelector=spec.signerName%3Dexample.com%2Finternal")
    assert [i["metadata"]["name"] for i in selected.json()["items"]] == ["root"]
    none = await http.get(f"{CSRS}?fieldSelector=spec.signerName%3D{CLIENT_SIGNER}")
    assert none.json()["items"] == []


def _approval(csr: dict[str, Any], kind: str = "Approved") -> dict[str, Any]:
    condition = {"type": kind, "status": "True", "reason": "Checked", "message": "fine"}
    csr["status"] = {"conditions": [condition]}
    return csr


async def test_approval_needs_the_approve_verb_on_the_signer(http: HTTPClient) -> None:
    request, _ = request_pem("dave")
    csr = (await http.post(CSRS, csr_object("dave", request))).json()
    # Alice may write the approval subresource, but may not approve for any signer yet.
    rules = [
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"],
            "verbs": ["get", "update", "patch"],
        }
    ]
    role = await grant(http, "alice", rules)
    refused = await http.put(f"{CSRS}/dave/approval", _approval(csr), headers=AS_ALICE)
    assert refused.status == 403
    assert refused.json()["message"] == (
        'certificatesigningrequests.certificates.k8s.io "dave" is forbidden: user not permitted '
        'to approve requests with signerName "kubernetes.io/kube-apiserver-client"'
    )
    # `approve` on every signer of the domain is enough.
    current = (await http.get(f"{RBAC}/clusterroles/{role}")).json()
    current["rules"].append(
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["signers"],
            "resourceNames": ["kubernetes.io/*"],
            "verbs": ["approve"],
        }
    )
    assert (await http.put(f"{RBAC}/clusterroles/{role}", current)).status == 200
    approved = await http.put(f"{CSRS}/dave/approval", _approval(csr), headers=AS_ALICE)
    assert approved.status == 200, approved.body
    [condition] = approved.json()["status"]["conditions"]
    assert condition["type"] == "Approved"
    assert condition["lastUpdateTime"] and condition["lastTransitionTime"]


async def test_approval_and_status_each_change_their_own_part(http: HTTPClient) -> None:
    request, _ = request_pem("erin")
    csr = (await http.post(CSRS, csr_object("erin", request))).json()
    # /status may not approve ...
    refused = await http.put(f"{CSRS}/erin/status", _approval(dict(csr)))
    assert refused.status == 422
    assert causes(refused) == [
        'status.conditions: Forbidden: updates may not add a condition of type "Approved"'
    ]
    # ... and /approval may not issue a certificate (it is dropped) nor change the request.
    approval = _approval(dict(csr))
    approval["status"]["certificate"] = base64.b64encode(b"junk").decode()
    approval["spec"]["usages"] = ["server auth"]
    approved = (await http.put(f"{CSRS}/erin/approval", approval)).json()
    assert "certificate" not in approved["status"]
    assert approved["spec"]["usages"] == ["client auth"]
    # Approved and Denied exclude each other, and an approval stays.
    approved["status"]["conditions"].append({"type": "Denied", "status": "True"})
    both = await http.put(f"{CSRS}/erin/approval", approved)
    assert causes(both) == [
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions '
        "are mutually exclusive"
    ]
    approved["status"]["conditions"] = []
    removed = await http.put(f"{CSRS}/erin/approval", approved)
    assert causes(removed) == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Approved"'
    ]
    # /status takes a certificate only when it is one.
    current = (await http.get(f"{CSRS}/erin")).json()
    current["status"]["certificate"] = base64.b64encode(b"junk").decode()
    junk = await http.put(f"{CSRS}/erin/status", current)
    assert causes(junk) == [
        'status.certificate: Invalid value: "<certificate data>": must contain at least one '
        "CERTIFICATE PEM block"
    ]


async def test_signing_needs_the_sign_verb(http: HTTPClient) -> None:
    request, _ = request_pem("frank")
    csr = (await http.post(CSRS, csr_object("frank", request))).json()
    rules = [
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests/status"],
            "verbs": ["update"],
        }
    ]
    await grant(http, "alice", rules)
    cert = http.server.user_kubeconfig_dict("frank")["users"][0]["user"]
    csr["status"] = {"certificate": cert["client-certificate-data"]}
    reply = await http.put(f"{CSRS}/frank/status", csr, headers=AS_ALICE)
    assert reply.status == 403
    assert "user not permitted to sign requests with signerName" in reply.json()["message"]


@pytest.mark.parametrize("version", ["1.33", "1.29"])
async def test_kubectl_approve_and_the_issued_certificate_authenticates(
    tmp_path: Path, version: str
) -> None:
    async with DevCluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        kc = kubectl_for(kubeconfig, tmp_path / "cache", version)
        request, key = request_pem("grace", ("developers",))
        manifest = tmp_path / "csr.yaml"
        manifest.write_text(yaml.safe_dump(csr_object("grace", request, expirationSeconds=3600)))
        await kc.run("create", "-f", str(manifest))
        rows = (await kc.run("get", "csr", "grace")).rows()
        assert rows[0][:1] == ["NAME"] and rows[1][-1] == "Pending"
        assert rows[1][3] == "kubeforge-admin" and rows[1][4] == "60m"

        out = (await kc.run("certificate", "approve", "grace")).out
        assert "certificatesigningrequest.certificates.k8s.io/grace approved" in out

        async def issued() -> str:
            got = await kc.json("get", "csr", "grace")
            certificate = got.get("status", {}).get("certificate")
            assert certificate, got.get("status")
            return str(certificate)

        certificate = base64.b64decode(await eventually(issued, timeout=30))
        parsed = x509.load_pem_x509_certificate(certificate)
        assert parsed.subject.rfc4514_string() == "CN=grace,O=developers"
        usage = parsed.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
        lifetime = parsed.not_valid_after_utc - parsed.not_valid_before_utc
        assert lifetime.total_seconds() == pytest.approx(3600 + 300, abs=5)
        assert (await kc.run("get", "csr", "grace")).rows()[1][-1] == "Approved,Issued"

        # The certificate and its key authenticate grace, in her groups.
        config = cluster.kubeconfig_dict()
        config["users"][0]["user"] = {
            "client-certificate-data": base64.b64encode(certificate).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        }
        grace_config = tmp_path / "grace"
        grace_config.write_text(yaml.safe_dump(config))
        grace = kubectl_for(grace_config, tmp_path / "cache", version)
        who = await grace.json("auth", "whoami")
        info = who["status"]["userInfo"]
        assert info["username"] == "grace"
        assert "developers" in info["groups"]

        # A denied request is never signed.
        request, _ = request_pem("heidi")
        manifest.write_text(yaml.safe_dump(csr_object("heidi", request)))
        await kc.run("create", "-f", str(manifest))
        out = (await kc.run("certificate", "deny", "heidi")).out
        assert "denied" in out
        assert (await kc.run("get", "csr", "heidi")).rows()[1][-1] == "Denied"


async def test_requests_with_client_usages_missing_fail(tmp_path: Path) -> None:
    async with DevCluster() as cluster:
        client = cluster.client
        assert client is not None
        request, _ = request_pem("ivan")
        body = csr_object("ivan", request)
        body["spec"]["usages"] = ["server auth"]
        await client.create(body)
        csr = await client.get("certificates.k8s.io/v1/CertificateSigningRequest", "ivan")
        csr["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        await client.update(csr, subresource="approval")

        async def failed() -> dict[str, Any]:
            got = await client.get("certificates.k8s.io/v1/CertificateSigningRequest", "ivan")
            kinds = {c["type"]: c for c in got["status"].get("conditions", [])}
            assert "Failed" in kinds
            return dict(got)

        got = await eventually(failed, timeout=30)
        failure = next(c for c in got["status"]["conditions"] if c["type"] == "Failed")
        assert failure["reason"] == "SignerValidationFailure"
        assert failure["message"] == "invalid usage for client certificate: server auth"
        assert "certificate" not in got["status"]


async def test_the_bootstrap_approver_role_lets_its_holder_approve(http: HTTPClient) -> None:
    request, _ = request_pem("frank")
    csr = (await http.post(CSRS, csr_object("frank", request))).json()
    approver = "system:certificates.k8s.io:kube-apiserver-client-approver"
    role = (await http.get(f"{RBAC}/clusterroles/{approver}")).json()
    assert role["rules"] == [
        {
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["signers"],
            "resourceNames": [CLIENT_SIGNER],
            "verbs": ["approve"],
        }
    ]
    # The signer role alone is not enough: the approval subresource must be writable too.
    writes_approvals = {
        "apiGroups": ["certificates.k8s.io"],
        "resources": ["certificatesigningrequests/approval"],
        "verbs": ["update"],
    }
    await grant(http, "alice", [writes_approvals])
    await bind(http, "alice-approves-clients", approver, "alice")
    approved = await http.put(f"{CSRS}/frank/approval", _approval(csr), headers=AS_ALICE)
    assert approved.status == 200, approved.body
    # Another signer's requests stay out of reach.
    other = csr_object("gina", request_pem("gina")[0], signer="example.com/other")
    other_csr = (await http.post(CSRS, other)).json()
    refused = await http.put(f"{CSRS}/gina/approval", _approval(other_csr), headers=AS_ALICE)
    assert refused.status == 403
