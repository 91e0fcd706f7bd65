"""Service accounts and RBAC in a development cluster: the controllers kube-controller-manager
runs for them (root CA, token Secrets, role aggregation), pods' projected tokens, secure
metrics, and kubeconfigs for other users."""

from __future__ import annotations

import asyncio
import base64
import copy
import re
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubeforge import Client
from kubeforge._client.auth import StaticToken
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import Forbidden, Unauthorized
from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import Kubectl, TestEnv, eventually

CLUSTER_ROLE = "rbac.authorization.k8s.io/v1/ClusterRole"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "app", "namespace": "default"},
    "spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]},
}


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=()) as started:
        yield started


def token_client(env: TestEnv, token: str, ca: bytes | None = None) -> Client:
    assert env.config is not None
    config = ClusterConfig(
        server=env.config.server, ca_data=ca or env.config.ca_data, credentials=StaticToken(token)
    )
    return Client(config)


async def who(client: Client) -> dict[str, Any]:
    review: dict[str, Any] = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = await client.create(review)
    return dict(answer["status"]["userInfo"])


async def test_every_namespace_gets_the_root_ca_configmap(env: TestEnv) -> None:
    assert env.cluster is not None
    ca = env.cluster.server.ca_pem.decode()
    await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})

    async def published() -> bool:
        found = await env.client.list("v1/ConfigMap", namespace="team")
        return any(
            c["metadata"]["name"] == "kube-root-ca.crt" and c["data"] == {"ca.crt": ca}
            for c in found
        )

    await eventually(published)
    await env.client.delete("v1/ConfigMap", "kube-root-ca.crt", namespace="team")
    await eventually(published, message="kube-root-ca.crt comes back")


async def test_aggregated_roles_collect_the_rules_of_labelled_roles(env: TestEnv) -> None:
    async def rules(name: str) -> list[dict[str, Any]]:
        return list((await env.client.get(CLUSTER_ROLE, name)).get("rules") or [])

    async def view_reads_pods() -> bool:
        return any(
            "pods" in r.get("resources", []) and "list" in r["verbs"] for r in await rules("view")
        )

    await eventually(view_reads_pods)
    widgets = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
    await env.client.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "widget-viewer",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            },
            "rules": [widgets],
        }
    )

    async def everywhere() -> bool:
        return all([widgets in await rules(name) for name in ("view", "edit", "admin")])

    await eventually(everywhere, message="view, edit and admin aggregate the new role")
    assert not any("secrets" in r.get("resources", []) for r in await rules("view"))
    assert any("secrets" in r.get("resources", []) for r in await rules("edit"))
    await env.client.patch(
        CLUSTER_ROLE,
        "widget-viewer",
        {"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-view": None}}},
    )

    async def removed() -> bool:
        return widgets not in await rules("view")

    await eventually(removed)


async def test_pods_get_their_service_account_token_and_it_works(env: TestEnv) -> None:
    assert env.cluster is not None
    created = await env.client.create(copy.deepcopy(POD))
    spec = created["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[a-z0-9]{5}", volume["name"])
    sources = volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["path"] == "namespace"
    assert volume["projected"]["defaultMode"] == 420
    assert spec["containers"][0]["volumeMounts"] == [
        {
            "name": volume["name"],
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
    ]

    node = env.cluster.nodes[0]

    def mounted() -> dict[str, bytes]:
        return node.volume_files("default", "app").get(volume["name"], {})

    files = await eventually(mounted)
    assert files["namespace"] == b"default"
    assert files["ca.crt"] == env.cluster.server.ca_pem
    async with token_client(env, files["token"].decode(), files["ca.crt"]) as in_pod:
        me = await who(in_pod)
        assert me["username"] == "system:serviceaccount:default:default"
        assert me["extra"]["authentication.kubernetes.io/pod-name"] == ["app"]
        assert me["extra"]["authentication.kubernetes.io/node-name"] == [node.name]
        with pytest.raises(Forbidden):
            await in_pod.list("v1/Secret", namespace="default")
        await env.client.delete("v1/Pod", "app", namespace="default", grace_period_seconds=0)

        async def rejected() -> bool:
            try:
                await who(in_pod)
            except Unauthorized:
                return True
            return False

        await eventually(rejected, message="the token ends with its pod")


async def test_pod_admission_needs_the_account_and_respects_automount(env: TestEnv) -> None:
    missing = {**POD, "spec": {**POD["spec"], "serviceAccountName": "ghost"}}
    with pytest.raises(Forbidden) as refused:
        await env.client.create(missing)
    assert str(refused.value).endswith(
        'pods "app" is forbidden: error looking up service account default/ghost: '
        'serviceaccount "ghost" not found'
    )
    await env.client.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "puller"},
            "automountServiceAccountToken": False,
            "imagePullSecrets": [{"name": "registry"}],
        },
        namespace="default",
    )
    quiet = {**POD, "spec": {**POD["spec"], "serviceAccountName": "puller"}}
    created = await env.client.create(quiet)
    assert "volumes" not in created["spec"] or created["spec"]["volumes"] == []
    assert created["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    # The pod's own setting wins over the account's.
    loud = {
        **POD,
        "metadata": {"name": "loud", "namespace": "default"},
        "spec": {
            **POD["spec"],
            "serviceAccountName": "puller",
            "automountServiceAccountToken": True,
        },
    }
    assert (await env.client.create(loud))["spec"]["volumes"][0]["name"].startswith(
        "kube-api-access-"
    )


async def test_the_cluster_answers_anonymous_requests_as_a_cluster_does(env: TestEnv) -> None:
    assert env.config is not None and env.config.ca_data is not None
    ctx = ssl.create_default_context(cadata=env.config.ca_data.decode())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as http:
        async with http.get(env.config.server + "/version") as r:
            assert r.status == 200
        async with http.get(env.config.server + "/api/v1/namespaces") as r:
            assert r.status == 403
            body = await r.json()
            assert body["message"] == (
                'namespaces is forbidden: User "system:anonymous" cannot list resource '
                '"namespaces" in API group "" at the cluster scope'
            )


async def test_token_secrets_are_filled_and_end_with_the_secret(env: TestEnv) -> None:
    assert env.cluster is not None
    await env.client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}},
        namespace="default",
    )
    await env.client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": "builder-token",
                "annotations": {"kubernetes.io/service-account.name": "builder"},
            },
        },
        namespace="default",
    )

    async def filled() -> dict[str, Any] | None:
        secret = await env.client.get("v1/Secret", "builder-token", namespace="default")
        return secret if (secret.get("data") or {}).get("token") else None

    secret = await eventually(filled)
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert data["ca.crt"] == env.cluster.server.ca_pem
    assert data["namespace"] == b"default"
    account = await env.client.get("v1/ServiceAccount", "builder", namespace="default")
    annotations = secret["metadata"]["annotations"]
    assert annotations["kubernetes.io/service-account.uid"] == account["metadata"]["uid"]
    async with token_client(env, data["token"].decode()) as builder:
        assert (await who(builder))["username"] == "system:serviceaccount:default:builder"
        await env.client.delete("v1/Secret", "builder-token", namespace="default")
        with pytest.raises(Unauthorized):
            await who(builder)


