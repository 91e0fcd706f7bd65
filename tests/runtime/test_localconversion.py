"""A manager's conversion webhook, served from this machine, converting for the API server.

TestEnv points the CRDs of the kinds the manager converts at its webhook server as soon as
that server answers (before the caches list anything), and gives them back their conversion
afterwards; the development cluster's API server then converts Robots between v1 (stored)
and the versions the controller and clients ask for.
"""

from __future__ import annotations

from typing import Any

import kubeforge
from kubeforge._api.crd import crd_for
from kubeforge._runtime.localconversion import conversion_crds
from kubeforge.testing import TestEnv, eventually
from tests.webhook.test_conversion import (
    COLOR,
    GROUP,
    Robot,
    RobotSpec,
    RobotV1alpha1,
    RobotV1beta1,
)

CRD = f"robots.{GROUP}"
CRD_KIND = "apiextensions.k8s.io/v1/CustomResourceDefinition"


class Recorder(kubeforge.Reconciler):
    """Reads each Robot as v1beta1 and remembers what it saw."""

    def __init__(self) -> None:
        self.seen: dict[str, RobotV1beta1] = {}

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        robot = await self.client.get(RobotV1beta1, request.name, namespace=request.namespace)
        self.seen[request.name] = robot
        return None


def conversion_of(crd: dict[str, Any]) -> dict[str, Any]:
    conversion: dict[str, Any] = crd["spec"]["conversion"]
    return conversion


async def test_the_manager_converts_for_the_api_server_while_it_runs() -> None:
    crd = crd_for([Robot, RobotV1beta1, RobotV1alpha1])
    recorder = Recorder()

    def setup(manager: kubeforge.Manager) -> None:
        manager.controller().for_(RobotV1beta1).complete(recorder)
        manager.webhook_for(Robot).complete()

    async with TestEnv(crd_paths=()) as env:
        await env.client.apply(crd, force=True)
        await env.client.wait_established([CRD])
        installed = conversion_of(await env.client.get(CRD_KIND, CRD))
        assert installed["webhook"]["clientConfig"]["service"]["name"] == "webhook-service"
        # Stored as v1 before any manager runs; the controller's cache lists v1beta1.
        await env.client.create(
            Robot(
                metadata=kubeforge.ObjectMeta(name="r2", namespace="default"),
                spec=RobotSpec(name="r2", arms=3, color="blue"),
            )
        )

        async with env.run_manager(setup) as manager:
            assert conversion_crds(manager.webhook_server) == {CRD: "/convert"}
            config = conversion_of(await env.client.get(CRD_KIND, CRD))["webhook"]
            assert config["clientConfig"]["url"] == manager.webhook_server.url + "/convert"
            assert "service" not in config["clientConfig"] and config["clientConfig"]["caBundle"]

            async def seen() -> bool:
                return "r2" in recorder.seen

            await eventually(seen)
            robot = recorder.seen["r2"]
            assert robot.api_version == f"{GROUP}/v1beta1"
            assert robot.spec.arms == 3
            # v1beta1 has no color: the conversion keeps it in an annotation.
            assert robot.metadata.annotations == {COLOR: '"blue"'}

            # Written as v1alpha1, stored as v1: the colour a v1alpha1 object lacks is not
            # lost.
            old = await env.client.get(RobotV1alpha1, "r2", namespace="default")
            assert old.spec.title == "r2"
            old.spec.limbs = 4
            await env.client.update(old)
            stored = await env.client.get(Robot, "r2", namespace="default")
            assert (stored.spec.arms, stored.spec.color) == (4, "blue")

        # The CRD has its own conversion back once the manager is gone.
        assert conversion_of(await env.client.get(CRD_KIND, CRD)) == installed
