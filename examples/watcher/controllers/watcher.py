"""The Watcher controller: keep the ConfigMap `<name>-config` equal to the Watcher's
configuration.

The Watcher controls its ConfigMap (a controller owner reference): garbage collection deletes
it with the Watcher, and every change to it, someone's edit or deletion included, brings the
Watcher back here. Each pass compares what the ConfigMap holds with the spec and writes only
when they differ: `data` and `binaryData` are replaced wholesale, so keys dropped from the
spec are dropped from the ConfigMap too. A write that loses a race with another writer is
retried on a fresh read (`retry_on_conflict`) instead of failing the whole reconcile.
"""

from __future__ import annotations

import base64
import logging
from enum import StrEnum

import kubeforge
from kubeforge.client import Reader
from kubeforge.events import EventRecorder
from kubeforge.models import ConfigMap, ObjectMeta

from api.v1alpha1 import Watcher

log = logging.getLogger(__name__)

LABEL = "watch.kubeforge.dev/watcher"


class Outcome(StrEnum):
    """What a pass did to the ConfigMap."""

    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"


def config_map_name(watcher: Watcher) -> str:
    """The name of the ConfigMap holding a Watcher's configuration."""
    return f"{watcher.metadata.name}-config"


def _decoded(binary: dict[str, str] | None) -> dict[str, bytes]:
    # Compared as bytes: two spellings of the same bytes must not look like a difference,
    # or the controller would rewrite the ConfigMap forever.
    return {key: base64.b64decode(value) for key, value in (binary or {}).items()}


def matches(config_map: ConfigMap, watcher: Watcher) -> bool:
    """Whether the ConfigMap holds exactly the Watcher's configuration."""
    spec = watcher.spec
    return (config_map.data or {}) == (spec.config_data or {}) and _decoded(
        config_map.binary_data
    ) == _decoded(spec.config_binary_data)


def config_map_for(watcher: Watcher, metadata: ObjectMeta) -> ConfigMap:
    """The ConfigMap holding the Watcher's configuration, controlled by it.

    Empty maps are left out rather than written as nulls, as the API server itself would.
    """
    spec = watcher.spec
    config_map = ConfigMap(metadata=metadata)
    if spec.config_data:
        config_map.data = dict(spec.config_data)
    if spec.config_binary_data:
        config_map.binary_data = dict(spec.config_binary_data)
    labels = dict(metadata.labels or {})
    labels[LABEL] = watcher.metadata.name or ""
    metadata.labels = labels
    kubeforge.set_controller_reference(watcher, config_map)
    return config_map


@kubeforge.rbac(groups="watch.kubeforge.dev", resources="watchers", verbs=["get", "list", "watch"])
@kubeforge.rbac(
    groups="watch.kubeforge.dev", resources="watchers/status", verbs=["get", "update", "patch"]
)
@kubeforge.rbac(
    groups="", resources="configmaps", verbs=["get", "list", "watch", "create", "update"]
)
class WatcherReconciler(kubeforge.Reconciler):
    """Keeps each Watcher's ConfigMap in line with its spec."""

    def __init__(self, events: EventRecorder, api_reader: Reader) -> None:
        self.events = events
        # The manager's uncached reader (`manager.api_reader`): every read a request.
        self.api_reader = api_reader

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            watcher = await self.client.get(Watcher, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None  # deleted; its ConfigMap goes with it
        if watcher.metadata.deletion_timestamp is not None:
            return None  # being deleted: a ConfigMap made now would only be collected again

        name = config_map_name(watcher)
        try:
            outcome = await kubeforge.retry_on_conflict(lambda: self.sync(watcher))
        except (kubeforge.Invalid, kubeforge.AlreadyOwnedError) as err:
            # Retrying cannot fix either (say, a key in both configData and configBinaryData,
            # or a ConfigMap of that name controlled by something else): say so on the
            # Watcher, and wait for it to change.
            self.events.record(watcher, "Warning", "ConfigMapRefused", str(err))
            raise kubeforge.TerminalError(f"ConfigMap {name}: {err}") from err
        if outcome is not Outcome.UNCHANGED:
            log.info("%s: ConfigMap %s %s", request, name, outcome)
            self.events.record(
                watcher, "Normal", f"ConfigMap{outcome.title()}", f"{name} {outcome}"
            )

        if watcher.status is None or watcher.status.config_map_name != name:
            # A merge patch of the one field: no resourceVersion, so a stale cached Watcher
            # cannot make it conflict.
            await self.client.patch_status(
                Watcher,
                request.name,
                {"status": {"configMapName": name}},
                namespace=request.namespace,
            )
        return None

    async def sync(self, watcher: Watcher) -> Outcome:
        """One read-modify-write of the ConfigMap; raises Conflict when it loses a race."""
        name = config_map_name(watcher)
        current = await self.read_config_map(watcher.metadata.namespace or "", name)
        if current is None:
            metadata = ObjectMeta(name=name, namespace=watcher.metadata.namespace)
            # AlreadyExists (someone created it since the read) fails this pass; the next
            # one finds it and updates it.
            await self.client.create(config_map_for(watcher, metadata))
            return Outcome.CREATED
        # Built from the spec on the ConfigMap's own metadata: its resourceVersion makes the
        # write conditional, and whatever else others keep there (annotations) stays.
        wanted = config_map_for(watcher, current.metadata.model_copy(deep=True))
        if current.immutable is not None:
            wanted.immutable = current.immutable
        same_metadata = wanted.to_dict()["metadata"] == current.to_dict()["metadata"]
        if same_metadata and matches(current, watcher):
            return Outcome.UNCHANGED
        await self.write_config_map(wanted)
        return Outcome.UPDATED

    async def read_config_map(self, namespace: str, name: str) -> ConfigMap | None:
        """The ConfigMap as the API server has it now, or None.

        Read past the cache: after a conflict the cached copy may still be the one that just
        lost the race, and retrying with it would only conflict again.
        """
        try:
            config_map: ConfigMap = await self.api_reader.get(ConfigMap, name, namespace=namespace)
        except kubeforge.NotFound:
            return None
        return config_map

    async def write_config_map(self, config_map: ConfigMap) -> ConfigMap:
        """Replace the ConfigMap (its resourceVersion makes a lost race a Conflict)."""
        updated: ConfigMap = await self.client.update(config_map)
        return updated
