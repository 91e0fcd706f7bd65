"""At's two versions through the API server, with kubectl: written as one and read as the
other (the manager's conversion webhook converts), watched in either, and moved to v1 for good
by `kubeforge migrate-storage`."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

import kubeforge
import pytest
from kubeforge.testing import Kubectl

from tests.test_at import at_manifest, v1_manifest

CRD = "ats.cnat.kubeforge.dev"
V1 = "ats.v1.cnat.kubeforge.dev"
V1ALPHA1 = "ats.v1alpha1.cnat.kubeforge.dev"
DEPRECATED = "Warning: cnat.kubeforge.dev/v1alpha1 At is deprecated; use cnat.kubeforge.dev/v1 At"
LATER = 3600.0  # a schedule the tests never reach: the Ats stay PENDING


async def test_an_at_written_as_v1alpha1_reads_as_v1_with_its_arguments(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    # Two blanks and quotes: joining the arguments again would spell the line differently.
    line = "echo  'hello world'"
    applied = await kubectl.apply(at_manifest("two", json.dumps(line), in_seconds=LATER))
    assert DEPRECATED in applied.err

    # `at` is the preferred version, v1: the argument list the pod will run.
    at = await kubectl.json("get", "at", "two")
    assert at["apiVersion"] == "cnat.kubeforge.dev/v1"
    assert at["spec"]["command"] == ["echo", "hello world"]
    # In v1alpha1, the line as it was written.
    old = await kubectl.json("get", V1ALPHA1, "two")
    assert old["apiVersion"] == "cnat.kubeforge.dev/v1alpha1"
    assert old["spec"]["command"] == line
    listed = await kubectl.json("get", V1ALPHA1)
    assert [i["spec"]["command"] for i in listed["items"]] == [line]

    # An At written as v1 reads as a command line, quoted as a shell needs it.
    await kubectl.apply(v1_manifest("args", ["echo", "it's", "a b"], in_seconds=LATER))
    old = await kubectl.json("get", V1ALPHA1, "args")
    assert old["spec"]["command"] == """echo 'it'"'"'s' 'a b'"""
    wide = (await kubectl.run("get", V1ALPHA1, "args", "-o", "wide")).rows()
    assert wide[1][2] == """echo 'it'"'"'s' 'a b'"""


async def _line_with(process: asyncio.subprocess.Process, text: str, timeout: float = 20) -> str:
    """The first line `process` prints that contains `text`."""
    assert process.stdout is not None

    async def read() -> str:
        assert process.stdout is not None
        while True:
            line = (await process.stdout.readline()).decode()
            if not line:
                raise AssertionError(f"the watch ended before printing {text!r}")
            if text in line:
                return line.strip()

    return await asyncio.wait_for(read(), timeout)


# A watch in the version the manager's webhook converts to ends when the manager (and so
# the webhook) goes away, as it would in a cluster with one replica.
@pytest.mark.kubeforge_explore(skip=["crash"], reason="its kubectl watches go through the webhook")
async def test_a_watch_in_either_version_sees_writes_in_the_other(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    shown = "-o=jsonpath={.metadata.name}={.spec.command}{'\\n'}"
    old_watch = await kubectl.start("get", V1ALPHA1, "--watch", shown)
    new_watch = await kubectl.start("get", V1, "--watch", shown)
    # kubectl's own table, its columns those of v1alpha1.
    table_watch = await kubectl.start("get", V1ALPHA1, "--watch", "-o", "wide")
    try:
        await kubectl.apply(v1_manifest("from-v1", ["echo", "from v1"], in_seconds=LATER))
        assert await _line_with(old_watch, "from-v1=") == "from-v1=echo 'from v1'"
        row = (await _line_with(table_watch, "from-v1 ")).split()
        assert row[0] == "from-v1" and "echo 'from v1'" in " ".join(row)
        await kubectl.apply(at_manifest("from-v1alpha1", "echo from v1alpha1", in_seconds=LATER))
        assert await _line_with(new_watch, "from-v1alpha1=") == (
            'from-v1alpha1=["echo","from","v1alpha1"]'
        )
        # And each sees the other's changes, converted.
        await kubectl.run(
            "patch", "at", "from-v1", "--type=merge", "-p", '{"spec":{"command":["echo","new"]}}'
        )
        assert await _line_with(old_watch, "from-v1=echo new") == "from-v1=echo new"
    finally:
        for process in (old_watch, new_watch, table_watch):
            process.kill()
            await process.wait()


async def _crd(kubectl: Kubectl) -> dict[str, Any]:
    crd: dict[str, Any] = await kubectl.json("get", "crd", CRD)
    return crd


async def _store_in(kubectl: Kubectl, version: str) -> None:
    """Make `version` the CRD's storage version."""
    crd = await _crd(kubectl)
    for entry in crd["spec"]["versions"]:
        entry["storage"] = entry["name"] == version
    await kubectl.run("replace", "-f", "-", stdin=json.dumps(crd))


