"""Webhooks served from this machine and registered with a cluster (_runtime/localwebhooks.py),
and TestEnv.run_manager doing it for a test: what a configuration holds, when it is applied,
that it is removed again, and that requests go through it."""

from __future__ import annotations

import asyncio
import base64
import copy
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Self

import pytest

import kubeforge
import kubeforge.client
import kubeforge.conversion
import kubeforge.webhook
from kubeforge._api.crd import crd_for
from kubeforge._api.machinery.certificates import generate_certificates
from kubeforge._runtime.localwebhooks import (
    register_webhook_server,
    serve_locally,
    wait_until_serving,
)
from kubeforge.testing import TestEnv

MUTATING = "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration"
CRD_KIND = "apiextensions.k8s.io/v1/CustomResourceDefinition"
GADGETS = "gadgets.gadgets.example.com"
VALIDATING = "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"


@kubeforge.webhook.admission_webhook(kind="v1/ConfigMap", mutating=True, name="mcm.example.com")
def label_config_maps(
    request: kubeforge.webhook.AdmissionRequest,
) -> kubeforge.webhook.AdmissionResponse:
    config_map = request.object or {}
    labelled = {**config_map, "metadata": {**config_map["metadata"], "labels": {"seen": "yes"}}}
    return kubeforge.webhook.AdmissionResponse.patch_to(config_map, labelled)


@kubeforge.webhook.admission_webhook(kind="v1/ConfigMap", mutating=False, name="vcm.example.com")
def refuse_forbidden(
    request: kubeforge.webhook.AdmissionRequest,
) -> kubeforge.webhook.AdmissionResponse:
    if (request.object or {}).get("data", {}).get("forbidden"):
        return kubeforge.webhook.AdmissionResponse.deny("no forbidden keys")
    return kubeforge.webhook.AdmissionResponse.allow()


def unmarked(request: kubeforge.webhook.AdmissionRequest) -> kubeforge.webhook.AdmissionResponse:
    return kubeforge.webhook.AdmissionResponse.allow()


def setup_webhooks(manager: kubeforge.Manager) -> None:
    manager.webhook_server.register("/label", label_config_maps)
    manager.webhook_server.register("/refuse", refuse_forbidden)
    manager.webhook_server.register("/unmarked", unmarked)


def config_map(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=[]) as started:
        yield started


async def configurations(env: TestEnv) -> list[str]:
    found = []
    for kind in (MUTATING, VALIDATING):
        found += [item["metadata"]["name"] for item in await env.client.list(kind)]
    return found


async def test_run_manager_registers_the_webhooks_for_the_block_and_requests_go_through_them(
    env: TestEnv,
) -> None:
    async with env.run_manager(setup_webhooks) as manager:
        server = manager.webhook_server
        assert server.bound is not None and server.bound[0] == "127.0.0.1"
        assert server.port == 0 and server.bound[1] != 0  # a free port

        mutating = await env.client.get(MUTATING, "mutating-webhook-configuration")
        [hook] = mutating["webhooks"]
        assert hook["name"] == "mcm.example.com"
        assert hook["clientConfig"]["url"] == f"{server.url}/label"
        assert "service" not in hook["clientConfig"]
        # The caBundle is the CA that signed the certificate the server presents.
        ca = base64.b64decode(hook["clientConfig"]["caBundle"])
        assert server.certificates is not None
        assert (server.cert_dir / "ca.crt").read_bytes() == ca
        validating = await env.client.get(VALIDATING, "validating-webhook-configuration")
        assert [h["name"] for h in validating["webhooks"]] == ["vcm.example.com"]
        # A raw handler without a marker says nothing of what it admits: not registered.
        assert all("unmarked" not in h["clientConfig"]["url"] for h in validating["webhooks"])

        stored = await env.client.create(config_map("plain", key="value"))
        assert stored["metadata"]["labels"] == {"seen": "yes"}
        with pytest.raises(kubeforge.client.Forbidden) as refused:
            await env.client.create(config_map("bad", forbidden="yes"))
        assert 'admission webhook "vcm.example.com" denied the request: no forbidden keys' in (
            str(refused.value)
        )
        cert_dir = server.cert_dir

    # Unregistered once the block is left (before the server stopped), certificates gone.
    assert await configurations(env) == []
    assert not cert_dir.exists()
    after = await env.client.create(config_map("after"))
    assert "labels" not in after["metadata"]


async def test_run_manager_without_webhooks_registers_nothing(env: TestEnv, tmp_path: Path) -> None:
    def controllers_only(manager: kubeforge.Manager) -> None:
        pass

    async with env.run_manager(controllers_only) as manager:
        assert await configurations(env) == []
        assert manager.webhook_server.bound is None  # nothing to serve, nothing started

    # webhooks=False: the server is left as setup configures it, and nothing is registered.
    certs = generate_certificates()
    (tmp_path / "tls.crt").write_bytes(certs.cert_pem)
    (tmp_path / "tls.key").write_bytes(certs.key_pem)

    def own_serving(manager: kubeforge.Manager) -> None:
        setup_webhooks(manager)
        manager.webhook_server.cert_dir = tmp_path
        manager.webhook_server.port = 0

    async with env.run_manager(own_serving, webhooks=False) as manager:
        assert manager.webhook_server.cert_dir == tmp_path
        assert manager.webhook_server.serving.is_set()
        assert await configurations(env) == []


