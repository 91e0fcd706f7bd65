"""Backups: the CronJob's Job copies the first member's keys into the backup volume."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import Kubectl

from tests.support import kvstore_manifest, put, settled


async def backup(kubectl: Kubectl, job: str) -> str:
    """Start a backup now, as `kubectl create job --from=cronjob/...` does, and its log once
    it completed."""
    await kubectl.run("create", "job", job, "--from=cronjob/kv-backup")
    await kubectl.run("wait", "--for=condition=Complete", f"job/{job}", "--timeout=30s", timeout=40)
    return (await kubectl.run("logs", f"job/{job}")).out


async def test_a_backup_copies_the_first_members_keys_into_the_backup_volume(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(kvstore_manifest("kv", replicas=1, backup="0 3 * * *"))
    await settled(kubectl, "kv", 1)
    await kubectl.run("wait", "--for=create", "cronjob/kv-backup", "--timeout=20s", timeout=30)
    await put(kubectl, "kv-0", "colour", "red")
    await put(kubectl, "kv-0", "shape", "square")

    first = await backup(kubectl, "backup-1")
    assert "backup backup-1: 2 keys of member kv-0 to " in first
    assert "(1 backups kept)" in first

    # The backup volume outlives each Job: the next one finds the first backup there.
    await put(kubectl, "kv-0", "size", "large")
    second = await backup(kubectl, "backup-2")
    assert "backup backup-2: 3 keys of member kv-0 to " in second
    assert "(2 backups kept)" in second

    # The Jobs' pods are not members: the store still counts one.
    job = await kubectl.json("get", "job", "backup-1")
    assert job["metadata"]["ownerReferences"][0]["name"] == "kv-backup"
    pods = await kubectl.json("get", "pods", "-l", "app.kubernetes.io/instance=kv")
    roles = sorted(p["metadata"]["labels"]["app.kubernetes.io/name"] for p in pods["items"])
    assert roles == ["kvstore", "kvstore-backup", "kvstore-backup"]
    found = await settled(kubectl, "kv", 1)
    assert [m["name"] for m in found["members"]] == ["kv-0"]
