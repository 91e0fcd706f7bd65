"""A minimal Kopf operator runs against the embedded server unchanged."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import kopf
import pytest

from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually
from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

MERGE = "application/merge-patch+json"


@pytest.fixture(autouse=True)
def quiet_kopf() -> None:
    logging.getLogger("kopf").setLevel(logging.WARNING)


async def test_kopf_operator_sees_create_and_update_and_patches_status(
    server: APIServer, http: HTTPClient
) -> None:
    assert (await http.post(CRDS, widget_crd())).status == 201
    registry = kopf.OperatorRegistry()
    seen: list[tuple[str, int]] = []

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=server.url,
            ca_data=base64.b64encode(server.ca_pem),
            token=server.token,
            default_namespace="default",
        )

    @kopf.on.create("example.com", "v1", "widgets", registry=registry)
    def created(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        seen.append(("create", spec["size"]))
        patch.status["phase"] = f"created-{spec['size']}"

    @kopf.on.update("example.com", "v1", "widgets", registry=registry)
    def updated(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        seen.append(("update", spec["size"]))
        patch.status["phase"] = f"updated-{spec['size']}"

    stop = asyncio.Event()
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    operator = asyncio.create_task(
        kopf.operator(
            registry=registry, clusterwide=True, standalone=True, stop_flag=stop, settings=settings
        )
    )
    try:
        assert (await http.post(WIDGETS, widget("w", size=2))).status == 201

        async def phase_is(value: str) -> bool:
            obj = (await http.get(f"{WIDGETS}/w")).json()
            return bool((obj.get("status") or {}).get("phase") == value)

        await eventually(lambda: phase_is("created-2"), timeout=30)
        await http.patch(f"{WIDGETS}/w", {"spec": {"size": 5}}, MERGE)
        await eventually(lambda: phase_is("updated-5"), timeout=30)
        assert seen == [("create", 2), ("update", 5)]
        obj = (await http.get(f"{WIDGETS}/w")).json()
        assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]
    finally:
        stop.set()
        await asyncio.wait_for(operator, 30)
