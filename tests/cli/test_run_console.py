"""`kubeforge run` serves the console of the cluster it runs against, with the project's
own reconciles on the timeline: the cnat example against `kubeforge dev`, both processes
of their own, as a user runs them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from kubeforge.testing import eventually
from tests.support import ROOT
from tests.support.console import logged_in, run_against_dev

CNAT = ROOT / "examples" / "cnat"


def at(name: str) -> str:
    """An At whose time has come: its pod is made at once."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return orjson.dumps(
        {
            "apiVersion": "cnat.kubeforge.dev/v1",
            "kind": "At",
            "metadata": {"name": name},
            "spec": {"schedule": now, "command": ["echo", "YAY"]},
        }
    ).decode()


async def test_run_shows_the_projects_reconciles_and_what_they_made(tmp_path: Path) -> None:
    async with run_against_dev(CNAT, tmp_path) as (run, kubectl):
        url, token = await run.console()
        session = await logged_in(url, token)
        try:
            async with session.get(f"{url}/api/overview") as reply:
                overview = await reply.json()
            assert overview["managers"] == ["cnat"]
            assert any(k["key"] == "cnat.kubeforge.dev/v1/At" for k in overview["kinds"])
            await kubectl.apply(at("hello"))

            async def pod_made() -> list[dict[str, Any]]:
                async with session.get(f"{url}/api/timeline") as reply:
                    entries = (await reply.json())["entries"]
                reconciles = [
                    e for e in entries if e["type"] == "reconcile" and e["manager"] == "cnat"
                ]
                assert any(
                    w["kind"] == "v1/Pod" and w["verb"] == "create"
                    for e in reconciles
                    for w in e["writes"]
                ), reconciles
                return reconciles

            reconciles = await eventually(pod_made, timeout=30)
            first = reconciles[0]
            assert (first["controller"], first["name"]) == ("at", "hello")
            # Woken by kubectl's apply, which the cluster's watch reported.
            assert first["triggers"][0]["event"] == "ADDED"

            async def pod_owned() -> bool:
                params = {"kind": "cnat.kubeforge.dev/v1/At", "name": "hello"}
                params["namespace"] = "default"
                async with session.get(f"{url}/api/object", params=params) as reply:
                    page = await reply.json()
                kinds = sorted(n["shortKind"] for n in page["graph"]["nodes"])
                return kinds == ["At", "Pod"]

            await eventually(pod_owned, timeout=30)
        finally:
            await session.close()
