"""Kubeconfigs given as text (a Secret's), with or without local references, and the
contexts a kubeconfig file defines."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeforge._client.auth import StaticToken, TokenFile
from kubeforge._client.config import (
    ConfigError,
    kubeconfig_contexts,
    load_kubeconfig_data,
)

CA = base64.b64encode(b"not checked until TLS is set up").decode()


def text(user: dict[str, Any], cluster: dict[str, Any] | None = None) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": cluster or {"server": "https://c.example:6443"}},
            {"name": "other", "cluster": {"server": "https://other.example"}},
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u", "namespace": "ns"}},
            {"name": "second", "context": {"cluster": "other", "user": "u"}},
        ],
        "current-context": "main",
    }
    return yaml.safe_dump(doc)


def test_text_resolves_as_a_file_does() -> None:
    config = load_kubeconfig_data(text({"token": "tok"}).encode())
    assert (config.server, config.namespace, config.context) == (
        "https://c.example:6443",
        "ns",
        "main",
    )
    assert isinstance(config.credentials, StaticToken)
    second = load_kubeconfig_data(text({"token": "tok"}), context="second")
    assert (second.server, second.namespace) == ("https://other.example", "default")


def test_errors_name_the_source() -> None:
    with pytest.raises(ConfigError, match="Secret fleet/east"):
        load_kubeconfig_data("{", source="Secret fleet/east")
    with pytest.raises(ConfigError, match='context "third" does not exist in Secret fleet/east'):
        load_kubeconfig_data(text({"token": "t"}), context="third", source="Secret fleet/east")


@pytest.mark.parametrize(
    ("user", "cluster", "refused"),
    [
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "id"}},
            None,
            "exec",
        ),
        ({"tokenFile": "/var/run/token"}, None, "tokenFile"),
        ({"client-certificate": "/c.crt", "client-key-data": CA}, None, "client-certificate"),
        ({"client-certificate-data": CA, "client-key": "/c.key"}, None, "client-key"),
        (
            {"token": "t"},
            {"server": "https://c.example", "certificate-authority": "/ca.crt"},
            "certificate-authority",
        ),
    ],
)
def test_inline_only_refuses_commands_and_local_files(
    user: dict[str, Any], cluster: dict[str, Any] | None, refused: str
) -> None:
    data = text(user, cluster)
    with pytest.raises(ConfigError, match=f"{refused} is not allowed here.*Secret a/b"):
        load_kubeconfig_data(data, source="Secret a/b", inline_only=True)


def test_inline_only_accepts_inline_credentials() -> None:
    inline = {"client-certificate-data": CA, "client-key-data": CA}
    cluster = {"server": "https://c.example", "certificate-authority-data": CA}
    config = load_kubeconfig_data(text(inline, cluster), inline_only=True)
    assert config.ca_data == config.client_cert_data == base64.b64decode(CA)


def test_inline_only_judges_the_context_it_loads() -> None:
    doc = yaml.safe_load(text({"token": "t"}))
    doc["users"].append({"name": "runs", "user": {"exec": {"command": "id"}}})
    doc["contexts"].append({"name": "runs", "context": {"cluster": "c", "user": "runs"}})
    assert load_kubeconfig_data(yaml.safe_dump(doc), inline_only=True).context == "main"
    with pytest.raises(ConfigError, match="exec is not allowed"):
        load_kubeconfig_data(yaml.safe_dump(doc), context="runs", inline_only=True)


def test_without_inline_only_local_files_are_read(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("from-file")
    config = load_kubeconfig_data(text({"tokenFile": str(token)}))
    assert isinstance(config.credentials, TokenFile)


def test_the_contexts_of_a_kubeconfig_file(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text({"token": "t"}))
    assert kubeconfig_contexts(path) == ["main", "second"]
    with pytest.raises(ConfigError, match="does not exist"):
        kubeconfig_contexts(tmp_path / "missing")
