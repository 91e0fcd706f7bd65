"""Running controllers as the project's ServiceAccount instead of an administrator.

`install_rbac` applies the project's `config/rbac` (what `kustomize build config/rbac`
lists: the ServiceAccount, the generated roles and their bindings) with an admin client;
`as_service_account` turns an admin ClusterConfig into one that authenticates with tokens
of that account, fetched through TokenRequest and renewed before they expire. A manager
built on it is refused whatever its `@rbac` rules do not grant, as it would be after
deploy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeforge._client.auth import ServiceAccountToken
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import AlreadyExists

__all__ = ["ServiceAccountRef", "as_service_account", "install_rbac", "read_rbac"]

FIELD_MANAGER = "kubeforge"


@dataclass(frozen=True, slots=True)
class ServiceAccountRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def read_rbac(directory: Path) -> list[dict[str, Any]]:
    """The objects of `directory` (config/rbac): the files its kustomization.yaml lists, in
    order, or every YAML file there when it has none."""
    kustomization = directory / "kustomization.yaml"
    if kustomization.is_file():
        listed = (yaml.safe_load(kustomization.read_text(encoding="utf-8")) or {}).get(
            "resources"
        ) or []
        files = [directory / str(name) for name in listed]
    else:
        files = sorted(directory.glob("*.yaml"))
    objects: list[dict[str, Any]] = []
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(f"{path} (listed in {kustomization}) does not exist")
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind"):
                objects.append(doc)
    return objects


async def install_rbac(client: Client, directory: Path) -> ServiceAccountRef:
    """Apply config/rbac (creating the namespaces it uses) and name its ServiceAccount."""
    objects = read_rbac(directory)
    accounts = [o for o in objects if o.get("kind") == "ServiceAccount"]
    if not accounts:
        raise ValueError(f"{directory} defines no ServiceAccount")
    namespaces = sorted(
        {
            str(o["metadata"]["namespace"])
            for o in objects
            if isinstance(o.get("metadata"), dict) and o["metadata"].get("namespace")
        }
    )
    for namespace in namespaces:
        try:
            await client.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        except AlreadyExists:
            pass
    for obj in objects:
        await client.apply(obj, field_manager=FIELD_MANAGER, force=True)
    meta = accounts[0]["metadata"]
    return ServiceAccountRef(str(meta.get("namespace") or "default"), str(meta["name"]))


def as_service_account(
    admin: Client, config: ClusterConfig, account: ServiceAccountRef, seconds: int = 3600
) -> ClusterConfig:
    """`config` authenticating as `account` (tokens requested through `admin`, which must
    stay open while the result is used)."""

    async def request(namespace: str, name: str, body: dict[str, Any]) -> Any:
        return await admin.create_subresource(
            "v1/ServiceAccount", name, "token", body, namespace=namespace
        )

    return dataclasses.replace(
        config,
        client_cert_data=None,
        client_key_data=None,
        username=None,
        password=None,
        credentials=ServiceAccountToken(request, account.namespace, account.name, seconds=seconds),
    )
