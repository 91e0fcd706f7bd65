"""The manager's webhook server over HTTPS: real AdmissionReviews in, AdmissionReviews out.

Defaulters' patches are applied with the API server's own JSON Patch code; denials, warnings,
raw handlers, malformed reviews, certificate rotation, metrics and readiness are checked as an
API server (or a person with curl) would see them.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from cryptography import x509

import kubeforge
import kubeforge.webhook
from kubeforge._apiserver.storage.patch import apply_json_patch
from kubeforge._apiserver.tls import ServingCertificates, generate_certificates
from kubeforge._testing.metrics import metric_value
from kubeforge._webhook.review import MAX_REVIEW_BYTES
from kubeforge.client import load_kubeconfig
from kubeforge.models.core_v1 import Pod
from kubeforge.testing import eventually

GROUP = "hooks.kubeforge.dev"
MUTATE = "/mutate-hooks-kubeforge-dev-v1-gadget"
VALIDATE = "/validate-hooks-kubeforge-dev-v1-gadget"


class GadgetSpec(kubeforge.Model):
    size: int = 1
    color: str | None = None
    tags: list[str] = []


@kubeforge.resource(group=GROUP, version="v1")
class Gadget(kubeforge.Resource[GadgetSpec, None]):
    """A gadget, to be defaulted and validated."""


@kubeforge.webhook.admission_webhook(verbs=["create", "update"], failure_policy="Ignore")
class GadgetDefaulter(kubeforge.webhook.Defaulter[Gadget]):
    """A plain `def`: runs in a worker thread."""

    def default(self, gadget: Gadget) -> kubeforge.webhook.Warnings | None:
        if gadget.spec.color is None:
            gadget.spec.color = "blue"
        if "defaulted" not in gadget.spec.tags:
            gadget.spec.tags.append("defaulted")
        if kubeforge.webhook.admission_request().dry_run:
            return ["defaulted in a dry run"]
        return ["color defaulted"] if gadget.spec.color == "blue" else None


@kubeforge.webhook.admission_webhook(verbs=["create", "update", "delete"], timeout_seconds=5)
class GadgetValidator(kubeforge.webhook.Validator[Gadget]):
    """Sync and async checks side by side."""

    def validate_create(self, gadget: Gadget) -> kubeforge.webhook.Warnings | None:
        if gadget.spec.size > 10:
            raise kubeforge.webhook.InvalidObject(
                kubeforge.webhook.FieldError.invalid(
                    "spec.size", gadget.spec.size, "must be at most 10"
                ),
                kubeforge.webhook.FieldError.required("spec.color"),
                warnings=["sizes above 5 are deprecated"],
            )
        if gadget.spec.size > 5:
            return ["sizes above 5 are deprecated"]
        return None

    async def validate_update(self, old: Gadget, new: Gadget) -> kubeforge.webhook.Warnings | None:
        await asyncio.sleep(0)
        if new.spec.size < old.spec.size:
            user = kubeforge.webhook.admission_request().user_info.username
            raise kubeforge.webhook.Denied(f"{user} may not shrink a gadget")
        return None


class GuardedValidator(GadgetValidator):
    def validate_delete(self, gadget: Gadget) -> kubeforge.webhook.Warnings | None:
        labels = gadget.metadata.labels or {}
        if labels.get("protected") == "true":
            # An API error, as the client raises them, refuses with its own Status.
            raise kubeforge.Conflict({"message": "protected gadgets stay", "reason": "Conflict"})
        return None


async def label_configmap(cm: dict[str, Any]) -> None:
    """A defaulter as an async function, for a kind named by string (objects are dicts)."""
    cm.setdefault("metadata", {}).setdefault("labels", {})["seen-by"] = "webhook"


@kubeforge.webhook.admission_webhook(
    kind=Pod, mutating=True, verbs="create", name="sidecar.hooks.kb.io"
)
def inject_sidecar(
    request: kubeforge.webhook.AdmissionRequest,
) -> kubeforge.webhook.AdmissionResponse:
    """A raw handler for a built-in kind: the pod as it should be, turned into a patch."""
    pod = copy.deepcopy(request.object or {})
    annotations = pod.get("metadata", {}).get("annotations") or {}
    if "inject" not in annotations:
        return kubeforge.webhook.AdmissionResponse.allow()
    containers = pod["spec"]["containers"]
    containers.append({"name": "sidecar", "image": annotations["inject"]})
    return kubeforge.webhook.AdmissionResponse.patch_to(
        request.object or {}, pod, warnings=["injected"]
    )


def echo(request: kubeforge.webhook.AdmissionRequest) -> kubeforge.webhook.AdmissionResponse:
    """Tells what it was given, as warnings."""
    assert request is kubeforge.webhook.admission_request()
    options = request.options or {}
    return kubeforge.webhook.AdmissionResponse.allow(
        "seen",
        warnings=[
            f"operation={request.operation}",
            f"user={request.user_info.username} groups={','.join(request.user_info.groups)}",
            f"resource={request.resource.resource}/{request.sub_resource}",
            f"request-kind={request.request_kind.kind if request.request_kind else None}",
            f"dry-run={request.dry_run}",
            f"options={options.get('kind')}",
            f"old={(request.old_object or {}).get('spec')}",
        ],
    )


class Explodes:
    """A raw handler object whose async handle has a bug."""

    async def handle(
        self, request: kubeforge.webhook.AdmissionRequest
    ) -> kubeforge.webhook.AdmissionResponse:
        raise RuntimeError("boom")


def write_certs(directory: Path, certs: ServingCertificates) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(certs.cert_pem)
    (directory / "tls.key").write_bytes(certs.key_pem)


@dataclass
class Hooks:
    manager: kubeforge.Manager
    server: kubeforge.webhook.WebhookServer
    session: aiohttp.ClientSession
    certs: ServingCertificates
    cert_dir: Path

    async def post(
        self, path: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any]]:
        async with self.session.post(
            self.server.url + path, data=body, headers={"Content-Type": content_type}
        ) as reply:
            return reply.status, orjson.loads(await reply.read())

    async def review(self, path: str, request: dict[str, Any], **envelope: Any) -> dict[str, Any]:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        body.update(envelope)
        status, answer = await self.post(path, orjson.dumps(body))
        assert status == 200
        assert answer["kind"] == "AdmissionReview"
        assert answer["apiVersion"] == body["apiVersion"]
        assert answer["response"]["uid"] == request["uid"]
        response: dict[str, Any] = answer["response"]
        return response


def admission(
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    *,
    kind: tuple[str, str, str] = (GROUP, "v1", "Gadget"),
    resource: str = "gadgets",
    dry_run: bool = False,
    uid: str = "7c1f0f4e-0000-4000-8000-000000000001",
) -> dict[str, Any]:
    group, version, name = kind
    source = obj or old or {}
    return {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": name},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": source.get("metadata", {}).get("name", ""),
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": "jane", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }


def gadget(name: str = "g1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


def setup(manager: kubeforge.Manager) -> None:
    manager.webhook_for(Gadget).defaulter(GadgetDefaulter()).validator(
        GuardedValidator()
    ).complete()
    manager.webhook_for("v1/ConfigMap").defaulter(label_configmap).complete()
    manager.webhook_server.register("/mutate--v1-pod", inject_sidecar)
    manager.webhook_server.register("/explode", Explodes())
    manager.webhook_server.register("/echo", echo)


@pytest.fixture
async def hooks(kubeconfig: Path, tmp_path: Path) -> AsyncIterator[Hooks]:
    certs = generate_certificates()
    cert_dir = tmp_path / "serving-certs"
    write_certs(cert_dir, certs)
    server = kubeforge.webhook.WebhookServer(
        host="127.0.0.1", port=0, cert_dir=cert_dir, cert_check_interval=0.05
    )
    manager = kubeforge.Manager(
        load_kubeconfig(kubeconfig),
        webhook_server=server,
        health_probe_bind_address="127.0.0.1:0",
        metrics_bind_address="127.0.0.1:0",
    )
    setup(manager)
    task = asyncio.create_task(manager.start())
    try:
        running = asyncio.create_task(manager.running.wait())
        await asyncio.wait({task, running}, return_when=asyncio.FIRST_COMPLETED)
        running.cancel()
        if task.done():
            task.result()
        context = ssl.create_default_context(cadata=certs.ca_pem.decode())
        connector = aiohttp.TCPConnector(ssl=context)
        async with aiohttp.ClientSession(connector=connector) as session:
            yield Hooks(manager, server, session, certs, cert_dir)
    finally:
        manager.stop()
        await task


async def test_the_defaulters_patch_gives_the_defaulted_object(hooks: Hooks) -> None:
    # No size (the model's default would add one), a null and a field the model does not
    # declare: the patch must change none of them, only what the defaulter set.
    original = gadget(note=None, extra={"kept": True})
    response = await hooks.review(MUTATE, admission("CREATE", original))
    assert response["allowed"] is True
    assert response["status"] == {"metadata": {}, "code": 200}
    assert response["warnings"] == ["color defaulted"]
    defaulted = apply_json_patch(original, patch_of(response))
    assert defaulted["spec"] == {
        "note": None,
        "extra": {"kept": True},
        "color": "blue",
        "tags": ["defaulted"],
    }
    assert defaulted["metadata"] == original["metadata"]

    # Already defaulted: nothing to patch. A dry run is visible to the defaulter.
    again = await hooks.review(MUTATE, admission("UPDATE", defaulted, original, dry_run=True))
    assert again["allowed"] is True
    assert "patch" not in again and "patchType" not in again
    assert again["warnings"] == ["defaulted in a dry run"]

    # Deletions are not defaulted; an object of another kind is refused as a bad request.
    deleted = await hooks.review(MUTATE, admission("DELETE", None, original))
    assert deleted["allowed"] is True and "patch" not in deleted
    wrong = dict(original, kind="Widget")
    refused = await hooks.review(MUTATE, admission("CREATE", wrong))
    assert refused["allowed"] is False
    assert refused["status"]["code"] == 400
    assert "this webhook admits Gadget" in refused["status"]["message"]


async def test_an_async_defaulter_function_for_a_kind_named_by_string(hooks: Hooks) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    request = admission("CREATE", cm, kind=("", "v1", "ConfigMap"), resource="configmaps")
    response = await hooks.review("/mutate--v1-configmap", request)
    assert apply_json_patch(cm, patch_of(response))["metadata"]["labels"] == {"seen-by": "webhook"}


async def test_validation_denials_are_shaped_as_the_api_server_shapes_them(hooks: Hooks) -> None:
    ok = await hooks.review(VALIDATE, admission("CREATE", gadget(size=7, color="red")))
    assert ok["allowed"] is True
    assert ok["warnings"] == ["sizes above 5 are deprecated"]

    invalid = await hooks.review(VALIDATE, admission("CREATE", gadget(size=11)))
    assert invalid["allowed"] is False
    assert invalid["warnings"] == ["sizes above 5 are deprecated"]
    assert invalid["status"] == {
        "metadata": {},
        "status": "Failure",
        "message": (
            f'Gadget.{GROUP} "g1" is invalid: [spec.size: Invalid value: 11: must be at most 10, '
            "spec.color: Required value]"
        ),
        "reason": "Invalid",
        "details": {
            "name": "g1",
            "group": GROUP,
            "kind": "Gadget",
            "causes": [
                {
                    "type": "FieldValueInvalid",
                    "message": "Invalid value: 11: must be at most 10",
                    "field": "spec.size",
                },
                {"type": "FieldValueRequired", "message": "Required value", "field": "spec.color"},
            ],
        },
        "code": 422,
    }

    shrink = admission("UPDATE", gadget(size=2), gadget(size=4))
    denied = await hooks.review(VALIDATE, shrink)
    assert denied["allowed"] is False
    assert denied["status"] == {
        "metadata": {},
        "message": "jane may not shrink a gadget",
        "reason": "Forbidden",
        "code": 403,
    }
    grow = await hooks.review(VALIDATE, admission("UPDATE", gadget(size=5), gadget(size=4)))
    assert grow["allowed"] is True and "warnings" not in grow


async def test_delete_validates_the_old_object_and_api_errors_keep_their_status(
    hooks: Hooks,
) -> None:
    protected = gadget()
    protected["metadata"]["labels"] = {"protected": "true"}
    refused = await hooks.review(VALIDATE, admission("DELETE", None, protected))
    assert refused["allowed"] is False
    assert refused["status"]["code"] == 409
    assert refused["status"]["reason"] == "Conflict"
    assert refused["status"]["message"] == "protected gadgets stay"
    allowed = await hooks.review(VALIDATE, admission("DELETE", None, gadget()))
    assert allowed["allowed"] is True
    # CONNECT is not validated; a DELETE without its old object cannot be.
    connect = await hooks.review(VALIDATE, admission("CONNECT", None, None))
    assert connect["allowed"] is True
    missing = await hooks.review(VALIDATE, admission("DELETE", None, None))
    assert missing["allowed"] is False and missing["status"]["code"] == 400
    assert "no old object" in missing["status"]["message"]


async def test_a_raw_handler_injects_a_sidecar(hooks: Hooks) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"inject": "busybox:1.36"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    request = admission("CREATE", pod, kind=("", "v1", "Pod"), resource="pods")
    response = await hooks.review("/mutate--v1-pod", request)
    assert response["warnings"] == ["injected"]
    patched = apply_json_patch(pod, patch_of(response))
    assert [c["name"] for c in patched["spec"]["containers"]] == ["app", "sidecar"]
    assert patched["spec"]["containers"][1]["image"] == "busybox:1.36"

    plain = copy.deepcopy(pod)
    del plain["metadata"]["annotations"]
    untouched = await hooks.review(
        "/mutate--v1-pod", admission("CREATE", plain, kind=("", "v1", "Pod"), resource="pods")
    )
    assert untouched["allowed"] is True and "patch" not in untouched


async def test_every_field_of_the_request_reaches_a_handler(hooks: Hooks) -> None:
    request = admission("UPDATE", gadget(size=2), gadget(size=1), dry_run=True)
    request["subResource"] = "status"
    request["requestKind"] = {"group": GROUP, "version": "v1beta1", "kind": "Gadget"}
    request["options"] = {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}
    response = await hooks.review("/echo", request)
    assert response["allowed"] is True
    assert response["status"] == {"metadata": {}, "message": "seen", "code": 200}
    assert response["warnings"] == [
        "operation=UPDATE",
        "user=jane groups=system:authenticated",
        "resource=gadgets/status",
        "request-kind=Gadget",
        "dry-run=True",
        "options=UpdateOptions",
        "old={'size': 1}",
    ]


async def test_a_failing_handler_is_an_internal_error_and_counted(hooks: Hooks) -> None:
    assert metric_value(hooks.manager, "controller_runtime_webhook_panics_total") == 0
    response = await hooks.review("/explode", admission("CREATE", gadget()))
    assert response["allowed"] is False
    assert response["status"] == {"metadata": {}, "message": "RuntimeError: boom", "code": 500}
    assert metric_value(hooks.manager, "controller_runtime_webhook_panics_total") == 1


async def test_a_v1beta1_review_is_answered_in_v1beta1(hooks: Hooks) -> None:
    response = await hooks.review(
        VALIDATE,
        admission("CREATE", gadget(size=1)),
        apiVersion="admission.k8s.io/v1beta1",
    )
    assert response["allowed"] is True


def review_bytes(**changes: Any) -> bytes:
    body: dict[str, Any] = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": admission("CREATE", gadget()),
    }
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return orjson.dumps(body)


def without_uid() -> bytes:
    request = admission("CREATE", gadget())
    del request["uid"]
    return review_bytes(request=request)


@pytest.mark.parametrize(
    ("body", "content_type", "code", "message"),
    [
        (b"", "application/json", 400, "request body is empty"),
        (review_bytes(), "text/plain", 400, "contentType=text/plain, expected application/json"),
        (b"{not json", "application/json", 400, "cannot decode the AdmissionReview"),
        (b"[1, 2]", "application/json", 400, "not a JSON object"),
        (review_bytes(apiVersion="admission.k8s.io/v2"), "application/json", 400, "v2"),
        (review_bytes(kind="Pod"), "application/json", 400, "expected an AdmissionReview"),
        (review_bytes(request=None), "application/json", 400, "has no request"),
        (without_uid(), "application/json", 400, "request.uid: required"),
        (
            review_bytes(request=admission("PATCH", gadget())),
            "application/json",
            400,
            "request.operation",
        ),
        (b" " * (7 * 1024 * 1024 + 1), "application/json", 413, "limit is 7340032 bytes"),
    ],
    ids=[
        "empty",
        "content-type",
        "bad-json",
        "not-an-object",
        "api-version",
        "kind",
        "no-request",
        "no-uid",
        "operation",
        "too-large",
    ],
)
async def test_malformed_reviews_get_an_error_review(
    hooks: Hooks, body: bytes, content_type: str, code: int, message: str
) -> None:
    # As controller-runtime answers them: HTTP 200, a review refusing with the error's code.
    status, answer = await hooks.post(VALIDATE, body, content_type)
    assert status == 200
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == code
    assert message in response["status"]["message"]


async def test_a_body_refused_unread_does_not_hold_a_stop(hooks: Hooks) -> None:
    # The refusal is answered before the body is read; the server then closes that
    # connection rather than waiting to read the rest, so stopping it is prompt.
    status, answer = await hooks.post(VALIDATE, b" " * (MAX_REVIEW_BYTES + 1))
    assert (status, answer["response"]["status"]["code"]) == (200, 413)
    await asyncio.wait_for(hooks.server.stop(), timeout=5)
    assert not hooks.server.serving.is_set()


async def test_unknown_paths_are_not_found(hooks: Hooks) -> None:
    async with hooks.session.post(hooks.server.url + "/mutate-nothing", data=b"{}") as reply:
        assert reply.status == 404


async def served_certificate(host: str, port: int) -> bytes:
    """The DER of the certificate a new TLS connection is given."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection(host, port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    assert der is not None
    return bytes(der)


