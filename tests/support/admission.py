"""HTTPS admission webhook servers for tests, and builders of webhook configurations."""

from __future__ import annotations

import asyncio
import base64
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from aiohttp import web

from kubeforge._apiserver.tls import ServingCertificates, generate_certificates

# A handler gets the AdmissionRequest and answers the AdmissionResponse fields (uid and
# the review's envelope are added), or a whole aiohttp response to answer something else.
Handler = Callable[[dict[str, Any]], "dict[str, Any] | web.StreamResponse | Awaitable[Any]"]

MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


class WebhookServer:
    """An aiohttp HTTPS server answering AdmissionReviews by path, recording every request."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.certificates: ServingCertificates = generate_certificates(hosts)
        self.handlers: dict[str, Handler] = {}
        self.reviews: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[str] = []  # paths in the order they were called
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.certificates.ca_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def route(self, path: str, handler: Handler) -> None:
        self.handlers[path] = handler

    def requests(self, path: str) -> list[dict[str, Any]]:
        return [review["request"] for review in self.reviews.get(path, [])]

    async def _serve(self, http: web.Request) -> web.StreamResponse:
        review = orjson.loads(await http.read())
        self.reviews.setdefault(http.path, []).append(review)
        self.calls.append(http.path)
        handler = self.handlers.get(http.path, allow)
        answer = handler(review["request"])
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, web.StreamResponse):
            return answer
        response = {"uid": review["request"]["uid"], **answer}
        body = {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._serve)
        # A caller that gives up (a webhook timeout) cancels its handler; stopping waits for
        # no one.
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, "127.0.0.1", 0, ssl_context=self.certificates.server_context()
        )
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@asynccontextmanager
async def webhook_server(hosts: tuple[str, ...] = ("127.0.0.1",)) -> AsyncIterator[WebhookServer]:
    server = WebhookServer(hosts)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


# -- answers ----------------------------------------------------------------------------------


def allow(request: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


def patch(*operations: dict[str, Any], warnings: list[str] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(orjson.dumps(list(operations))).decode(),
    }
    if warnings:
        answer["warnings"] = warnings
    return answer


def deny(message: str, code: int = 403, reason: str = "Forbidden") -> dict[str, Any]:
    return {"allowed": False, "status": {"code": code, "reason": reason, "message": message}}


async def never(request: dict[str, Any]) -> dict[str, Any]:
    """A webhook that never answers."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


# -- configurations ---------------------------------------------------------------------------


def rule(
    resources: list[str],
    operations: list[str] | None = None,
    groups: list[str] | None = None,
    versions: list[str] | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operations": operations or ["CREATE"],
        "apiGroups": groups if groups is not None else [""],
        "apiVersions": versions or ["v1"],
        "resources": resources,
    }
    if scope is not None:
        out["scope"] = scope
    return out


def webhook(
    name: str,
    server: WebhookServer,
    path: str,
    rules: list[dict[str, Any]],
    **fields: Any,
) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle},
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    hook.update(fields)
    return hook


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


def mutating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("MutatingWebhookConfiguration", name, *hooks)


def validating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("ValidatingWebhookConfiguration", name, *hooks)


def configmap(name: str, namespace: str = "default", **fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }
    obj.update(fields)
    return obj


def pod(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def deployment(name: str, replicas: int = 1, namespace: str = "default") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }
