"""`kubeforge run`'s conversion webhook: served from this machine, the CRDs pointed at it.

When setup() registers a conversion webhook and the webhook server has no certificate of its
own, the server listens on 127.0.0.1 (a free port) with a certificate generated for the run,
as the tests' TestEnv serves it; as soon as it answers, and before the caches list anything
that may need converting, the CRDs of the kinds it converts are given its URL and CA (with the
kubeconfig's credentials); when the manager stops they get their own conversion back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from kubeforge.client.client import Client
from kubeforge.client.config import ClusterConfig
from kubeforge.runtime.localconversion import (
    ConversionRegistration,
    conversion_crds,
    register_conversion_webhooks,
)
from kubeforge.runtime.manager import Manager
from kubeforge.testing.webhooks import LocalWebhooks

__all__ = ["conversion_served_locally"]

log = logging.getLogger("kubeforge.run")

FIELD_MANAGER = "kubeforge-run"


@contextlib.asynccontextmanager
async def conversion_served_locally(manager: Manager, config: ClusterConfig) -> AsyncIterator[None]:
    """Serve the manager's conversion webhook locally and register it with the cluster of
    `config` while the block (which runs the manager) runs."""
    server = manager.webhook_server
    crds = conversion_crds(server)
    if not crds:
        yield
        return
    local = LocalWebhooks(server)
    if not local.prepare():
        log.warning(
            "the webhook server has a certificate of its own: the CRDs %s are left as they are",
            ", ".join(crds),
        )
        yield
        return
    async with Client(config, field_manager=FIELD_MANAGER) as client:

        async def register() -> ConversionRegistration:
            await server.serving.wait()
            try:
                return await register_conversion_webhooks(client, server, ca_bundle=local.ca_pem)
            except Exception as exc:
                log.error(
                    "could not point %s at the local webhook server: %s", ", ".join(crds), exc
                )
                raise

        registering = asyncio.create_task(register(), name="conversion registration")
        try:
            yield
        finally:
            if not registering.done():
                registering.cancel()
            (outcome,) = await asyncio.gather(registering, return_exceptions=True)
            if isinstance(outcome, ConversionRegistration):
                await outcome.restore()
            local.cleanup()