async def test_registration_waits_until_the_server_answers(env: TestEnv) -> None:
    server = kubeforge.webhook.WebhookServer()
    server.register("/label", label_config_maps)
    local = serve_locally(server)
    try:
        registering = asyncio.create_task(
            register_webhook_server(env.client, server, ca_bundle=local.ca_bundle)
        )
        # The server has not started: nothing is registered, however long one waits.
        done, _ = await asyncio.wait({registering}, timeout=0.3)
        assert not done
        assert await configurations(env) == []

        await server.start()
        try:
            registration = await asyncio.wait_for(registering, 10)
            assert registration.names == ["mutating-webhook-configuration"]
            # Registered only once it answers: the very next write goes through it.
            stored = await env.client.create(config_map("first"))
            assert stored["metadata"]["labels"] == {"seen": "yes"}
            await registration.remove()
            await registration.remove()  # once is enough; again does nothing
            assert await configurations(env) == []
        finally:
            await server.stop()
    finally:
        local.cleanup()


async def test_a_server_that_never_starts_is_a_timeout(env: TestEnv) -> None:
    server = kubeforge.webhook.WebhookServer()
    with pytest.raises(TimeoutError, match=r"did not start within 0\.2 s"):
        await wait_until_serving(server, 0.2)


async def test_a_stale_registration_is_taken_over_and_a_replaced_one_left_alone(
    env: TestEnv,
) -> None:
    # What a killed run leaves behind: the same names, pointing at a port nobody serves.
    stale = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "run-mutating-webhook-configuration"},
        "webhooks": [
            {
                "name": "mcm.example.com",
                "clientConfig": {"url": "https://127.0.0.1:1/label"},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    await env.client.apply(stale, field_manager="kubeforge-run", force=True)
    with pytest.raises(kubeforge.ApiError, match="failed calling webhook"):
        await env.client.create(config_map("blocked"))

    server = kubeforge.webhook.WebhookServer()
    server.register("/label", label_config_maps)
    local = serve_locally(server)
    await server.start()
    try:
        registration = await register_webhook_server(
            env.client, server, ca_bundle=local.ca_bundle, name_prefix="run-"
        )
        stored = await env.client.create(config_map("through"))
        assert stored["metadata"]["labels"] == {"seen": "yes"}

        # Someone deletes it and another run registers the name again: not ours to remove.
        await env.client.delete(MUTATING, "run-mutating-webhook-configuration")
        await env.client.apply(stale, field_manager="someone-else")
        await registration.remove()
        assert await configurations(env) == ["run-mutating-webhook-configuration"]
    finally:
        await server.stop()
        local.cleanup()


def test_serving_a_given_certificate_directory_trusts_its_ca_or_the_certificate(
    tmp_path: Path,
) -> None:
    certs = generate_certificates()
    (tmp_path / "tls.crt").write_bytes(certs.cert_pem)
    (tmp_path / "tls.key").write_bytes(certs.key_pem)
    server = kubeforge.webhook.WebhookServer()
    # No ca.crt: the certificate itself is the bundle (right for a self-signed one).
    assert serve_locally(server, cert_dir=tmp_path).ca_bundle == certs.cert_pem
    # cert-manager's Secrets carry ca.crt: that is the bundle then.
    (tmp_path / "ca.crt").write_bytes(certs.ca_pem)
    local = serve_locally(server, host="0.0.0.0", port=9999, cert_dir=tmp_path)
    assert local.ca_bundle == certs.ca_pem
    assert (server.host, server.port, server.cert_dir) == ("0.0.0.0", 9999, tmp_path)
    local.cleanup()
    assert (tmp_path / "tls.crt").exists()  # a given directory is the user's: kept

    with pytest.raises(kubeforge.webhook.CertificateError, match=r"no ca\.crt and no tls\.crt"):
        serve_locally(server, cert_dir=tmp_path / "missing")


class GadgetSpec(kubeforge.Model):
    size: int = 1


@kubeforge.resource(group="gadgets.example.com", version="v1")
class Gadget(kubeforge.Resource[GadgetSpec, kubeforge.Model], kubeforge.conversion.Hub):
    """The hub."""


@kubeforge.resource(group="gadgets.example.com", version="v1alpha1", kind="Gadget", storage=False)
class GadgetV1alpha1(
    kubeforge.Resource[GadgetSpec, kubeforge.Model], kubeforge.conversion.Convertible[Gadget]
):
    def to_hub(self) -> Gadget:
        return Gadget(metadata=self.metadata, spec=self.spec)

    @classmethod
    def from_hub(cls, hub: Gadget) -> Self:
        return cls(metadata=hub.metadata, spec=hub.spec)


async def test_the_conversion_webhook_registers_its_crds_and_is_not_an_unmarked_handler(
    env: TestEnv, caplog: pytest.LogCaptureFixture
) -> None:
    crd = crd_for([Gadget, GadgetV1alpha1])
    await env.client.apply(crd, force=True)
    await env.client.wait_established([GADGETS])
    installed = (await env.client.get(CRD_KIND, GADGETS))["spec"]["conversion"]
    server = kubeforge.webhook.WebhookServer()
    server.register("/label", label_config_maps)
    server.register("/unmarked", unmarked)
    server.register_conversion(Gadget)
    local = serve_locally(server)
    await server.start()
    try:
        with caplog.at_level(logging.WARNING, logger="kubeforge.webhook"):
            registration = await register_webhook_server(
                env.client, server, ca_bundle=local.ca_bundle
            )
        # /convert makes no configuration: its CRD calls the server. Only the raw handler
        # without a marker is reported as not registered.
        assert registration.names == ["mutating-webhook-configuration"]
        assert registration.crds == [GADGETS]
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings == [
            "not registered (no @admission_webhook marker says what they admit): /unmarked"
        ]
        webhook = (await env.client.get(CRD_KIND, GADGETS))["spec"]["conversion"]["webhook"]
        assert webhook["clientConfig"] == {
            "url": f"{server.url}/convert",
            "caBundle": base64.b64encode(local.ca_bundle).decode(),
        }
        # Read in the version it is not stored in: converted by the server.
        await env.client.create(
            Gadget(metadata=kubeforge.ObjectMeta(name="g"), spec=GadgetSpec(size=3))
        )
        old = await env.client.get(GadgetV1alpha1, "g")
        assert (old.api_version, old.spec.size) == ("gadgets.example.com/v1alpha1", 3)

        await registration.remove()
        assert await configurations(env) == []
        assert (await env.client.get(CRD_KIND, GADGETS))["spec"]["conversion"] == installed
    finally:
        await server.stop()
        local.cleanup()


async def test_run_manager_serves_locally_even_with_a_certificate_where_the_server_looks(
    env: TestEnv, tmp_path: Path
) -> None:
    # As envtest always generates its own serving certificate: a certificate some other
    # process left in the webhook server's directory does not decide how a test runs.
    certs = generate_certificates()
    (tmp_path / "tls.crt").write_bytes(certs.cert_pem)
    (tmp_path / "tls.key").write_bytes(certs.key_pem)

    def with_certificate(manager: kubeforge.Manager) -> None:
        setup_webhooks(manager)
        manager.webhook_server.cert_dir = tmp_path

    async with env.run_manager(with_certificate) as manager:
        server = manager.webhook_server
        assert server.cert_dir != tmp_path and server.bound is not None
        assert server.bound[0] == "127.0.0.1"
        stored = await env.client.create(config_map("through"))
        assert stored["metadata"]["labels"] == {"seen": "yes"}


async def test_crds_left_pointing_at_a_killed_run_get_their_own_conversion_back_from_the_next(
    env: TestEnv,
) -> None:
    crd = crd_for([Gadget, GadgetV1alpha1])
    await env.client.apply(crd, force=True)
    await env.client.wait_established([GADGETS])
    own = (await env.client.get(CRD_KIND, GADGETS))["spec"]["conversion"]

    async def register_and_kill() -> str:
        """A registration whose process died: never removed, its server gone."""
        server = kubeforge.webhook.WebhookServer()
        server.register_conversion(Gadget)
        local = serve_locally(server)
        await server.start()
        try:
            await register_webhook_server(env.client, server, ca_bundle=local.ca_bundle)
            return server.url
        finally:
            await server.stop()
            local.cleanup()

    async def register_and_remove() -> None:
        server = kubeforge.webhook.WebhookServer()
        server.register_conversion(Gadget)
        local = serve_locally(server)
        await server.start()
        try:
            registration = await register_webhook_server(
                env.client, server, ca_bundle=local.ca_bundle
            )
            assert registration.crds == [GADGETS]
            await registration.remove()
        finally:
            await server.stop()
            local.cleanup()

    async def conversion() -> dict[str, Any]:
        stored = await env.client.get(CRD_KIND, GADGETS)
        return dict(stored["spec"]["conversion"])

    killed = await register_and_kill()
    assert (await conversion())["webhook"]["clientConfig"]["url"] == f"{killed}/convert"
    await register_and_remove()
    assert await conversion() == own
    stored = await env.client.get(CRD_KIND, GADGETS)
    assert "kubeforge.dev/local-conversion" not in (stored["metadata"].get("annotations") or {})

    # Replaced after a killed run (kubectl replace, say): what the CRD says now comes back.
    await register_and_kill()
    replaced = await env.client.get(CRD_KIND, GADGETS)
    replaced["spec"]["conversion"] = copy.deepcopy(own)
    replaced["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] = 8443
    await env.client.update(replaced)
    await register_and_remove()
    assert (await conversion())["webhook"]["clientConfig"]["service"]["port"] == 8443
