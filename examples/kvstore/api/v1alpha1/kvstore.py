"""KVStore: a small replicated key-value store, one member per pod of a StatefulSet.

Each member keeps its keys in a volume of its own (`data-<name>-<ordinal>`); members join in
ordinal order and leave from the highest ordinal down. A majority of the members (the quorum)
must be up for the store to be available, which the API and the disruption budget protect.
"""

from __future__ import annotations

from typing import Annotated

import kubeforge
from kubeforge import markers
from pydantic import Field

MAX_REPLICAS = 7


class BackupSpec(kubeforge.Model):
    """When to back the store up, and how many backups' Jobs to keep."""

    schedule: Annotated[str, markers.MinLength(1)]
    """A cron schedule (five fields, or @hourly, @daily, ...) in UTC."""

    suspend: bool = False
    """Stop starting new backups (running ones finish)."""

    history: Annotated[int, markers.Minimum(1), markers.Maximum(10)] = 3
    """How many finished backup Jobs to keep, successful and failed each."""


@markers.on_class(
    markers.Rule(
        "self.replicas >= oldSelf.replicas / 2 + 1",
        message="a scale-down must keep a majority of the current members (the old "
        "membership's quorum): scale down in steps",
        field_path=".replicas",
    )
)
class KVStoreSpec(kubeforge.Model):
    """The store a user asks for."""

    replicas: Annotated[int, markers.Minimum(1), markers.Maximum(MAX_REPLICAS)] = 3
    """Members of the store, from 1 to 7; an odd number tolerates the most failures. A
    scale-down may not remove half of the members or more at once."""

    image: Annotated[str, markers.MinLength(1)] = "kvstore:0.1"
    """The store's image (its `kvstore` command serves a member)."""

    storage: Annotated[
        str,
        markers.Pattern(r"^[1-9][0-9]*(Mi|Gi|Ti)$"),
        markers.Immutable(message="the storage size is fixed once the store exists"),
    ] = "1Gi"
    """Size of each member's volume (e.g. 1Gi); fixed once the store exists."""

    storage_class_name: Annotated[
        str | None,
        markers.Immutable(message="the storage class is fixed once the store exists"),
    ] = None
    """The StorageClass of the members' volumes; the cluster's default when unset. Fixed once
    the store exists."""

    failover_seconds: Annotated[int, markers.Minimum(0), markers.Maximum(3600)] = 300
    """How long a member stays bound to a node that is not ready or unreachable before it is
    evicted and started again elsewhere (its pod's tolerationSeconds)."""

    backup: BackupSpec | None = None
    """Scheduled backups of the first member's keys; none when unset."""


class Member(kubeforge.Model):
    """One member of the store: a pod of its StatefulSet."""

    name: str
    """The pod's name, `<store>-<ordinal>`."""

    ordinal: int
    """Its place in the membership."""

    node: str | None = None
    """The node it runs on."""

    ready: bool = False
    """Whether it serves."""


class KVStoreStatus(kubeforge.Model):
    """What the controller observed."""

    observed_generation: int | None = None
    """The generation of the spec this status describes."""

    replicas: int = 0
    """Members that exist, ready or not (the scale subresource reports this number)."""

    ready_replicas: int = 0
    """Members that serve."""

    members: list[Member] = Field(default_factory=list)
    """The members, in ordinal order."""

    selector: str | None = None
    """The members' label selector, as a string."""

    conditions: Annotated[list[kubeforge.Condition], markers.ListMapKeys("type")] = Field(
        default_factory=list
    )
    """"Available" (a quorum of members serves) and "Ready" (every member serves)."""


@kubeforge.resource(
    group="store.kubeforge.dev",
    version="v1alpha1",
    short_names=["kv"],
    scale=kubeforge.Scale(".spec.replicas", ".status.replicas", ".status.selector"),
    printer_columns=[
        kubeforge.PrinterColumn("Replicas", ".spec.replicas", type="integer"),
        kubeforge.PrinterColumn("Ready", ".status.readyReplicas", type="integer"),
        kubeforge.PrinterColumn("Available", '.status.conditions[?(@.type=="Available")].status'),
        kubeforge.PrinterColumn("Backup", ".spec.backup.schedule"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class KVStore(kubeforge.Resource[KVStoreSpec, KVStoreStatus]):
    """KVStore runs a replicated key-value store: a StatefulSet with a volume per member,
    a headless Service, a client Service, a disruption budget and a backup CronJob."""
