"""Kubeconfig loading, merging, in-cluster configuration and credential providers."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import ssl
import stat
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubeforge._apiserver.tls import ServingCertificates, generate_certificates
from kubeforge._client import config as config_module
from kubeforge._client.auth import (
    CredentialError,
    ExecPlugin,
    ExecProvider,
    StaticToken,
    TokenFile,
)
from kubeforge._client.config import (
    ClusterConfig,
    ConfigError,
    load_config,
    load_incluster,
    load_kubeconfig,
)
from kubeforge.testing import eventually

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No kubeconfig, no cluster around; HOME is an empty directory."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture(scope="module")
def pki() -> ServingCertificates:
    return generate_certificates()


def kubeconfig(
    path: Path,
    *,
    clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, dict[str, Any]] | None = None,
    current: str | None = None,
) -> Path:
    """Write a kubeconfig file with the given named entries."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
    }
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def simple(path: Path, *, server: str = "https://a.example:6443", **user: Any) -> Path:
    """One cluster/user/context named "a", current."""
    return kubeconfig(
        path,
        clusters={"a": {"server": server}},
        users={"a": user or {"token": "tok-a"}},
        contexts={"a": {"cluster": "a", "user": "a", "namespace": "ns-a"}},
        current="a",
    )


async def token_of(cfg: ClusterConfig) -> str | None:
    assert cfg.credentials is not None
    return await cfg.credentials.token()


# -- one file --------------------------------------------------------------------------------


async def test_single_file_resolves_server_namespace_and_token(tmp_path: Path) -> None:
    cfg = load_kubeconfig(simple(tmp_path / "kc", server="https://a.example:6443/"))
    assert cfg.server == "https://a.example:6443"
    assert cfg.namespace == "ns-a"
    assert cfg.context == "a"
    assert isinstance(cfg.credentials, StaticToken)
    assert await token_of(cfg) == "tok-a"
    assert "tok-a" not in repr(cfg)


def test_namespace_defaults_to_default(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={"u": {"token": "t"}},
        contexts={"x": {"cluster": "c", "user": "u"}},
        current="x",
    )
    assert load_kubeconfig(path).namespace == "default"


def test_context_argument_overrides_current_context(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c1": {"server": "https://one:1"}, "c2": {"server": "https://two:2"}},
        users={"u": {"token": "t"}},
        contexts={
            "x": {"cluster": "c1", "user": "u", "namespace": "nx"},
            "y": {"cluster": "c2", "user": "u", "namespace": "ny"},
        },
        current="x",
    )
    assert load_kubeconfig(path).server == "https://one:1"
    cfg = load_kubeconfig(path, context="y")
    assert (cfg.server, cfg.namespace, cfg.context) == ("https://two:2", "ny", "y")


def test_missing_context_cluster_and_user_are_named(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={"u": {"token": "t"}},
        contexts={
            "no-cluster": {"cluster": "gone", "user": "u"},
            "no-user": {"cluster": "c", "user": "nobody"},
            "unset-cluster": {"user": "u"},
        },
        current="dangling",
    )
    with pytest.raises(ConfigError, match='current-context "dangling" was not found'):
        load_kubeconfig(path)
    with pytest.raises(ConfigError, match='context "nope" does not exist'):
        load_kubeconfig(path, context="nope")
    with pytest.raises(ConfigError, match='cluster "gone" was not found for context "no-cluster"'):
        load_kubeconfig(path, context="no-cluster")
    with pytest.raises(ConfigError, match='user "nobody" was not found for context "no-user"'):
        load_kubeconfig(path, context="no-user")
    with pytest.raises(ConfigError, match='cluster was not specified for context "unset-cluster"'):
        load_kubeconfig(path, context="unset-cluster")


def test_context_without_user_is_anonymous(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        contexts={"x": {"cluster": "c"}},
        current="x",
    )
    cfg = load_kubeconfig(path)
    assert cfg.credentials is None
    assert cfg.client_cert_data is None


def test_no_current_context_is_an_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", clusters={"c": {"server": "https://c:1"}})
    with pytest.raises(ConfigError, match="current-context is not set"):
        load_kubeconfig(path)


