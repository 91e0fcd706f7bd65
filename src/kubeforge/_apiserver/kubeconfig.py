"""Writing a kubeconfig that points kubectl and clients at a running server."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig_dict", "write_kubeconfig"]


def kubeconfig_dict(
    server: str,
    ca_pem: bytes,
    token: str | None,
    context: str,
    client_cert: tuple[bytes, bytes] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """A kubeconfig with one cluster, user and context, all named `context` (its namespace
    `namespace`); the user has a bearer token or a client certificate (PEM certificate and
    key)."""
    user: dict[str, str] = {}
    if token is not None:
        user["token"] = token
    if client_cert is not None:
        user["client-certificate-data"] = base64.b64encode(client_cert[0]).decode()
        user["client-key-data"] = base64.b64encode(client_cert[1]).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": context, "user": user}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": context, "namespace": namespace},
            }
        ],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(
    path: str | os.PathLike[str],
    server: str,
    ca_pem: bytes,
    token: str | None,
    context: str,
    client_cert: tuple[bytes, bytes] | None = None,
    namespace: str = "default",
) -> Path:
    """Write the kubeconfig readable only by its owner (it holds a credential)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = kubeconfig_dict(server, ca_pem, token, context, client_cert, namespace)
    text = yaml.safe_dump(doc, sort_keys=False)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, target)
    return target