def der(pem: bytes) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)


async def test_replaced_certificate_files_are_served_without_a_restart(hooks: Hooks) -> None:
    host, port = hooks.server.bound or ("", 0)
    assert await served_certificate(host, port) == der(hooks.certs.cert_pem)
    reads = metric_value(hooks.manager, "certwatcher_read_certificate_total") or 0
    assert reads >= 1

    rotated = generate_certificates()
    # Written the way a careless rotation writes them: a moment with a mismatched pair.
    (hooks.cert_dir / "tls.crt").write_bytes(rotated.cert_pem)
    await asyncio.sleep(0)
    (hooks.cert_dir / "tls.key").write_bytes(rotated.key_pem)

    async def rotated_served() -> bool:
        return await served_certificate(host, port) == der(rotated.cert_pem)

    await eventually(rotated_served)
    context = ssl.create_default_context(cadata=rotated.ca_pem.decode())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        body = review_bytes()
        headers = {"Content-Type": "application/json"}
        async with session.post(hooks.server.url + VALIDATE, data=body, headers=headers) as r:
            assert (await r.json())["response"]["allowed"] is True
    # The old CA no longer verifies new connections.
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await hooks.post(VALIDATE, review_bytes())

    # A broken file is reported and the current certificate stays in use.
    errors = metric_value(hooks.manager, "certwatcher_read_certificate_errors_total") or 0
    (hooks.cert_dir / "tls.key").write_bytes(b"not a key")

    async def error_counted() -> bool:
        value = metric_value(hooks.manager, "certwatcher_read_certificate_errors_total") or 0
        return value > errors

    await eventually(error_counted)
    assert await served_certificate(host, port) == der(rotated.cert_pem)