def test_cluster_without_server_is_an_error(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"tls-server-name": "x"}},
        contexts={"x": {"cluster": "c"}},
        current="x",
    )
    with pytest.raises(ConfigError, match='no server found for cluster "c"'):
        load_kubeconfig(path)


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_kubeconfig(tmp_path / "absent")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clusters: [\n", "error loading kubeconfig"),
        ("- just\n- a list\n", "not a Config object"),
        ("clusters: {a: 1}\n", "clusters must be a list"),
        (
            "clusters:\n- {name: a, cluster: {server: 'https://a'}}\n"
            "- {name: a, cluster: {server: 'https://b'}}\n",
            'duplicate name "a" in clusters',
        ),
        (
            "clusters: [{name: c, cluster: {server: 'https://c'}}]\n"
            "users: [{name: u, user: {token: 123}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
            "token must be a string",
        ),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "kc"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(path)


def test_empty_file_has_no_context(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("")
    with pytest.raises(ConfigError, match="current-context is not set"):
        load_kubeconfig(path)


def test_server_without_scheme(
    tmp_path: Path, pki: ServingCertificates, caplog: pytest.LogCaptureFixture
) -> None:
    ca = base64.b64encode(pki.ca_pem).decode()
    path = kubeconfig(
        tmp_path / "kc",
        clusters={
            "tls": {"server": "h:6443", "certificate-authority-data": ca},
            "plain": {"server": "h:8080"},
        },
        users={"u": {"token": "t"}},
        contexts={
            "tls": {"cluster": "tls", "user": "u"},
            "plain": {"cluster": "plain", "user": "u"},
        },
        current="tls",
    )
    assert load_kubeconfig(path).server == "https://h:6443"
    with caplog.at_level(logging.WARNING, logger="kubeforge.client.config"):
        plain = load_kubeconfig(path, context="plain")
    assert plain.server == "http://h:8080"
    # Credentials are sent only over TLS, as client-go does.
    assert plain.credentials is None
    assert 'credentials of user "u" are not sent' in caplog.text


# -- merging ---------------------------------------------------------------------------------


def test_merge_first_file_wins_per_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = kubeconfig(
        tmp_path / "one" / "kc",
        clusters={"shared": {"server": "https://first:1"}},
        users={"shared": {"token": "first-token"}},
        contexts={"shared": {"cluster": "shared", "user": "shared", "namespace": "first-ns"}},
    )
    second = kubeconfig(
        tmp_path / "two" / "kc",
        clusters={
            # A whole entry wins: fields of a later file's entry are never merged in.
            "shared": {"server": "https://second:2", "tls-server-name": "second"},
            "only-second": {"server": "https://only-second:3"},
        },
        users={"shared": {"token": "second-token"}, "u2": {"token": "u2-token"}},
        contexts={
            "shared": {"cluster": "only-second", "user": "u2", "namespace": "second-ns"},
            "mixed": {"cluster": "only-second", "user": "shared"},
        },
        current="shared",
    )
    third = kubeconfig(tmp_path / "three" / "kc", current="mixed")
    missing = tmp_path / "missing"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, [first, missing, "", second, third])))

    cfg = load_config()
    # current-context comes from the first file that sets it (the second).
    assert cfg.context == "shared"
    assert (cfg.server, cfg.namespace, cfg.tls_server_name) == (
        "https://first:1",
        "first-ns",
        None,
    )
    assert await_token(cfg) == "first-token"

    mixed = load_config(context="mixed")
    assert mixed.server == "https://only-second:3"
    assert await_token(mixed) == "first-token"


def await_token(cfg: ClusterConfig) -> str | None:
    return asyncio.run(token_of(cfg))


def test_current_context_from_first_file_that_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = simple(tmp_path / "a" / "kc")
    b = kubeconfig(
        tmp_path / "b" / "kc",
        clusters={"b": {"server": "https://b:1"}},
        contexts={"b": {"cluster": "b"}},
        current="b",
    )
    monkeypatch.setenv("KUBECONFIG", f"{b}{os.pathsep}{a}")
    assert load_config().context == "b"
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    assert load_config().context == "a"


