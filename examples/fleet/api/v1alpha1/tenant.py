"""Tenant: a team's place in a member cluster of the fleet (fleet.kubeforge.dev/v1alpha1).

A Tenant is made in a member cluster; the fleet operator, running in another cluster, gives
it a namespace there, `tenant-<name>`, labelled with the tenant and its owner, and says in
the Tenant's status which cluster of the fleet it was reconciled for.
"""

from __future__ import annotations

from typing import Annotated

import kubeforge
from kubeforge import markers
from pydantic import Field


class TenantSpec(kubeforge.Model):
    """The state of a Tenant its user asks for."""

    owner: Annotated[str, markers.MinLength(1), markers.MaxLength(63)]
    """Who answers for the tenant (a team or a person): the `fleet.kubeforge.dev/owner` label
    of its namespace."""


class TenantStatus(kubeforge.Model):
    """The state of a Tenant its controller observed."""

    namespace: str | None = None
    """The tenant's namespace in this cluster."""

    cluster: str | None = None
    """The name the fleet operator knows this cluster by (its kubeconfig Secret's)."""

    conditions: Annotated[list[kubeforge.Condition], markers.ListMapKeys("type")] = Field(
        default_factory=list
    )
    """The latest observations: "Available" once the namespace is there as the spec says."""


@kubeforge.resource(
    group="fleet.kubeforge.dev",
    version="v1alpha1",
    scope="Cluster",
    printer_columns=[
        kubeforge.PrinterColumn("Owner", ".spec.owner"),
        kubeforge.PrinterColumn("Namespace", ".status.namespace"),
        kubeforge.PrinterColumn("Cluster", ".status.cluster"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class Tenant(kubeforge.Resource[TenantSpec, TenantStatus]):
    """A team's namespace in a cluster of the fleet."""
