"""Context resolution checked against kubectl, and a configuration used against a live server."""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from kubeforge._apiserver.tls import ServingCertificates, generate_certificates
from kubeforge._client import config as config_module
from kubeforge._client.config import ClusterConfig, ConfigError, load_config, load_kubeconfig
from kubeforge.apiserver import APIServer
from kubeforge.testing import find_kubectl

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def pki() -> ServingCertificates:
    return generate_certificates()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, no KUBECONFIG and no cluster around, for kubectl and for us."""
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(directory))
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    return directory


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", **doc}))
    return path


def named(kind: str, entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, kind: body} for name, body in entries.items()]


def kubectl_view(context: str | None) -> dict[str, Any]:
    """`kubectl config view --minify --flatten` with this process's KUBECONFIG and HOME."""
    args = [find_kubectl(), "config", "view", "--minify", "--flatten", "-o", "json"]
    if context:
        args += ["--context", context]
    proc = subprocess.run(args, capture_output=True, timeout=60, check=False, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr.decode()
    view: dict[str, Any] = orjson.loads(proc.stdout)
    return view


def kubectl_fails(context: str | None) -> str:
    args = [find_kubectl(), "config", "view", "--minify", "-o", "json"]
    if context:
        args += ["--context", context]
    proc = subprocess.run(args, capture_output=True, timeout=60, check=False, env=dict(os.environ))
    assert proc.returncode != 0
    return proc.stderr.decode()


def kubectl_resolution(view: dict[str, Any]) -> tuple[Any, ...]:
    """(context, server, namespace, token, CA, client cert) as kubectl resolved them."""
    context = view["contexts"][0]["context"]
    cluster = view["clusters"][0]["cluster"]
    user = (view.get("users") or [{"user": {}}])[0]["user"]
    ca = cluster.get("certificate-authority-data")
    cert = user.get("client-certificate-data")
    return (
        view["current-context"],
        cluster["server"].rstrip("/"),
        context.get("namespace") or "default",
        user.get("token"),
        base64.b64decode(ca) if ca else None,
        base64.b64decode(cert) if cert else None,
    )


def our_resolution(context: str | None) -> tuple[Any, ...]:
    cfg = load_config(context=context)
    token = asyncio.run(cfg.credentials.token()) if cfg.credentials is not None else None
    return (cfg.context, cfg.server, cfg.namespace, token, cfg.ca_data, cfg.client_cert_data)


def overlapping(root: Path, pki: ServingCertificates) -> tuple[list[Path], list[str]]:
    """Three files sharing names, one missing, relative paths in a second directory."""
    first = write(
        root / "first" / "config",
        {
            "clusters": named(
                "cluster",
                {
                    "shared": {"server": "https://first.example:6443/"},
                    "first-only": {"server": "https://first-only.example"},
                },
            ),
            "users": named("user", {"shared": {"token": "first-token"}}),
            "contexts": named(
                "context",
                {
                    "shared": {"cluster": "shared", "user": "shared", "namespace": "first-ns"},
                    "first-ctx": {"cluster": "first-only", "user": "shared"},
                },
            ),
        },
    )
    (root / "second" / "pki").mkdir(parents=True)
    (root / "second" / "pki" / "ca.crt").write_bytes(pki.ca_pem)
    (root / "second" / "pki" / "client.crt").write_bytes(pki.cert_pem)
    (root / "second" / "pki" / "client.key").write_bytes(pki.key_pem)
    second = write(
        root / "second" / "config",
        {
            "clusters": named(
                "cluster",
                {
                    "shared": {"server": "https://second.example:6443"},
                    "second-only": {
                        "server": "https://second-only.example:443",
                        "certificate-authority": "pki/ca.crt",
                    },
                },
            ),
            "users": named(
                "user",
                {
                    "shared": {"token": "second-token"},
                    "cert-user": {
                        "client-certificate": "pki/client.crt",
                        "client-key": "pki/client.key",
                    },
                },
            ),
            "contexts": named(
                "context",
                {
                    "shared": {"cluster": "second-only", "user": "cert-user"},
                    "second-ctx": {
                        "cluster": "second-only",
                        "user": "cert-user",
                        "namespace": "second-ns",
                    },
                    "mixed": {"cluster": "shared", "user": "shared", "namespace": "mixed-ns"},
                    "anonymous": {"cluster": "second-only"},
                },
            ),
            "current-context": "second-ctx",
        },
    )
    third = write(
        root / "third" / "config",
        {
            "contexts": named("context", {"mixed": {"cluster": "first-only"}}),
            "current-context": "mixed",
        },
    )
    files = [first, root / "missing" / "config", second, third]
    return files, ["shared", "first-ctx", "second-ctx", "mixed", "anonymous"]


def test_overlapping_files_resolve_like_kubectl(
    home: Path, tmp_path: Path, pki: ServingCertificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, contexts = overlapping(tmp_path, pki)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, files)))
    for context in [None, *contexts]:
        assert our_resolution(context) == kubectl_resolution(kubectl_view(context)), context