def test_relative_paths_resolve_against_their_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: ServingCertificates
) -> None:
    one = tmp_path / "one"
    two = tmp_path / "two"
    (one / "certs").mkdir(parents=True)
    (two / "creds").mkdir(parents=True)
    (one / "certs" / "ca.pem").write_bytes(pki.ca_pem)
    (two / "creds" / "token").write_text("file-token\n")
    (two / "creds" / "client.crt").write_bytes(pki.cert_pem)
    (two / "creds" / "client.key").write_bytes(pki.key_pem)
    kubeconfig(
        one / "kc",
        clusters={"c": {"server": "https://c:1", "certificate-authority": "certs/ca.pem"}},
        contexts={"x": {"cluster": "c", "user": "u"}},
        current="x",
    )
    kubeconfig(
        two / "kc",
        users={
            "u": {
                "tokenFile": "creds/token",
                "client-certificate": "creds/client.crt",
                "client-key": "creds/client.key",
            }
        },
    )
    # Relative to each file, not to the working directory.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", f"one/kc{os.pathsep}two/kc")
    cfg = load_config()
    assert cfg.ca_data == pki.ca_pem
    assert cfg.client_cert_data == pki.cert_pem
    assert cfg.client_key_data == pki.key_pem
    assert isinstance(cfg.credentials, TokenFile)
    assert cfg.credentials.path == two / "creds" / "token"
    assert await_token(cfg) == "file-token"


def test_home_kubeconfig_is_the_default(clean_env: Path) -> None:
    simple(clean_env / ".kube" / "config")
    assert load_config().context == "a"
    assert load_kubeconfig().context == "a"


