"""`kubeforge run` serves a project's conversion webhook from this machine and points the CRDs
it converts at it while it runs (the cnat example: At v1 and v1alpha1)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from kubeforge import Client
from kubeforge.testing import Kubectl, eventually
from tests.cli.test_cli_project import KUBEFORGE, kubeforge
from tests.support import ROOT

CNAT = ROOT / "examples" / "cnat"
CRD = "ats.cnat.kubeforge.dev"
CRD_KIND = "apiextensions.k8s.io/v1/CustomResourceDefinition"
OLD_AT = """
apiVersion: cnat.kubeforge.dev/v1alpha1
kind: At
metadata: {name: old}
spec: {schedule: "2099-01-01T00:00:00Z", command: "echo  'from the past'"}
"""


async def _store_in(kubectl: Kubectl, version: str) -> None:
    crd: dict[str, Any] = json.loads((await kubectl.run("get", "crd", CRD, "-o", "json")).out)
    for entry in crd["spec"]["versions"]:
        entry["storage"] = entry["name"] == version
    await kubectl.run("replace", "-f", "-", stdin=json.dumps(crd))


async def test_run_converts_ats_stored_in_v1alpha1_for_its_v1_controller(
    kubeconfig: Path, kubectl: Kubectl, api: Client
) -> None:
    installed = await kubeforge("install", "--dir", str(CNAT), "--kubeconfig", str(kubeconfig))
    assert installed.code == 0, installed.err
    service_config = (await api.get(CRD_KIND, CRD))["spec"]["conversion"]
    # An At stored as v1alpha1 (its storage version then): the controller's cache lists Ats
    # as v1, which the conversion webhook must answer before the caches can sync.
    await _store_in(kubectl, "v1alpha1")
    await kubectl.run("apply", "-f", "-", stdin=OLD_AT)
    await _store_in(kubectl, "v1")

    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "run",
        "--dir",
        str(CNAT),
        "--kubeconfig",
        str(kubeconfig),
        "--health-probe-bind-address",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:

        async def pending_or_exited() -> bool:
            if proc.returncode is not None:
                return True
            at = await api.get("cnat.kubeforge.dev/v1/At", "old", namespace="default")
            return bool((at.get("status") or {}).get("phase") == "PENDING")

        await eventually(pending_or_exited, timeout=60)
        assert proc.returncode is None, "kubeforge run exited early"
        client_config = (await api.get(CRD_KIND, CRD))["spec"]["conversion"]["webhook"][
            "clientConfig"
        ]
        assert client_config["url"].startswith("https://127.0.0.1:")
        assert client_config["url"].endswith("/convert")
        at = await api.get("cnat.kubeforge.dev/v1/At", "old", namespace="default")
        assert at["spec"]["command"] == ["echo", "from the past"]
        old = await api.get("cnat.kubeforge.dev/v1alpha1/At", "old", namespace="default")
        assert old["spec"]["command"] == "echo  'from the past'"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out.decode()
    # The CRD converts through its own Service again.
    assert (await api.get(CRD_KIND, CRD))["spec"]["conversion"] == service_config