def test_file_order_decides_like_kubectl(
    home: Path, tmp_path: Path, pki: ServingCertificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, contexts = overlapping(tmp_path, pki)
    # Reversed: the third file now sets current-context first and owns "mixed".
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, reversed(files))))
    for context in [None, *contexts]:
        assert our_resolution(context) == kubectl_resolution(kubectl_view(context)), context


def test_relative_kubeconfig_paths_resolve_like_kubectl(
    home: Path, tmp_path: Path, pki: ServingCertificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, _ = overlapping(tmp_path, pki)
    # KUBECONFIG itself relative, read from another working directory.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    relative = [os.path.relpath(f, elsewhere) for f in files]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(relative))
    ours = our_resolution("second-ctx")
    assert ours == kubectl_resolution(kubectl_view("second-ctx"))
    assert ours[4] == pki.ca_pem
    assert ours[5] == pki.cert_pem


def test_home_config_like_kubectl(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        home / ".kube" / "config",
        {
            "clusters": named("cluster", {"c": {"server": "https://home.example:6443"}}),
            "users": named("user", {"u": {"token": "home-token"}}),
            "contexts": named("context", {"home": {"cluster": "c", "user": "u"}}),
            "current-context": "home",
        },
    )
    assert our_resolution(None) == kubectl_resolution(kubectl_view(None))


def test_unknown_context_fails_like_kubectl(
    home: Path, tmp_path: Path, pki: ServingCertificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, _ = overlapping(tmp_path, pki)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, files)))
    assert "nope" in kubectl_fails("nope")
    with pytest.raises(ConfigError, match='context "nope" does not exist'):
        load_config(context="nope")


# -- against a live server -------------------------------------------------------------------


async def get_version(cfg: ClusterConfig, **kwargs: Any) -> int:
    headers = {}
    if cfg.credentials is not None:
        token = await cfg.credentials.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
    connector = aiohttp.TCPConnector(ssl=cfg.ssl_context())
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(cfg.server + "/version", headers=headers, **kwargs) as response,
    ):
        if response.status == 200:
            assert (await response.json())["major"] == "1"
        return response.status


async def test_kubeconfig_of_a_live_server(server: APIServer, tmp_path: Path) -> None:
    cfg = load_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig", context="live"))
    assert cfg.context == "live"
    assert cfg.server == server.url
    assert await get_version(cfg) == 200


async def test_tls_server_name_against_a_live_server(server: APIServer, tmp_path: Path) -> None:
    doc = server.kubeconfig_dict()
    doc["clusters"][0]["cluster"]["tls-server-name"] = "localhost"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    cfg = load_kubeconfig(path)
    assert cfg.tls_server_name == "localhost"
    assert await get_version(cfg, server_hostname=cfg.tls_server_name) == 200
    # The name is checked against the serving certificate.
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await get_version(cfg, server_hostname="not-the-server.example")


async def test_exec_plugin_against_a_live_server(server: APIServer, tmp_path: Path) -> None:
    token_file = tmp_path / "issued-token"
    token_file.write_text("not-yet-valid")
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os\n"
        "token = open(os.environ['TOKEN_FILE']).read().strip()\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',\n"
        "                  'kind': 'ExecCredential', 'status': {'token': token}}))\n"
    )
    doc = server.kubeconfig_dict()
    doc["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": "TOKEN_FILE", "value": str(token_file)}],
            "interactiveMode": "Never",
        }
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    cfg = load_kubeconfig(path)
    assert await get_version(cfg) == 401
    token_file.write_text(server.token)
    # Cached until the server rejects it: the same bad token is sent again.
    assert await get_version(cfg) == 401
    assert cfg.credentials is not None
    cfg.credentials.invalidate()
    assert await get_version(cfg) == 200


async def test_incluster_against_a_live_server(
    server: APIServer, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(server.token)
    (account / "ca.crt").write_bytes(server.ca_pem)
    (account / "namespace").write_text("operators")
    monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_DIR", str(account))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", server.config.host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.port))
    cfg = load_config()
    assert cfg.server == server.url
    assert cfg.namespace == "operators"
    assert isinstance(cfg.ssl_context(), ssl.SSLContext)
    assert await get_version(cfg) == 200