def test_kubeconfig_variable_replaces_home(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    simple(clean_env / ".kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="none of the files in KUBECONFIG"):
        load_config()
    with pytest.raises(ConfigError, match="no kubeconfig found"):
        load_kubeconfig()


def test_explicit_path_beats_kubeconfig_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = kubeconfig(
        tmp_path / "env",
        clusters={"e": {"server": "https://env:1"}},
        contexts={"e": {"cluster": "e"}},
        current="e",
    )
    monkeypatch.setenv("KUBECONFIG", str(env_file))
    explicit = simple(tmp_path / "explicit")
    assert load_config(kubeconfig=str(explicit)).context == "a"
    # The explicit file is read alone: the variable's contexts are not merged in.
    with pytest.raises(ConfigError, match='context "e" does not exist'):
        load_config(kubeconfig=str(explicit), context="e")


def test_nothing_configured_is_a_clear_error(clean_env: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(clean_env / ".kube" / "config") in message
    assert "KUBERNETES_SERVICE_HOST" in message


# -- cluster settings ------------------------------------------------------------------------


def test_ca_data_and_file(tmp_path: Path, pki: ServingCertificates) -> None:
    (tmp_path / "ca.pem").write_bytes(pki.ca_pem)
    data = base64.b64encode(pki.ca_pem).decode()
    path = kubeconfig(
        tmp_path / "kc",
        clusters={
            "data": {"server": "https://d:1", "certificate-authority-data": data},
            "file": {"server": "https://f:1", "certificate-authority": "ca.pem"},
            "both": {
                "server": "https://b:1",
                "certificate-authority": "ca.pem",
                "certificate-authority-data": data,
            },
            "unreadable": {"server": "https://u:1", "certificate-authority": "nope.pem"},
            "bad64": {"server": "https://x:1", "certificate-authority-data": "%%%"},
        },
        contexts={n: {"cluster": n} for n in ("data", "file", "both", "unreadable", "bad64")},
        current="data",
    )
    assert load_kubeconfig(path).ca_data == pki.ca_pem
    assert load_kubeconfig(path, context="file").ca_data == pki.ca_pem
    with pytest.raises(ConfigError, match="are both specified for both"):
        load_kubeconfig(path, context="both")
    with pytest.raises(ConfigError, match=r"unable to read certificate-authority .*nope\.pem"):
        load_kubeconfig(path, context="unreadable")
    with pytest.raises(ConfigError, match="not valid base64"):
        load_kubeconfig(path, context="bad64")


def test_ssl_context_trusts_only_the_ca_and_is_cached(pki: ServingCertificates) -> None:
    cfg = ClusterConfig(server="https://c:1", ca_data=pki.ca_pem)
    ctx = cfg.ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert len(ctx.get_ca_certs()) == 1
    assert cfg.ssl_context() is ctx


def test_ssl_context_with_client_certificate(pki: ServingCertificates) -> None:
    cfg = ClusterConfig(
        server="https://c:1",
        ca_data=pki.ca_pem,
        client_cert_data=pki.cert_pem,
        client_key_data=pki.key_pem,
    )
    assert isinstance(cfg.ssl_context(), ssl.SSLContext)
    wrong = ClusterConfig(
        server="https://c:1", client_cert_data=pki.cert_pem, client_key_data=b"garbage"
    )
    with pytest.raises(ConfigError, match="invalid client certificate or key"):
        wrong.ssl_context()


def test_invalid_ca_data_fails_in_ssl_context() -> None:
    cfg = ClusterConfig(server="https://c:1", ca_data=b"not a certificate")
    with pytest.raises(ConfigError, match="invalid certificate authority data"):
        cfg.ssl_context()


def test_insecure_skip_tls_verify(tmp_path: Path, pki: ServingCertificates) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={
            "insecure": {"server": "https://i:1", "insecure-skip-tls-verify": True},
            "contradiction": {
                "server": "https://i:1",
                "insecure-skip-tls-verify": True,
                "certificate-authority-data": base64.b64encode(pki.ca_pem).decode(),
            },
        },
        users={
            "cert": {
                "client-certificate-data": base64.b64encode(pki.cert_pem).decode(),
                "client-key-data": base64.b64encode(pki.key_pem).decode(),
            }
        },
        contexts={
            "insecure": {"cluster": "insecure"},
            "insecure-cert": {"cluster": "insecure", "user": "cert"},
            "contradiction": {"cluster": "contradiction"},
        },
        current="insecure",
    )
    cfg = load_kubeconfig(path)
    assert cfg.insecure_skip_tls_verify
    assert cfg.ssl_context() is False
    with_cert = load_kubeconfig(path, context="insecure-cert").ssl_context()
    # The certificate is still presented, without verifying the server.
    assert isinstance(with_cert, ssl.SSLContext)
    assert with_cert.verify_mode == ssl.CERT_NONE
    with pytest.raises(ConfigError, match="insecure flag is not allowed"):
        load_kubeconfig(path, context="contradiction")


def test_tls_server_name_and_proxy_url(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={
            "c": {
                "server": "https://10.0.0.1:6443",
                "tls-server-name": "kubernetes.default",
                "proxy-url": "socks5://proxy:1080",
            },
            "bad": {"server": "https://c:1", "proxy-url": "ftp://proxy"},
        },
        contexts={"c": {"cluster": "c"}, "bad": {"cluster": "bad"}},
        current="c",
    )
    cfg = load_kubeconfig(path)
    assert cfg.tls_server_name == "kubernetes.default"
    assert cfg.proxy_url == "socks5://proxy:1080"
    with pytest.raises(ConfigError, match="invalid 'proxy-url'"):
        load_kubeconfig(path, context="bad")


# -- user settings ---------------------------------------------------------------------------


def test_client_certificate_data_and_files(tmp_path: Path, pki: ServingCertificates) -> None:
    (tmp_path / "c.crt").write_bytes(pki.cert_pem)
    (tmp_path / "c.key").write_bytes(pki.key_pem)
    cert64 = base64.b64encode(pki.cert_pem).decode()
    key64 = base64.b64encode(pki.key_pem).decode()
    users = {
        "data": {"client-certificate-data": cert64, "client-key-data": key64},
        "files": {"client-certificate": "c.crt", "client-key": "c.key"},
        "no-key": {"client-certificate-data": cert64},
        "both": {
            "client-certificate": "c.crt",
            "client-certificate-data": cert64,
            "client-key": "c.key",
        },
        "gone": {"client-certificate": "gone.crt", "client-key": "c.key"},
    }
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users=users,
        contexts={n: {"cluster": "c", "user": n} for n in users},
        current="data",
    )
    for name in ("data", "files"):
        cfg = load_kubeconfig(path, context=name)
        assert (cfg.client_cert_data, cfg.client_key_data) == (pki.cert_pem, pki.key_pem)
        assert cfg.credentials is None
    with pytest.raises(ConfigError, match="client-key-data or client-key must be specified"):
        load_kubeconfig(path, context="no-key")
    with pytest.raises(ConfigError, match="client-cert-data and client-cert are both specified"):
        load_kubeconfig(path, context="both")
    with pytest.raises(ConfigError, match=r"unable to read client-cert .*gone\.crt"):
        load_kubeconfig(path, context="gone")


def test_basic_auth_and_conflicts(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={
            "basic": {"username": "admin", "password": "secret"},
            "both": {"username": "admin", "password": "secret", "token": "t"},
        },
        contexts={
            "basic": {"cluster": "c", "user": "basic"},
            "both": {"cluster": "c", "user": "both"},
        },
        current="basic",
    )
    cfg = load_kubeconfig(path)
    assert (cfg.username, cfg.password, cfg.credentials) == ("admin", "secret", None)
    assert "secret" not in repr(cfg)
    with pytest.raises(
        ConfigError, match=r"more than one authentication method .*\[token basicAuth\]"
    ):
        load_kubeconfig(path, context="both")


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"auth-provider": {"name": "gcp", "config": {}}}, 'auth-provider "gcp" is not supported'),
        ({"token": "t", "as": "someone"}, "impersonation"),
        ({"token": "t", "exec": {"apiVersion": V1, "interactiveMode": "Never"}}, "command must be"),
        ({"exec": {"command": "x", "interactiveMode": "Never"}}, "apiVersion must be specified"),
        (
            {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
            "invalid apiVersion",
        ),
        ({"exec": {"command": "x", "apiVersion": V1}}, "interactiveMode must be specified"),
        (
            {"exec": {"command": "x", "apiVersion": V1, "interactiveMode": "Sometimes"}},
            'invalid interactiveMode for u: "Sometimes"',
        ),
        (
            {"exec": {"command": "x", "apiVersion": V1BETA1, "env": [{"value": "v"}]}},
            "env variable name must be specified",
        ),
    ],
)
def test_unusable_users(tmp_path: Path, user: dict[str, Any], message: str) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={"u": user},
        contexts={"x": {"cluster": "c", "user": "u"}},
        current="x",
    )
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(path)


