"""Cluster providers: where a multi-cluster manager's clusters come from.

- `KubeconfigProvider`: clusters from kubeconfig files (every context of each, or the ones
  named) and from connection settings given directly, plus `add` and `remove` while the
  manager runs (multicluster-runtime's providers/file and providers/clusters).
- `KubeconfigSecretProvider`: one cluster per Secret in a namespace of the manager's own
  cluster that carries a kubeconfig, watched while the manager runs: a Secret added engages
  its cluster, a changed kubeconfig engages the cluster anew, a Secret deleted (or no longer
  labelled) disengages it (multicluster-runtime's providers/kubeconfig).

A provider builds each cluster with `make_cluster(name, config)` (default `Cluster(config)`),
the place to shape the clusters' caches.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence

from kubeforge._client.config import (
    ClusterConfig,
    ConfigError,
    kubeconfig_contexts,
    load_kubeconfig,
    load_kubeconfig_data,
)
from kubeforge._runtime.clusterset import ClusterSet
from kubeforge._runtime.controller import Controller
from kubeforge._runtime.handler import EnqueueRequestForObject
from kubeforge._runtime.informer import Informer
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.multicluster import Aware, Cluster
from kubeforge._runtime.reconcile import Reconciler, Request, Result, TerminalError

__all__ = [
    "DEFAULT_KUBECONFIG_KEY",
    "DEFAULT_KUBECONFIG_LABEL",
    "KubeconfigProvider",
    "KubeconfigSecretProvider",
    "MakeCluster",
]

log = logging.getLogger("kubeforge.multicluster")

MakeCluster = Callable[[str, ClusterConfig], Cluster]
"""Builds the cluster named `name` from its connection settings."""

DEFAULT_KUBECONFIG_LABEL = "kubeforge.dev/multicluster-kubeconfig"
"""The label (value "true") that marks a Secret as a cluster's kubeconfig."""

DEFAULT_KUBECONFIG_KEY = "kubeconfig"
"""The key of a kubeconfig Secret's data that holds the kubeconfig."""


def _default_cluster(name: str, config: ClusterConfig) -> Cluster:
    return Cluster(config)


class KubeconfigProvider:
    """Clusters from kubeconfig files and connection settings, each engaged while the
    manager runs, and clusters added or removed meanwhile.

    Every context of each of `files` is a cluster named after the context (only those in
    `contexts`, when given); `clusters` names more by their settings. The files are read
    when the provider is made, so a broken one fails at once (ConfigError); two clusters of
    one name are a ValueError.
    """

    def __init__(
        self,
        files: Sequence[str | os.PathLike[str]] = (),
        *,
        contexts: Sequence[str] | None = None,
        clusters: Mapping[str, ClusterConfig] | None = None,
        make_cluster: MakeCluster | None = None,
    ) -> None:
        self.make_cluster = make_cluster or _default_cluster
        self._configs: dict[str, ClusterConfig] = {}
        wanted = None if contexts is None else set(contexts)
        for file in files:
            for context in kubeconfig_contexts(file):
                if wanted is None or context in wanted:
                    self._name(context, load_kubeconfig(file, context=context))
        if wanted is not None:
            missing = sorted(wanted - set(self._configs))
            if missing:
                raise ConfigError(f"no kubeconfig given defines the contexts {', '.join(missing)}")
        for name, config in (clusters or {}).items():
            self._name(name, config)
        self._set = ClusterSet()
        self._aware: Aware | None = None

    def _name(self, name: str, config: ClusterConfig) -> None:
        if name in self._configs:
            raise ValueError(f"two clusters are named {name!r}")
        self._configs[name] = config

    @property
    def names(self) -> list[str]:
        """The names of the clusters the provider knows, engaged or not yet."""
        return sorted(self._configs)

    def get(self, name: str) -> Cluster:
        """The engaged cluster `name` (ClusterNotFound when there is none)."""
        return self._set.get(name)

    async def run(self, aware: Aware, stopping: asyncio.Event) -> None:
        """Engage every cluster; once `stopping` is set, disengage and stop them all."""
        self._aware = aware
        try:
            for name, config in list(self._configs.items()):
                await self._engage(aware, name, config)
            await stopping.wait()
        finally:
            self._aware = None
            await self._set.clear(aware)

    async def _engage(self, aware: Aware, name: str, config: ClusterConfig) -> None:
        try:
            await self._set.add(name, self.make_cluster(name, config), aware)
        except Exception:
            log.exception("cluster %s could not be engaged", name)

    async def add(self, name: str, config: ClusterConfig) -> None:
        """Know cluster `name` from now on (replacing one of that name), and engage it if
        the manager runs."""
        self._configs[name] = config
        if self._aware is not None:
            await self._engage(self._aware, name, config)

    async def remove(self, name: str) -> None:
        """Forget cluster `name`: it is disengaged and stopped if it was engaged."""
        self._configs.pop(name, None)
        if self._aware is not None:
            await self._set.remove(name, self._aware)