async def _migrate(kubectl: Kubectl) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubeforge",
        "migrate-storage",
        CRD,
        "--chunk-size",
        "2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=kubectl.environment(),
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, out.decode()
    return out.decode()


# The test replaces the CRD, in which a (re)started manager registers its conversion webhook.
@pytest.mark.kubeforge_explore(skip=["crash"], reason="it replaces the CRD the manager updates")
async def test_the_storage_migration_moves_old_ats_to_v1(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    # Ats written while v1alpha1 was the storage version stay stored as v1alpha1 after v1
    # becomes the storage version again, and readable in both.
    await _store_in(kubectl, "v1alpha1")
    for i in range(3):
        await kubectl.apply(at_manifest(f"old-{i}", f"echo old {i}", in_seconds=LATER))
    await _store_in(kubectl, "v1")
    assert (await _crd(kubectl))["status"]["storedVersions"] == ["v1", "v1alpha1"]
    await kubectl.apply(v1_manifest("new", ["echo", "new"], in_seconds=LATER))
    listed = await kubectl.json("get", "ats")
    assert [i["spec"]["command"] for i in listed["items"]] == [
        ["echo", "new"],
        ["echo", "old", "0"],
        ["echo", "old", "1"],
        ["echo", "old", "2"],
    ]

    # v1alpha1 cannot leave the CRD while objects may be stored in it.
    crd = await _crd(kubectl)
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    refused = await kubectl.run("replace", "-f", "-", stdin=json.dumps(crd), check=False)
    assert refused.code != 0
    assert (
        'status.storedVersions[1]: Invalid value: "v1alpha1": missing from spec.versions; '
        "v1alpha1 was previously a storage version"
    ) in refused.err

    # The controller keeps running meanwhile; what it writes is stored as v1 already, and
    # a write of the migration's that conflicts with one of its is read again and retried.
    out = await _migrate(kubectl)
    assert f"migrating {CRD} to v1 (stored versions: v1, v1alpha1)" in out
    counts = re.search(r"4/4 objects  rewritten (\d+)  already v1 (\d+)\n", out)
    assert counts is not None, out
    assert int(counts[1]) + int(counts[2]) == 4 and int(counts[1]) >= 1, out
    assert "status.storedVersions: v1, v1alpha1 -> v1" in out
    assert (await _crd(kubectl))["status"]["storedVersions"] == ["v1"]

    # Run again, it finds everything in v1.
    again = await _migrate(kubectl)
    assert "4/4 objects  rewritten 0  already v1 4" in again
    assert "status.storedVersions: v1 (already)" in again

    # Now v1alpha1 can go: every At is stored as v1 (one still stored as v1alpha1 could no
    # longer be read).
    crd = await _crd(kubectl)
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    await kubectl.run("replace", "-f", "-", stdin=json.dumps(crd))
    listed = await kubectl.json("get", "ats")
    assert len(listed["items"]) == 4