# -- token files -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_token_file_is_reread_at_most_every_minute_and_on_invalidate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    clock = Clock()
    source = TokenFile(path, clock=clock)
    assert await source.token() == "one"
    path.write_text("two")
    clock.now += 59
    assert await source.token() == "one"
    clock.now += 1
    assert await source.token() == "two"
    path.write_text("three")
    source.invalidate()
    assert await source.token() == "three"


async def test_token_file_keeps_last_good_token_and_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "token"
    with_fallback = TokenFile(path, fallback="static")
    assert await with_fallback.token() == "static"
    path.write_text("from-file")
    with_fallback.invalidate()
    assert await with_fallback.token() == "from-file"
    path.unlink()
    with_fallback.invalidate()
    assert await with_fallback.token() == "from-file"

    bare = TokenFile(tmp_path / "absent")
    with pytest.raises(CredentialError, match="unable to read token file"):
        await bare.token()
    (tmp_path / "empty").write_text("  \n")
    with pytest.raises(CredentialError, match="read empty token"):
        await TokenFile(tmp_path / "empty").token()


async def test_kubeconfig_token_file_wins_over_token(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("from-file")
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={
            "both": {"token": "inline", "tokenFile": "tok"},
            "both-missing": {"token": "inline", "tokenFile": "absent"},
            "file-missing": {"tokenFile": "absent"},
        },
        contexts={n: {"cluster": "c", "user": n} for n in ("both", "both-missing", "file-missing")},
        current="both",
    )
    assert await token_of(load_kubeconfig(path)) == "from-file"
    assert await token_of(load_kubeconfig(path, context="both-missing")) == "inline"
    with pytest.raises(ConfigError, match="unable to read tokenFile"):
        load_kubeconfig(path, context="file-missing")


# -- exec plugins ----------------------------------------------------------------------------