class KubeconfigSecretProvider:
    """A cluster for each kubeconfig Secret in `namespace` of the manager's own cluster
    (default: its client's namespace, the pod's own in a cluster), named after the Secret.

    A kubeconfig Secret carries the label `label` with the value "true" and the kubeconfig
    under `key` of its data; `context` picks its context (default: current-context). While
    the manager runs the provider watches these Secrets alone (one namespace, one label: it
    needs only to list and watch Secrets there), with a controller of its own named `name`:
    a Secret added engages its cluster; a kubeconfig changed engages the cluster anew (its
    queued requests dropped, its objects listed again); a Secret deleted, unlabelled, or
    whose kubeconfig is missing or refused, disengages it.

    The kubeconfig must carry its credentials inline: one that would run a command (exec
    plugin) or read a file here (tokenFile, certificate files) is refused, since whoever
    may write Secrets in that namespace could otherwise run code in the operator or have
    it send its own token to their server. `allow_local_references=True` lifts that.
    """

    def __init__(
        self,
        namespace: str | None = None,
        *,
        label: str = DEFAULT_KUBECONFIG_LABEL,
        key: str = DEFAULT_KUBECONFIG_KEY,
        context: str | None = None,
        make_cluster: MakeCluster | None = None,
        allow_local_references: bool = False,
        name: str = "kubeconfig-provider",
    ) -> None:
        self.namespace = namespace
        self.label = label
        self.key = key
        self.context = context
        self.make_cluster = make_cluster or _default_cluster
        self.allow_local_references = allow_local_references
        self.name = name
        self._manager: Manager | None = None
        self._set = ClusterSet()
        # The digest of the kubeconfig each engaged cluster was made from.
        self._digests: dict[str, str] = {}

    def setup(self, manager: Manager) -> None:
        """Read the Secrets through `manager`'s own client (MultiClusterManager calls it)."""
        self._manager = manager

    def get(self, name: str) -> Cluster:
        """The engaged cluster `name` (ClusterNotFound when there is none)."""
        return self._set.get(name)

    async def run(self, aware: Aware, stopping: asyncio.Event) -> None:
        """Watch the kubeconfig Secrets and engage their clusters until `stopping` is set;
        then disengage and stop them all."""
        if self._manager is None:
            raise RuntimeError("the provider has no manager: give it to a MultiClusterManager")
        manager = self._manager
        namespace = self.namespace or manager.api_reader.namespace
        informer = Informer(
            manager.api_reader,
            "v1/Secret",
            namespace=namespace,
            label_selector=f"{self.label}=true",
        )
        controller = Controller(
            self.name,
            _SecretReconciler(self, informer, aware),
            metrics=manager.metrics,
            kind="Secret",
        )
        controller.watch(informer, EnqueueRequestForObject())
        informer.start()
        try:
            await controller.start()
            await stopping.wait()
        finally:
            await controller.stop(timeout=manager.graceful_shutdown_timeout)
            await informer.stop()
            self._digests.clear()
            await self._set.clear(aware)

    async def engage_secret(
        self, secret: Mapping[str, object] | None, name: str, aware: Aware
    ) -> None:
        """Engage, re-engage or disengage cluster `name` after its Secret (None: gone)."""
        meta = secret.get("metadata") if secret is not None else None
        if secret is None or (isinstance(meta, Mapping) and meta.get("deletionTimestamp")):
            await self._forget(name, aware)
            return
        data = secret.get("data")
        encoded = data.get(self.key) if isinstance(data, Mapping) else None
        if not isinstance(encoded, str) or not encoded:
            await self._forget(name, aware)
            raise TerminalError(f"Secret {name} holds no kubeconfig under data.{self.key}")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            await self._forget(name, aware)
            raise TerminalError(f"Secret {name}: data.{self.key} is not base64: {exc}") from None
        digest = hashlib.sha256(raw).hexdigest()
        if self._digests.get(name) == digest and name in self._set:
            return
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else ""
        try:
            config = load_kubeconfig_data(
                raw,
                context=self.context,
                source=f"Secret {namespace}/{name}",
                inline_only=not self.allow_local_references,
            )
        except ConfigError as exc:
            await self._forget(name, aware)
            raise TerminalError(str(exc)) from None
        self._digests.pop(name, None)
        await self._set.add(name, self.make_cluster(name, config), aware)
        self._digests[name] = digest

    async def _forget(self, name: str, aware: Aware) -> None:
        self._digests.pop(name, None)
        await self._set.remove(name, aware)


class _SecretReconciler(Reconciler):
    """The provider's controller: each kubeconfig Secret's cluster as the Secret says."""

    def __init__(
        self, provider: KubeconfigSecretProvider, informer: Informer, aware: Aware
    ) -> None:
        self.provider = provider
        self.informer = informer
        self.aware = aware

    async def reconcile(self, request: Request) -> Result | None:
        secret = self.informer.store.get(f"{request.namespace}/{request.name}")
        await self.provider.engage_secret(secret, request.name, self.aware)
        return None
