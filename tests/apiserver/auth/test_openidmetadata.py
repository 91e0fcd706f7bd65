"""ServiceAccount issuer discovery: a system outside the cluster reads the OpenID documents and
verifies the cluster's tokens with the keys they publish."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import jwt
import pytest

from kubeforge.apiserver import APIServer
from kubeforge.testing import TestEnv
from tests.support import RBAC, cluster_role_binding, connect, rbac_subject

CONFIGURATION = "/.well-known/openid-configuration"
JWKS = "/openid/v1/jwks"
ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=()) as started:
        yield started


async def test_tokens_verify_against_the_published_keys(env: TestEnv) -> None:
    assert env.config is not None and env.config.ca_data is not None
    assert env.cluster is not None
    server = env.config.server
    ctx = ssl.create_default_context(cadata=env.config.ca_data.decode())
    admin = {"Authorization": f"Bearer {env.cluster.server.token}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as http:

        async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            async with http.post(server + path, json=body, headers=admin) as r:
                assert r.status == 201, await r.text()
                answer: dict[str, Any] = await r.json()
                return answer

        await post("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "relier"}})
        issued = await post(
            "/api/v1/namespaces/default/serviceaccounts/relier/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
        token = issued["status"]["token"]
        bearer = {"Authorization": f"Bearer {token}"}

        # Every ServiceAccount may read the documents (system:service-account-issuer-discovery).
        async with http.get(server + CONFIGURATION, headers=bearer) as r:
            assert r.status == 200, await r.text()
            assert r.headers["Content-Type"] == "application/json"
            assert r.headers["Cache-Control"] == "public, max-age=3600"
            configuration = await r.json()
        assert configuration == {
            "issuer": ISSUER,
            "jwks_uri": f"{server}{JWKS}",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        }
        async with http.get(configuration["jwks_uri"], headers=bearer) as r:
            assert r.status == 200, await r.text()
            assert r.headers["Content-Type"] == "application/jwk-set+json"
            assert r.headers["Cache-Control"] == "public, max-age=3600"
            keyset = await r.json(content_type=None)
        (key,) = keyset["keys"]
        assert (key["use"], key["kty"], key["crv"], key["alg"]) == ("sig", "EC", "P-256", "ES256")
        assert set(key) == {"use", "kty", "kid", "crv", "alg", "x", "y"}  # public parts only

        # A relying party picks the key by the token's kid and checks issuer and audience.
        keys = jwt.PyJWKSet.from_dict(keyset)
        kid = jwt.get_unverified_header(token)["kid"]
        (signing,) = [k for k in keys.keys if k.key_id == kid]
        claims = jwt.decode(
            token,
            signing.key,
            algorithms=["ES256"],
            audience=ISSUER,
            issuer=configuration["issuer"],
        )
        assert claims["sub"] == "system:serviceaccount:default:relier"
        # A token altered after signing does not verify.
        forged = token[:-4] + ("BBBB" if token.endswith("AAAA") else "AAAA")
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(forged, signing.key, algorithms=["ES256"], audience=ISSUER)

        # The trailing-slash forms the role names are served too.
        for path in (CONFIGURATION + "/", JWKS + "/"):
            async with http.get(server + path, headers=bearer) as r:
                assert r.status == 200, path
        # Nobody else, unless an administrator binds the role to them.
        async with http.get(server + JWKS) as r:
            assert r.status == 403
            assert (await r.json())["message"] == (
                'forbidden: User "system:anonymous" cannot get path "/openid/v1/jwks"'
            )
        binding = cluster_role_binding(
            "oidc-reviewer",
            "system:service-account-issuer-discovery",
            rbac_subject("Group", "system:unauthenticated"),
        )
        await post(f"{RBAC}/clusterrolebindings", binding)
        async with http.get(server + JWKS) as r:
            assert r.status == 200
            assert await r.json(content_type=None) == keyset
        async with http.post(server + JWKS, json={}, headers=admin) as r:
            assert r.status == 405


async def test_the_bootstrap_role_and_binding_are_kubes() -> None:
    async with APIServer() as server, connect(server) as http:
        role = (
            await http.get(f"{RBAC}/clusterroles/system:service-account-issuer-discovery")
        ).json()
        assert role["rules"] == [
            {
                "nonResourceURLs": [
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                "verbs": ["get"],
            }
        ]
        binding = (
            await http.get(f"{RBAC}/clusterrolebindings/system:service-account-issuer-discovery")
        ).json()
        assert binding["subjects"] == [
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Group",
                "name": "system:serviceaccounts",
            }
        ]
        # The documents name this server's own key set.
        configuration = (await http.get(CONFIGURATION)).json()
        assert configuration["jwks_uri"] == f"https://127.0.0.1:{server.port}{JWKS}"


async def test_an_issuer_that_is_not_an_https_url_publishes_nothing() -> None:
    # kube-apiserver installs the discovery endpoints only for an https issuer.
    async with (
        APIServer(service_account_issuer="kubeforge-issuer") as server,
        connect(server) as http,
    ):
        assert (await http.get(CONFIGURATION)).status == 404
        assert (await http.get(JWKS)).status == 404
    jwks = "https://keys.example.com/jwks"
    async with APIServer(service_account_jwks_uri=jwks) as server, connect(server) as http:
        assert (await http.get(CONFIGURATION)).json()["jwks_uri"] == jwks