PLUGIN = """
import datetime, json, os, sys
out = os.environ["PLUGIN_DIR"]
with open(os.path.join(out, "calls"), "a") as f:
    f.write("call\\n")
calls = len(open(os.path.join(out, "calls")).read().split())
info = os.environ["KUBERNETES_EXEC_INFO"]
with open(os.path.join(out, "exec-info.json"), "w") as f:
    f.write(info)
mode = os.environ.get("PLUGIN_MODE", "token")
if mode == "hang":
    with open(os.path.join(out, "pid"), "w") as f:
        f.write(str(os.getpid()))
    import time
    time.sleep(600)
if mode == "fail":
    sys.stderr.write("the identity provider said no\\n")
    sys.exit(3)
request = json.loads(info)
status = {}
if mode == "token":
    status["token"] = "token-%d" % calls
elif mode == "cert":
    status["clientCertificateData"] = os.environ["PLUGIN_CERT"]
    status["clientKeyData"] = os.environ["PLUGIN_KEY"]
elif mode == "cert-only":
    status["clientCertificateData"] = "x"
expires_in = os.environ.get("PLUGIN_EXPIRES_IN")
if expires_in:
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=int(expires_in))
    status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
version = os.environ.get("PLUGIN_VERSION", request["apiVersion"])
reply = {"apiVersion": version, "kind": "ExecCredential"}
if mode != "no-status":
    reply["status"] = status
print(json.dumps(reply))
"""