async def scrape(address: tuple[str, int], path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://{address[0]}:{address[1]}{path}") as reply,
    ):
        return reply.status, await reply.text()


async def test_metrics_move_with_requests(hooks: Hooks) -> None:
    _, before = await scrape(hooks.manager.bound["metrics"], "/metrics")
    # Registered webhooks are published at zero, as controller-runtime does.
    assert f'controller_runtime_webhook_requests_total{{code="200",webhook="{MUTATE}"}} 0' in before
    assert f'controller_runtime_webhook_requests_total{{code="500",webhook="{MUTATE}"}} 0' in before
    assert f'controller_runtime_webhook_requests_in_flight{{webhook="{MUTATE}"}} 0' in before
    assert "controller_runtime_webhook_panics_total 0" in before
    for _ in range(3):
        await hooks.review(MUTATE, admission("CREATE", gadget()))
    await hooks.post(MUTATE, b"", "application/json")  # malformed: still answered 200
    _, after = await scrape(hooks.manager.bound["metrics"], "/metrics")
    assert f'controller_runtime_webhook_requests_total{{code="200",webhook="{MUTATE}"}} 4' in after
    assert f'controller_runtime_webhook_latency_seconds_count{{webhook="{MUTATE}"}} 4' in after
    assert (
        f'controller_runtime_webhook_latency_seconds_bucket{{webhook="{MUTATE}",le="1e-08"}}'
        in after
    )
    assert f'controller_runtime_webhook_requests_in_flight{{webhook="{MUTATE}"}} 0' in after
    assert (
        f'controller_runtime_webhook_requests_total{{code="200",webhook="{VALIDATE}"}} 0' in after
    )


