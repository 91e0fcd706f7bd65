"""At v1: run a program with its arguments once, at a given time.

The hub of At's versions (every other version converts to and from this one) and the version
the API server stores. Unlike v1alpha1's command line, the command is the list of arguments
the pod runs, so nothing is left to a shell's quoting rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import kubeforge
from kubeforge import conversion, markers

# RFC 3339, in UTC: the schedule names an instant, not a local time.
UTC_RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"

Phase = Literal["PENDING", "RUNNING", "DONE"]


class AtSpec(kubeforge.Model):
    """What to run and when."""

    schedule: Annotated[
        datetime,
        markers.Format("date-time"),
        markers.Pattern(UTC_RFC3339),
        markers.Immutable("the schedule cannot be changed once set"),
    ]
    """When to run the command: an RFC 3339 time in UTC, e.g. 2026-11-21T09:00:00Z."""

    command: Annotated[list[str], markers.MinItems(1)]
    """The program and its arguments, as the pod runs them (e.g. ["echo", "hello"])."""


class AtStatus(kubeforge.Model):
    """Where the run is."""

    phase: Phase | None = None
    """PENDING until the schedule is reached, RUNNING while the pod runs, DONE afterwards."""


@kubeforge.resource(
    group="cnat.kubeforge.dev",
    version="v1",
    printer_columns=[
        kubeforge.PrinterColumn("Schedule", ".spec.schedule"),
        kubeforge.PrinterColumn("Command", ".spec.command", priority=1),
        kubeforge.PrinterColumn("Phase", ".status.phase"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class At(kubeforge.Resource[AtSpec, AtStatus], conversion.Hub):
    """At runs a command in a pod once, at the scheduled time."""
