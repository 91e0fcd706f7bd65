"""The fleet operator against two member clusters besides its own: Tenants made in each get
their namespace in that cluster, and keep it as their spec says."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kubeforge
from kubeforge.cluster import ClusterOptions
from kubeforge.models import Namespace
from kubeforge.multicluster import DEFAULT_KUBECONFIG_KEY, DEFAULT_KUBECONFIG_LABEL
from kubeforge.testing import Kubectl, TestEnv, eventually

from api.v1alpha1 import Tenant, TenantSpec
from controllers.tenant import OWNER_LABEL, TENANT_LABEL

BASES = Path(__file__).resolve().parents[1] / "config" / "crd" / "bases"
MEMBERS = ("east", "west")


@contextlib.asynccontextmanager
async def member_clusters(
    home: kubeforge.Client, directory: Path, *names: str
) -> AsyncIterator[dict[str, TestEnv]]:
    """A development cluster per name with the project's CRDs (started here also when the
    tests run against an existing cluster: they are the fleet's members, not its home),
    each made a member through its kubeconfig Secret in `home`'s namespace."""
    async with contextlib.AsyncExitStack() as stack:
        members = {}
        for name in names:
            env = TestEnv(
                crd_paths=[BASES], options=ClusterOptions.bare(), use_existing_cluster=False
            )
            members[name] = await stack.enter_async_context(env)
            await home.create(kubeconfig_secret(name, members[name], directory))
        yield members


def kubeconfig_secret(name: str, member: TestEnv, directory: Path) -> dict[str, Any]:
    """The Secret that makes `member` a cluster of the fleet named `name`."""
    kubeconfig = member.write_kubeconfig(directory / f"{name}.kubeconfig").read_bytes()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {DEFAULT_KUBECONFIG_LABEL: "true"}},
        "data": {DEFAULT_KUBECONFIG_KEY: base64.b64encode(kubeconfig).decode()},
    }


async def available(client: kubeforge.Client, name: str) -> Tenant:
    """Tenant `name` once its status says Available."""

    async def check() -> Tenant | None:
        tenant = await client.get(Tenant, name)
        status = tenant.status
        if status is None:
            return None
        return (
            tenant if kubeforge.is_status_condition_true(status.conditions, "Available") else None
        )

    found = await eventually(check)
    assert found is not None
    return found


async def owner_of_namespace(client: kubeforge.Client, name: str, owner: str) -> bool:
    """Whether namespace `name` is labelled as owned by `owner`."""
    found = await client.get(Namespace, name)
    return (found.metadata.labels or {}).get(OWNER_LABEL) == owner


async def test_every_member_cluster_gives_its_tenants_a_namespace(
    manager: kubeforge.Manager, kubeforge_client: kubeforge.Client, tmp_path: Path
) -> None:
    async with member_clusters(kubeforge_client, tmp_path, *MEMBERS) as members:
        for member in members.values():
            blue = Tenant(metadata=kubeforge.ObjectMeta(name="blue"), spec=TenantSpec(owner="ops"))
            await member.client.create(blue)

        for name, member in members.items():
            tenant = await available(member.client, "blue")
            assert tenant.status is not None
            assert (tenant.status.namespace, tenant.status.cluster) == ("tenant-blue", name)
            namespace = await member.client.get(Namespace, "tenant-blue")
            labels = namespace.metadata.labels or {}
            assert (labels[TENANT_LABEL], labels[OWNER_LABEL]) == ("blue", "ops")
            [owner] = namespace.metadata.owner_references or []
            assert (owner.kind, owner.uid, owner.controller) == (
                "Tenant",
                tenant.metadata.uid,
                True,
            )
            # What kubectl shows in that cluster: the Tenant's printer columns.
            kubectl = Kubectl(
                tmp_path / f"{name}.kubeconfig", version="1.33", cache_dir=tmp_path / name
            )
            header, row = (await kubectl.run("get", "tenants")).rows()
            assert header[:4] == ["NAME", "OWNER", "NAMESPACE", "CLUSTER"]
            assert row[:4] == ["blue", "ops", "tenant-blue", name]


async def test_a_tenants_namespace_is_kept_as_its_spec_says_in_its_own_cluster(
    manager: kubeforge.Manager, kubeforge_client: kubeforge.Client, tmp_path: Path
) -> None:
    async with member_clusters(kubeforge_client, tmp_path, *MEMBERS) as members:
        for name, member in members.items():
            spec = TenantSpec(owner=f"team-{name}")
            await member.client.create(Tenant(metadata=kubeforge.ObjectMeta(name="red"), spec=spec))
        for member in members.values():
            await available(member.client, "red")

        east, west = members["east"].client, members["west"].client
        # Someone relabels the namespace in east: the operator puts the owner back there.
        namespace = await east.get(Namespace, "tenant-red")
        assert namespace.metadata.labels is not None
        namespace.metadata.labels[OWNER_LABEL] = "someone-else"
        await east.update(namespace)

        await eventually(lambda: owner_of_namespace(east, "tenant-red", "team-east"))
        # A new owner in west's Tenant reaches west's namespace alone.
        tenant = await west.get(Tenant, "red")
        tenant.spec.owner = "team-blue"
        await west.update(tenant)

        await eventually(lambda: owner_of_namespace(west, "tenant-red", "team-blue"))
        assert await owner_of_namespace(east, "tenant-red", "team-east")