async def test_readiness_includes_the_webhook_server(hooks: Hooks) -> None:
    probes = hooks.manager.bound["probes"]
    assert await scrape(probes, "/readyz") == (200, "ok")
    assert await hooks.server.ready()
    await hooks.server.stop()
    assert not await hooks.server.ready()
    status, text = await scrape(probes, "/readyz")
    assert status == 500 and "webhook" in text


async def test_every_interface_and_a_free_port_is_one_port_for_ipv4_and_ipv6(
    tmp_path: Path,
) -> None:
    certs = generate_certificates()
    write_certs(tmp_path, certs)
    server = kubeforge.webhook.WebhookServer(host="", port=0, cert_dir=tmp_path)
    server.register("/echo", echo)
    await server.start()
    try:
        assert server.bound is not None
        port = server.bound[1]
        assert server.url == f"https://127.0.0.1:{port}"
        assert await server.ready()
        context = ssl.create_default_context(cadata=certs.ca_pem.decode())
        context.check_hostname = False
        hosts = ["127.0.0.1", "::1"] if socket.has_dualstack_ipv6() else ["127.0.0.1"]
        for host in hosts:
            # Both families answer on the port the server reports.
            _, writer = await asyncio.open_connection(host, port, ssl=context)
            writer.close()
            await writer.wait_closed()
    finally:
        await server.stop()