class Plugin:
    """A credential plugin written in Python, counting its runs in a file."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.script = directory / "plugin.py"
        self.script.write_text(PLUGIN)

    @property
    def calls(self) -> int:
        path = self.dir / "calls"
        return len(path.read_text().split()) if path.exists() else 0

    @property
    def request(self) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads((self.dir / "exec-info.json").read_bytes())
        return doc

    def exec(self, version: str = V1, **env: str) -> dict[str, Any]:
        """The `exec` section of a kubeconfig user running this plugin."""
        return {
            "apiVersion": version,
            "command": sys.executable,
            "args": [str(self.script)],
            "env": [{"name": "PLUGIN_DIR", "value": str(self.dir)}]
            + [{"name": k, "value": v} for k, v in env.items()],
            "interactiveMode": "Never",
        }

    def provider(self, version: str = V1, **env: str) -> ExecProvider:
        section = self.exec(version, **env)
        plugin = ExecPlugin(
            command=section["command"],
            api_version=version,
            args=tuple(section["args"]),
            env=tuple((e["name"], e["value"]) for e in section["env"]),
        )
        return ExecProvider(plugin)


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path / "plugin")


def exec_kubeconfig(path: Path, exec_section: dict[str, Any], **cluster: Any) -> Path:
    return kubeconfig(
        path,
        clusters={"c": {"server": "https://c.example:6443", **cluster}},
        users={"u": {"exec": exec_section}},
        contexts={"x": {"cluster": "c", "user": "u"}},
        current="x",
    )


async def test_exec_credential_cached_until_expiry(plugin: Plugin) -> None:
    provider = plugin.provider(PLUGIN_EXPIRES_IN="3600")
    assert await provider.token() == "token-1"
    assert await provider.token() == "token-1"
    assert plugin.calls == 1
    provider.invalidate()
    assert await provider.token() == "token-2"
    assert plugin.calls == 2


async def test_expired_exec_credential_is_fetched_again(plugin: Plugin) -> None:
    provider = plugin.provider(PLUGIN_EXPIRES_IN="-60")
    assert await provider.token() == "token-1"
    assert await provider.token() == "token-2"
    assert plugin.calls == 2
    cred = await provider.credential()
    assert cred.expiration is not None


async def test_exec_credential_without_expiry_lasts_until_invalidated(plugin: Plugin) -> None:
    provider = plugin.provider(V1BETA1)
    for _ in range(3):
        assert await provider.token() == "token-1"
    assert plugin.calls == 1


async def test_concurrent_callers_share_one_plugin_run(plugin: Plugin) -> None:
    provider = plugin.provider()
    tokens = await asyncio.gather(*(provider.token() for _ in range(8)))
    assert set(tokens) == {"token-1"}
    assert plugin.calls == 1


async def test_cancelled_caller_stops_the_plugin(plugin: Plugin) -> None:
    provider = plugin.provider(PLUGIN_MODE="hang")
    task = asyncio.create_task(provider.token())
    pid_file = plugin.dir / "pid"

    async def started() -> bool:
        return pid_file.exists() and bool(pid_file.read_text())

    await eventually(started)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pid_file.read_text())

    async def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await eventually(gone)


def test_exec_provider_is_usable_from_several_event_loops(plugin: Plugin) -> None:
    provider = plugin.provider()

    async def burst() -> set[str | None]:
        provider.invalidate()
        return set(await asyncio.gather(*(provider.token() for _ in range(3))))

    assert asyncio.run(burst()) == {"token-1"}
    assert asyncio.run(burst()) == {"token-2"}
    assert plugin.calls == 2


async def test_exec_request_environment(
    plugin: Plugin, tmp_path: Path, pki: ServingCertificates
) -> None:
    section = plugin.exec(V1BETA1, EXTRA="1")
    section["provideClusterInfo"] = True
    del section["interactiveMode"]  # optional for v1beta1
    path = exec_kubeconfig(
        tmp_path / "kc",
        section,
        **{
            "certificate-authority-data": base64.b64encode(pki.ca_pem).decode(),
            "tls-server-name": "c.internal",
            "extensions": [
                {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k8s"}}
            ],
        },
    )
    cfg = load_kubeconfig(path)
    assert isinstance(cfg.credentials, ExecProvider)
    assert await token_of(cfg) == "token-1"
    request = plugin.request
    assert request["kind"] == "ExecCredential"
    assert request["apiVersion"] == V1BETA1
    assert request["spec"]["interactive"] is False
    cluster = request["spec"]["cluster"]
    assert cluster["server"] == "https://c.example:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == pki.ca_pem
    assert cluster["tls-server-name"] == "c.internal"
    assert cluster["config"] == {"audience": "k8s"}


async def test_exec_request_without_cluster_info(plugin: Plugin, tmp_path: Path) -> None:
    cfg = load_kubeconfig(exec_kubeconfig(tmp_path / "kc", plugin.exec()))
    await token_of(cfg)
    assert plugin.request == {
        "kind": "ExecCredential",
        "apiVersion": V1,
        "spec": {"interactive": False},
    }


async def test_exec_plugin_returning_a_client_certificate(
    plugin: Plugin, pki: ServingCertificates
) -> None:
    provider = plugin.provider(
        PLUGIN_MODE="cert", PLUGIN_CERT=pki.cert_pem.decode(), PLUGIN_KEY=pki.key_pem.decode()
    )
    assert await provider.token() is None
    cred = await provider.credential()
    assert (cred.client_certificate_data, cred.client_key_data) == (pki.cert_pem, pki.key_pem)
    ctx = ClusterConfig(server="https://c:1", ca_data=pki.ca_pem).ssl_context_with_client_cert(
        cred.client_certificate_data, cred.client_key_data
    )
    assert isinstance(ctx, ssl.SSLContext)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLUGIN_MODE": "fail"}, r"failed with exit code 3: the identity provider said no"),
        ({"PLUGIN_MODE": "no-status"}, "didn't return a status field"),
        ({"PLUGIN_MODE": "cert-only"}, "returned only certificate or key, not both"),
        ({"PLUGIN_MODE": "nothing"}, "didn't return a token or cert/key pair"),
        ({"PLUGIN_VERSION": V1BETA1}, f"configured to use API version {V1}, plugin returned"),
    ],
)
async def test_exec_plugin_failures(plugin: Plugin, env: dict[str, str], message: str) -> None:
    provider = plugin.provider(**env)
    with pytest.raises(CredentialError, match=message):
        await provider.token()
    assert plugin.calls == 1


async def test_missing_exec_command(tmp_path: Path) -> None:
    section = {
        "apiVersion": V1,
        "command": "kubeforge-no-such-plugin",
        "interactiveMode": "IfAvailable",
        "installHint": "install it with: pip install the-plugin",
    }
    cfg = load_kubeconfig(exec_kubeconfig(tmp_path / "kc", section))
    with pytest.raises(CredentialError) as info:
        await token_of(cfg)
    assert "executable kubeforge-no-such-plugin not found" in str(info.value)
    assert "pip install the-plugin" in str(info.value)


async def test_interactive_always_is_refused(plugin: Plugin, tmp_path: Path) -> None:
    section = plugin.exec()
    section["interactiveMode"] = "Always"
    cfg = load_kubeconfig(exec_kubeconfig(tmp_path / "kc", section))
    with pytest.raises(CredentialError, match="cannot support interactive mode"):
        await token_of(cfg)
    assert plugin.calls == 0


async def test_exec_command_with_a_separator_is_relative_to_its_kubeconfig(
    plugin: Plugin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable = tmp_path / "conf" / "bin" / "plugin"
    executable.parent.mkdir(parents=True)
    executable.write_text(f"#!{sys.executable}\n{PLUGIN}")
    executable.chmod(executable.stat().st_mode | stat.S_IXUSR)
    section = plugin.exec()
    section["command"] = os.path.join("bin", "plugin")
    section["args"] = []
    cfg = load_kubeconfig(exec_kubeconfig(tmp_path / "conf" / "kc", section))
    monkeypatch.chdir(tmp_path)
    assert isinstance(cfg.credentials, ExecProvider)
    assert cfg.credentials.plugin.command == str(executable)
    assert await token_of(cfg) == "token-1"


def test_exec_is_ignored_when_the_user_has_a_token(plugin: Plugin, tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        clusters={"c": {"server": "https://c:1"}},
        users={"u": {"token": "static", "exec": plugin.exec()}},
        contexts={"x": {"cluster": "c", "user": "u"}},
        current="x",
    )
    cfg = load_kubeconfig(path)
    assert isinstance(cfg.credentials, StaticToken)
    assert await_token(cfg) == "static"
    assert plugin.calls == 0


# -- in-cluster ------------------------------------------------------------------------------


@pytest.fixture
def service_account(tmp_path: Path, pki: ServingCertificates) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token")
    (directory / "ca.crt").write_bytes(pki.ca_pem)
    (directory / "namespace").write_text("team-a\n")
    return directory


async def test_incluster(
    service_account: Path, monkeypatch: pytest.MonkeyPatch, pki: ServingCertificates
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = load_incluster(directory=service_account)
    assert cfg.server == "https://10.96.0.1:443"
    assert cfg.ca_data == pki.ca_pem
    assert cfg.namespace == "team-a"
    assert cfg.context is None
    assert await token_of(cfg) == "sa-token"
    # The kubelet rotates the projected token; a 401 makes the client read it again.
    (service_account / "token").write_text("rotated")
    assert cfg.credentials is not None
    cfg.credentials.invalidate()
    assert await token_of(cfg) == "rotated"


def test_incluster_ipv6_and_pod_namespace(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.setenv("POD_NAMESPACE", "from-downward-api")
    (service_account / "namespace").unlink()
    cfg = load_incluster(directory=service_account)
    assert cfg.server == "https://[fd00::1]:6443"
    assert cfg.namespace == "from-downward-api"
    monkeypatch.delenv("POD_NAMESPACE")
    assert load_incluster(directory=service_account).namespace == "default"


def test_incluster_errors(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        load_incluster(directory=service_account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (service_account / "token").unlink()
    with pytest.raises(ConfigError, match="unable to read token file"):
        load_incluster(directory=service_account)


def test_incluster_reads_the_directory_its_variable_names(
    service_account: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A pod of the development cluster run as a local process has its files elsewhere.
    monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_DIR", str(tmp_path / "absent"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.delenv("KUBEFORGE_SERVICE_ACCOUNT_DIR", raising=False)
    with pytest.raises(ConfigError, match="absent/token"):
        load_incluster()
    monkeypatch.setenv("KUBEFORGE_SERVICE_ACCOUNT_DIR", str(service_account))
    cfg = load_incluster()
    assert (cfg.server, cfg.namespace) == ("https://127.0.0.1:6443", "team-a")
    # An empty value is as good as unset.
    monkeypatch.setenv("KUBEFORGE_SERVICE_ACCOUNT_DIR", "")
    with pytest.raises(ConfigError, match="absent/token"):
        load_incluster()


def test_load_config_falls_back_to_incluster(
    service_account: Path, monkeypatch: pytest.MonkeyPatch, clean_env: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_DIR", str(service_account))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    # No kubeconfig at all.
    assert load_config().server == "https://10.96.0.1:443"
    # A kubeconfig that selects no context.
    kubeconfig(clean_env / ".kube" / "config", clusters={"c": {"server": "https://c:1"}})
    assert load_config().server == "https://10.96.0.1:443"
    # Asking for a context means asking for a kubeconfig.
    with pytest.raises(ConfigError, match='context "x" does not exist'):
        load_config(context="x")
    # A kubeconfig with a current context wins over the pod's service account.
    simple(clean_env / ".kube" / "config")
    assert load_config().context == "a"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    assert load_config().server == "https://10.96.0.1:443"
