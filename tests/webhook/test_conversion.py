"""The manager's conversion webhook over HTTPS: ConversionReviews as kube-apiserver sends them.

Robot has three versions: v1 (the hub), v1beta1 and v1alpha1 (spokes). Neither spoke has v1's
color, which they keep in an annotation, so any trip through them gives the color back.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import aiohttp
import orjson
import pytest

import kubeforge
import kubeforge.conversion
import kubeforge.webhook
from kubeforge._apiserver.tls import generate_certificates
from kubeforge._testing.metrics import metric_value
from kubeforge.client import load_kubeconfig
from tests.webhook.test_server import write_certs

GROUP = "robots.kubeforge.dev"
COLOR = f"{GROUP}/color"
UID = "0b5a3c1e-0000-4000-8000-00000000c0de"


class RobotSpec(kubeforge.Model):
    name: str
    arms: int = 2
    color: str | None = None


class OldRobotSpec(kubeforge.Model):
    name: str
    arms: int = 2


class AncientRobotSpec(kubeforge.Model):
    title: str
    limbs: int = 2


class RobotStatus(kubeforge.Model):
    ready: bool = False


@kubeforge.resource(group=GROUP, version="v1")
class Robot(kubeforge.Resource[RobotSpec, RobotStatus], kubeforge.conversion.Hub):
    """The hub and storage version."""


def _spoke_meta(hub: Robot) -> kubeforge.ObjectMeta:
    meta = hub.metadata
    if hub.spec.color is not None:
        spoke = Robot(metadata=meta, spec=hub.spec)
        kubeforge.conversion.stash(spoke, COLOR, hub.spec.color)
        meta = spoke.metadata
    return meta


@kubeforge.resource(group=GROUP, version="v1beta1", kind="Robot", storage=False)
class RobotV1beta1(
    kubeforge.Resource[OldRobotSpec, RobotStatus], kubeforge.conversion.Convertible[Robot]
):
    def to_hub(self) -> Robot:
        if self.spec.arms == 13:
            raise ZeroDivisionError("unlucky")  # a bug in a conversion
        hub = Robot(
            metadata=self.metadata,
            spec=RobotSpec(name=self.spec.name, arms=self.spec.arms),
            status=self.status,
        )
        hub.spec.color = kubeforge.conversion.unstash(hub, COLOR)
        return hub

    @classmethod
    def from_hub(cls, hub: Robot) -> Self:
        return cls(
            metadata=_spoke_meta(hub),
            spec=OldRobotSpec(name=hub.spec.name, arms=hub.spec.arms),
            status=hub.status,
        )


@kubeforge.resource(group=GROUP, version="v1alpha1", kind="Robot", storage=False)
class RobotV1alpha1(
    kubeforge.Resource[AncientRobotSpec, RobotStatus], kubeforge.conversion.Convertible[Robot]
):
    def to_hub(self) -> Robot:
        hub = Robot(
            metadata=self.metadata,
            spec=RobotSpec(name=self.spec.title, arms=self.spec.limbs),
            status=self.status,
        )
        hub.spec.color = kubeforge.conversion.unstash(hub, COLOR)
        return hub

    @classmethod
    def from_hub(cls, hub: Robot) -> Self:
        if len(hub.spec.name) > 10:
            raise kubeforge.conversion.ConversionError("v1alpha1 titles have at most 10 characters")
        return cls(
            metadata=_spoke_meta(hub),
            spec=AncientRobotSpec(title=hub.spec.name, limbs=hub.spec.arms),
            status=hub.status,
        )


def robot(version: str, name: str = "r1", /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Robot",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "labels": {"team": "a"},
        },
        "spec": spec,
        "status": {"ready": True},
    }


def review(desired: str, *objects: dict[str, Any], uid: str = UID) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": list(objects)},
    }


@dataclass
class Converter:
    manager: kubeforge.Manager
    server: kubeforge.webhook.WebhookServer
    session: aiohttp.ClientSession

    async def post(self, body: bytes, path: str = "/convert") -> tuple[int, dict[str, Any]]:
        async with self.session.post(
            self.server.url + path, data=body, headers={"Content-Type": "application/json"}
        ) as reply:
            return reply.status, orjson.loads(await reply.read())

    async def convert(self, body: dict[str, Any]) -> dict[str, Any]:
        status, answer = await self.post(orjson.dumps(body))
        assert status == 200, answer
        assert answer["apiVersion"] == body["apiVersion"]
        assert answer["kind"] == "ConversionReview"
        assert "request" not in answer
        assert answer["response"]["uid"] == body["request"]["uid"]
        response: dict[str, Any] = answer["response"]
        return response

    async def objects(self, desired: str, *objects: dict[str, Any]) -> list[dict[str, Any]]:
        response = await self.convert(review(desired, *objects))
        assert response["result"] == {"metadata": {}, "status": "Success"}, response
        converted: list[dict[str, Any]] = response["convertedObjects"]
        return converted

    async def failure(self, body: dict[str, Any]) -> str:
        response = await self.convert(body)
        assert response["result"]["status"] == "Failure"
        assert response["convertedObjects"] is None
        message: str = response["result"]["message"]
        return message


@pytest.fixture
async def converter(kubeconfig: Path, tmp_path: Path) -> AsyncIterator[Converter]:
    certs = generate_certificates()
    write_certs(tmp_path / "certs", certs)
    server = kubeforge.webhook.WebhookServer(host="127.0.0.1", port=0, cert_dir=tmp_path / "certs")
    manager = kubeforge.Manager(
        load_kubeconfig(kubeconfig), webhook_server=server, metrics_bind_address="127.0.0.1:0"
    )
    # The hub and a spoke both registered: one conversion webhook, at /convert.
    manager.webhook_for(Robot).complete()
    manager.webhook_for(RobotV1alpha1).complete()
    task = asyncio.create_task(manager.start())
    try:
        running = asyncio.create_task(manager.running.wait())
        await asyncio.wait({task, running}, return_when=asyncio.FIRST_COMPLETED)
        running.cancel()
        if task.done():
            task.result()
        context = ssl.create_default_context(cadata=certs.ca_pem.decode())
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
            yield Converter(manager, server, session)
    finally:
        manager.stop()
        await task


async def test_a_spoke_converts_to_the_hub_keeping_its_metadata(converter: Converter) -> None:
    (converted,) = await converter.objects(f"{GROUP}/v1", robot("v1alpha1", title="Ada", limbs=4))
    assert converted == {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Robot",
        "metadata": robot("v1", "r1")["metadata"],
        "spec": {"name": "Ada", "arms": 4},
        "status": {"ready": True},
    }


async def test_every_object_of_a_review_is_converted_in_order(converter: Converter) -> None:
    objects = [
        robot("v1alpha1", "a", title="A", limbs=1),
        robot("v1beta1", "b", name="B", arms=2),
        robot("v1", "c", name="C", arms=3, color="red", extra="kept as it is"),
        robot("v1alpha1", "d", title="D", limbs=4),
    ]
    converted = await converter.objects(f"{GROUP}/v1", *objects)
    assert [(o["metadata"]["name"], o["apiVersion"]) for o in converted] == [
        (name, f"{GROUP}/v1") for name in "abcd"
    ]
    assert [o["spec"]["arms"] for o in converted] == [1, 2, 3, 4]
    # An object already in the desired version comes back untouched.
    assert converted[2] == objects[2]


async def test_spokes_convert_into_each_other_through_the_hub_losing_nothing(
    converter: Converter,
) -> None:
    original = robot("v1", name="Grace", arms=6, color="teal")
    (ancient,) = await converter.objects(f"{GROUP}/v1alpha1", original)
    assert ancient["spec"] == {"title": "Grace", "limbs": 6}
    assert ancient["metadata"]["annotations"] == {COLOR: '"teal"'}
    # v1alpha1 -> v1beta1 goes through v1; the color travels in the annotation.
    (old,) = await converter.objects(f"{GROUP}/v1beta1", ancient)
    assert old["apiVersion"] == f"{GROUP}/v1beta1"
    assert old["spec"] == {"name": "Grace", "arms": 6}
    assert old["metadata"]["annotations"] == {COLOR: '"teal"'}
    (back,) = await converter.objects(f"{GROUP}/v1", old)
    assert back == original


async def test_a_refused_conversion_fails_the_review_with_its_message(
    converter: Converter,
) -> None:
    body = review(
        f"{GROUP}/v1alpha1",
        robot("v1", "fine", name="Short"),
        robot("v1", "long", name="Much too long a name"),
    )
    message = await converter.failure(body)
    assert message == (
        f'cannot convert Robot "default/long" from {GROUP}/v1 to {GROUP}/v1alpha1: '
        "v1alpha1 titles have at most 10 characters"
    )
    assert (
        metric_value(converter.manager, "controller_runtime_conversion_webhook_panics_total") == 0
    )


async def test_objects_the_webhook_cannot_convert_are_named(converter: Converter) -> None:
    v1 = f"{GROUP}/v1"
    assert await converter.failure(review(f"{GROUP}/v2", robot("v1", name="x"))) == (
        f'cannot convert Robot "default/r1" to {GROUP}/v2: not a version of Robot.{GROUP} '
        "(it has v1, v1alpha1, v1beta1)"
    )
    # Another group's version, even of the same kind name, is not one of Robot's.
    other_group = review("other.kubeforge.dev/v1", robot("v1beta1", name="x"))
    assert "not a version of Robot" in await converter.failure(other_group)
    assert await converter.failure(review(v1, robot("v3", name="x"))) == (
        f"{GROUP}/v3 is not a version of Robot (it has v1, v1alpha1, v1beta1)"
    )
    gadget = {"apiVersion": "gadgets.kubeforge.dev/v1", "kind": "Gadget", "metadata": {}}
    assert await converter.failure(review(v1, gadget)) == (
        "no conversion is registered for Gadget.gadgets.kubeforge.dev (gadgets.kubeforge.dev/v1)"
    )
    unreadable = robot("v1beta1", name="x", arms="many")
    assert await converter.failure(review(v1, unreadable)) == (
        f'cannot read Robot "default/r1" as {GROUP}/v1beta1: spec.arms: Input should be a '
        "valid integer, unable to parse string as an integer"
    )
    assert await converter.failure(review(v1, {"kind": "Robot"})) == (
        "request.objects[0] has no apiVersion and kind"
    )
    assert await converter.failure(review(v1, robot("v1beta1", name="x"), "robot")) == (
        "request.objects[1] is not an object"
    )
    no_desired = review(v1, robot("v1beta1", name="x"))
    del no_desired["request"]["desiredAPIVersion"]
    assert await converter.failure(no_desired) == (
        "malformed ConversionReview: request.desiredAPIVersion: required"
    )
    # An empty list of objects is nothing to convert.
    assert await converter.objects(v1) == []


async def test_a_bug_in_a_conversion_is_an_internal_error_and_counted(
    converter: Converter,
) -> None:
    message = await converter.failure(review(f"{GROUP}/v1", robot("v1beta1", name="x", arms=13)))
    assert message == (
        f'internal error occurred during conversion of Robot "default/r1" from {GROUP}/v1beta1 '
        f"to {GROUP}/v1: ZeroDivisionError: unlucky"
    )
    assert (
        metric_value(converter.manager, "controller_runtime_conversion_webhook_panics_total") == 1
    )
    # The admission webhooks' panic counter is another one.
    assert metric_value(converter.manager, "controller_runtime_webhook_panics_total") == 0


async def test_malformed_reviews_are_bad_requests_that_say_why(converter: Converter) -> None:
    good = review(f"{GROUP}/v1", robot("v1alpha1", title="x"))
    no_request = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}
    no_uid = copy.deepcopy(good)
    del no_uid["request"]["uid"]
    admission = {**good, "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    cases = [
        (b"", "request body is empty"),
        (b"{not json", "cannot decode the ConversionReview: "),
        (b"[1, 2]", "cannot decode the ConversionReview: the body is not a JSON object"),
        (
            orjson.dumps(admission),
            "expected a ConversionReview of apiextensions.k8s.io/v1 or "
            "apiextensions.k8s.io/v1beta1, got kind 'AdmissionReview' of apiVersion "
            "'admission.k8s.io/v1'",
        ),
        (orjson.dumps(no_request), "the ConversionReview has no request"),
        (orjson.dumps(no_uid), "malformed ConversionReview: request.uid: required"),
    ]
    for body, message in cases:
        status, answer = await converter.post(body)
        assert status == 400, body
        assert answer["kind"] == "Status" and answer["apiVersion"] == "v1"
        assert answer["status"] == "Failure"
        assert answer["reason"] == "BadRequest" and answer["code"] == 400
        assert answer["message"].startswith(message), (body, answer["message"])
    # v1beta1 reviews (the same shape) are answered in kind.
    beta = {**good, "apiVersion": "apiextensions.k8s.io/v1beta1"}
    response = await converter.convert(beta)
    assert response["result"]["status"] == "Success"


async def test_a_review_over_the_limit_is_refused(
    converter: Converter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kubeforge._webhook.server.MAX_CONVERSION_REVIEW_BYTES", 1000)
    body = orjson.dumps(
        review(f"{GROUP}/v1", *[robot("v1alpha1", f"r{i}", title="x") for i in range(20)])
    )
    status, answer = await converter.post(body)
    assert status == 413
    assert answer["reason"] == "RequestEntityTooLarge"
    assert answer["message"] == "request entity is too large; limit is 1000 bytes"


async def test_the_conversion_path_has_controller_runtimes_webhook_metrics(
    converter: Converter,
) -> None:
    manager = converter.manager

    def requests(code: str) -> float | None:
        return metric_value(
            manager, "controller_runtime_webhook_requests_total", webhook="/convert", code=code
        )

    # Published at zero on registration, as controller-runtime's InstrumentedHook does.
    assert (requests("200"), requests("500")) == (0, 0)
    await converter.objects(f"{GROUP}/v1", robot("v1alpha1", title="x"))
    await converter.failure(review(f"{GROUP}/v1", robot("v1beta1", name="x", arms=13)))
    await converter.post(b"")
    assert (requests("200"), requests("400")) == (2, 1)
    latency = metric_value(
        manager, "controller_runtime_webhook_latency_seconds_count", webhook="/convert"
    )
    assert latency == 3
    in_flight = metric_value(
        manager, "controller_runtime_webhook_requests_in_flight", webhook="/convert"
    )
    assert in_flight == 0
    host, port = manager.bound["metrics"]
    async with aiohttp.ClientSession() as plain, plain.get(f"http://{host}:{port}/metrics") as r:
        text = await r.text()
    assert "controller_runtime_conversion_webhook_panics_total 1" in text
    assert 'controller_runtime_webhook_requests_total{code="400",webhook="/convert"} 1' in text


async def test_registration(converter: Converter) -> None:
    server = converter.server
    (entry,) = [hook for hook in server.webhooks if hook.conversion]
    assert entry.path == "/convert"
    assert isinstance(entry.handler, kubeforge.conversion.ConversionWebhook)
    (versions,) = entry.handler.kinds
    assert (versions.hub, sorted(versions.spokes)) == (Robot, ["v1alpha1", "v1beta1"])
    assert server.specs() == []  # nothing for the admission configurations
    # Registering the kind again (through any version) changes nothing.
    assert server.register_conversion(RobotV1beta1) is entry


async def test_registration_errors(kubeconfig: Path) -> None:
    @kubeforge.resource(group="lonely.kubeforge.dev", version="v1")
    class Lonely(kubeforge.Resource[RobotSpec, None], kubeforge.conversion.Hub):
        pass

    manager = kubeforge.Manager(load_kubeconfig(kubeconfig))
    try:
        server = manager.webhook_server
        with pytest.raises(ValueError, match="Lonely: its kind has no versions to convert"):
            server.register_conversion(Lonely)
        with pytest.raises(ValueError, match=r"webhook_for\(Lonely\) needs a defaulter"):
            manager.webhook_for(Lonely).complete()
        server.register("/convert", lambda request: kubeforge.webhook.AdmissionResponse.allow())
        with pytest.raises(ValueError, match="/convert already serves an admission webhook"):
            server.register_conversion(Robot)
        assert not server.webhooks[0].conversion
    finally:
        await manager.api_reader.close()


async def test_a_large_list_page_is_converted(converter: Converter) -> None:
    # More than an AdmissionReview may hold (7 MiB): a page of 1,000 objects, one of them big.
    objects = [robot("v1alpha1", f"r{i}", title=f"t{i}", limbs=i) for i in range(1000)]
    objects[500]["metadata"]["annotations"] = {"big": "x" * (8 * 1024 * 1024)}
    converted = await converter.objects(f"{GROUP}/v1", *objects)
    assert [o["spec"]["arms"] for o in converted] == list(range(1000))
    assert converted[500]["metadata"]["annotations"]["big"] == "x" * (8 * 1024 * 1024)