async def test_registered_webhooks_are_listed_for_configurations(hooks: Hooks) -> None:
    listed = {hook.path: hook for hook in hooks.server.webhooks}
    assert list(listed) == [
        MUTATE,
        VALIDATE,
        "/mutate--v1-configmap",
        "/mutate--v1-pod",
        "/explode",
        "/echo",
    ]
    assert listed["/explode"].spec is None  # no marker: cannot be configured
    defaulting = listed[MUTATE].spec
    assert defaulting is not None and defaulting.failure_policy == "Ignore"
    assert defaulting.name == "mgadget-v1.kb.io" and listed[MUTATE].mutating is True
    validating = listed[VALIDATE].spec
    assert validating is not None and validating.timeout_seconds == 5
    assert validating.rules[0].operations == ("CREATE", "UPDATE", "DELETE")
    sidecar = listed["/mutate--v1-pod"].spec
    assert sidecar is not None and sidecar.name == "sidecar.hooks.kb.io"
    assert sidecar.rules[0].resources == ("pods",) and sidecar.rules[0].api_groups == ("",)

    configurations = kubeforge.webhook.webhook_configurations(
        hooks.server.specs(), base_url=hooks.server.url, ca_bundle=hooks.certs.ca_pem
    )
    urls = [w["clientConfig"]["url"] for c in configurations for w in c["webhooks"]]
    assert urls == [
        hooks.server.url + "/mutate--v1-configmap",
        hooks.server.url + MUTATE,
        hooks.server.url + "/mutate--v1-pod",
        hooks.server.url + VALIDATE,
    ]


