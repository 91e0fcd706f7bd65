"""Pointing CRDs at a conversion webhook served on this machine, as envtest does.

During development and in tests the manager's webhook server runs here, not behind the
in-cluster Service a CRD's `spec.conversion` names. `register_conversion_webhooks` gives
every CRD the server converts (the kinds registered with `manager.webhook_for(...)`) a
`spec.conversion.webhook.clientConfig` with the server's URL (plus the conversion path) and
the CA that signed its certificate; `ConversionRegistration.restore()` puts back the
conversion each CRD had, unless something changed it since.

The conversion replaced is also kept on the CRD, in the annotation
`kubeforge.dev/local-conversion` (with the URL set), until it is restored. A run killed
before it could restore leaves the CRD pointing at a server that is gone; the next
registration finds its own URL still there, takes the conversion to restore from the
annotation rather than from the stale spec, and so restores the CRD's own conversion when it
ends. A CRD installed again meanwhile (its conversion no longer the URL noted) is taken as it
is.

It is one part of registering a webhook server (_runtime/localwebhooks.py's
`register_webhook_server`, which also applies the admission configurations), called once the
server answers: until then every read of a version other than the one an object is stored in
fails.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from kubeforge._api.meta import GroupVersionKind, ResourceInfo
from kubeforge._client.client import Client
from kubeforge._client.errors import NotFound
from kubeforge._webhook.conversion import ConversionWebhook
from kubeforge._webhook.server import WebhookServer

__all__ = ["ConversionRegistration", "conversion_crds", "register_conversion_webhooks"]

log = logging.getLogger("kubeforge.webhook")

CRD_KIND = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
ANNOTATION = "kubeforge.dev/local-conversion"
_ANNOTATION_PATH = "/metadata/annotations/" + ANNOTATION.replace("~", "~0").replace("/", "~1")


def conversion_crds(server: WebhookServer) -> dict[str, str]:
    """The CRDs whose objects `server` converts: CRD name -> conversion path."""
    crds: dict[str, str] = {}
    for entry in server.webhooks:
        if not entry.conversion or not isinstance(entry.handler, ConversionWebhook):
            continue
        for versions in entry.handler.kinds:
            info = getattr(versions.hub, "__kubeforge__", None)
            if isinstance(info, ResourceInfo):
                crds[f"{info.plural}.{versions.group}"] = entry.path
    return crds


@dataclass
class ConversionRegistration:
    """The CRDs register_conversion_webhooks changed: name -> (the conversion it set, the
    one it replaced)."""

    client: Client
    changed: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)
    field_manager: str | None = None

    @property
    def names(self) -> list[str]:
        """The names of the CRDs pointed at the server."""
        return list(self.changed)

    async def restore(self) -> None:
        """Give each CRD back the conversion it had (once; later calls do nothing). A CRD
        deleted meanwhile, or whose conversion was changed by someone else since, is left
        alone. Every CRD is tried; the first error, if any, is raised after."""
        changed, self.changed = self.changed, {}
        failure: Exception | None = None
        for name, (ours, before) in changed.items():
            try:
                await self._restore(name, ours, before)
            except NotFound:
                continue
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    async def _restore(
        self, name: str, ours: dict[str, Any], before: dict[str, Any] | None
    ) -> None:
        crd = await self.client.get(CRD_KIND, name)
        if (crd.get("spec") or {}).get("conversion") != ours:
            return
        replacement = before if before is not None else {"strategy": "None"}
        operations: list[dict[str, Any]] = [
            {"op": "replace", "path": "/spec/conversion", "value": replacement}
        ]
        if ANNOTATION in (crd["metadata"].get("annotations") or {}):
            operations.append({"op": "remove", "path": _ANNOTATION_PATH})
        await self.client.patch(
            CRD_KIND,
            name,
            operations,
            patch_type="json",
            field_manager=self.field_manager,
        )
        log.info("CRD %s converts as its own spec says again", name)


async def register_conversion_webhooks(
    client: Client,
    server: WebhookServer,
    *,
    ca_bundle: bytes,
    base_url: str | None = None,
    field_manager: str | None = None,
) -> ConversionRegistration:
    """Point every CRD `server` converts at it: `base_url` (default: the running server's
    URL) plus its conversion path, verified with `ca_bundle`. A CRD that is not installed is
    skipped with a warning (nothing can be stored in it yet). A failure part way gives the
    CRDs changed so far their conversion back before it is raised."""
    registration = ConversionRegistration(client, field_manager=field_manager)
    try:
        await _register(registration, server, ca_bundle, base_url or server.url)
    except BaseException:
        # The error that stopped the registration is the one to report.
        with contextlib.suppress(Exception):
            await asyncio.shield(registration.restore())
        raise
    return registration


async def _register(
    registration: ConversionRegistration,
    server: WebhookServer,
    ca_bundle: bytes,
    url: str,
) -> None:
    client = registration.client
    for name, path in conversion_crds(server).items():
        try:
            crd = await client.get(CRD_KIND, name)
        except NotFound:
            log.warning(
                "the conversion webhook at %s converts %s, which is not installed", path, name
            )
            continue
        before = _replaced(crd)
        versions = ((before or {}).get("webhook") or {}).get("conversionReviewVersions")
        ours = {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {
                    "url": url + path,
                    "caBundle": base64.b64encode(ca_bundle).decode(),
                },
                "conversionReviewVersions": versions or ["v1"],
            },
        }
        note = json.dumps({"url": url + path, "replaced": before}, sort_keys=True)
        annotations = crd["metadata"].get("annotations")
        stored = await client.patch(
            CRD_KIND,
            name,
            [
                {"op": "replace", "path": "/spec/conversion", "value": ours},
                {"op": "add", "path": _ANNOTATION_PATH, "value": note}
                if annotations is not None
                else {"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: note}},
            ],
            patch_type="json",
            field_manager=registration.field_manager,
        )
        registration.changed[name] = (stored["spec"]["conversion"], before)
        log.info("CRD %s converts through %s", name, url + path)


def _replaced(crd: dict[str, Any]) -> dict[str, Any] | None:
    """The conversion a registration replaces: the CRD's, unless it is a registration that
    was never restored (the URL its note records), whose note then has the CRD's own."""
    current: dict[str, Any] | None = (crd.get("spec") or {}).get("conversion")
    raw = (crd["metadata"].get("annotations") or {}).get(ANNOTATION)
    if raw is None or current is None:
        return current
    try:
        note = json.loads(raw)
    except ValueError:
        return current
    if not isinstance(note, dict):
        return current
    url = ((current.get("webhook") or {}).get("clientConfig") or {}).get("url")
    replaced = note.get("replaced")
    if url is None or url != note.get("url") or not isinstance(replaced, dict | None):
        return current
    log.info(
        "CRD %s still calls %s, registered by a run that did not end cleanly",
        crd["metadata"]["name"],
        url,
    )
    return replaced