async def account_token(env: TestEnv, name: str) -> str:
    """A new ServiceAccount `name` in default, and a token for it (TokenRequest)."""
    await env.client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        namespace="default",
    )
    token_request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    reply = await env.client.create_subresource(
        "v1/ServiceAccount", name, "token", token_request, namespace="default"
    )
    return str(reply["status"]["token"])


async def test_secure_metrics_need_an_authorized_token(env: TestEnv, tmp_path: Path) -> None:
    token = await account_token(env, "scraper")
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    async with (
        env.run_manager(metrics_bind_address="127.0.0.1:0", secure_metrics=True) as manager,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=insecure)) as http,
    ):
        host, port = manager.bound["metrics"]
        url = f"https://{host}:{port}/metrics"

        async def get(headers: dict[str, str]) -> tuple[int, str]:
            async with http.get(url, headers=headers) as r:
                return r.status, await r.text()

        assert (await get({}))[0] == 401
        assert (await get({"Authorization": "Bearer not-a-token"}))[0] == 401
        status, text = await get({"Authorization": f"Bearer {token}"})
        assert (status, text.strip()) == (
            403,
            "Authorization denied for user system:serviceaccount:default:scraper",
        )
        await env.client.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            }
        )
        await env.client.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "scraper-reads-metrics"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "metrics-reader",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": "scraper", "namespace": "default"},
                    {"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"},
                ],
            }
        )
        admin = env.cluster.server.token if env.cluster is not None else ""
        status, text = await get({"Authorization": f"Bearer {admin}"})
        assert status == 200
        assert "controller_runtime" in text or "workqueue" in text or "rest_client" in text
        # A scraper that is no administrator, only bound to metrics-reader. (A new account:
        # the manager remembers the refusal of `scraper` for ten seconds.)
        reader = await account_token(env, "prometheus")
        status, text = await get({"Authorization": f"Bearer {reader}"})
        assert status == 200, text
        assert "controller_runtime" in text or "workqueue" in text or "rest_client" in text


async def test_dev_kubeconfig_mints_a_user(tmp_path: Path) -> None:
    async with DevCluster(credentials_dir=tmp_path / "credentials") as cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kubeforge._cli.main",
            "dev",
            "kubeconfig",
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
            "--user",
            "alice",
            "--group",
            "team-a",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, out.decode()
        written = tmp_path / "kubeconfig-alice"
        doc = yaml.safe_load(written.read_text())
        assert "client-certificate-data" in doc["users"][0]["user"]
        assert oct(written.stat().st_mode & 0o777) == "0o600"
        kubectl = Kubectl(written, cache_dir=tmp_path / "cache")
        whoami = await kubectl.run("auth", "whoami", "-o", "json")
        info = whoami.json()["status"]["userInfo"]
        assert info == {"username": "alice", "groups": ["team-a", "system:authenticated"]}