async def test_a_manager_without_webhooks_needs_no_certificates(kubeconfig: Path) -> None:
    manager = kubeforge.Manager(load_kubeconfig(kubeconfig))
    manager.webhook_server.cert_dir = Path("/nonexistent/serving-certs")
    task = asyncio.create_task(manager.start())
    await asyncio.wait_for(manager.running.wait(), 10)
    assert not manager.webhook_server.serving.is_set()
    manager.stop()
    await task


async def test_a_manager_with_webhooks_and_no_certificates_fails_clearly(
    kubeconfig: Path, tmp_path: Path
) -> None:
    manager = kubeforge.Manager(
        load_kubeconfig(kubeconfig),
        webhook_server=kubeforge.webhook.WebhookServer(port=0, cert_dir=tmp_path / "missing"),
    )
    manager.webhook_for(Gadget).validator(GadgetValidator()).complete()
    with pytest.raises(kubeforge.webhook.CertificateError, match="No such file or directory"):
        await asyncio.wait_for(manager.start(), 10)


async def test_registration_errors(kubeconfig: Path) -> None:
    manager = kubeforge.Manager(load_kubeconfig(kubeconfig))
    try:
        manager.webhook_for(Gadget).defaulter(GadgetDefaulter()).complete()
        with pytest.raises(ValueError, match="already registered"):
            manager.webhook_for(Gadget).defaulter(GadgetDefaulter()).complete()
        with pytest.raises(
            ValueError, match="needs a defaulter, a validator, or a kind whose versions convert"
        ):
            manager.webhook_for(Gadget).complete()
        with pytest.raises(ValueError, match="does not match"):
            manager.webhook_for(Gadget).validator(GadgetValidator(), path="no-slash")
        with pytest.raises(TypeError, match="not a Validator"):
            manager.webhook_for(Gadget).validator(object())  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="marker is for"):
            manager.webhook_for("v1/Secret").defaulter(inject_sidecar).complete()  # type: ignore[arg-type]
    finally:
        await manager.api_reader.close()
