"""At: run a command once, at a given time (the "cloud native at" command)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import kubeforge

# RFC 3339, in UTC: the schedule names an instant, not a local time.
UTC_RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"

Phase = Literal["PENDING", "RUNNING", "DONE"]


class AtSpec(kubeforge.Model):
    """What to run and when."""

    schedule: Annotated[
        datetime,
        kubeforge.Format("date-time"),
        kubeforge.Pattern(UTC_RFC3339),
        kubeforge.Immutable("the schedule cannot be changed once set"),
    ]
    """When to run the command: an RFC 3339 time in UTC, e.g. 2026-11-21T09:00:00Z."""

    command: Annotated[str, kubeforge.MinLength(1)]
    """The command to run, split into arguments at spaces (e.g. `echo hello`)."""


class AtStatus(kubeforge.Model):
    """Where the run is."""

    phase: Phase | None = None
    """PENDING until the schedule is reached, RUNNING while the pod runs, DONE afterwards."""


@kubeforge.resource(
    group="cnat.kubeforge.dev",
    version="v1alpha1",
    printer_columns=[
        kubeforge.PrinterColumn("Schedule", ".spec.schedule"),
        kubeforge.PrinterColumn("Command", ".spec.command", priority=1),
        kubeforge.PrinterColumn("Phase", ".status.phase"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class At(kubeforge.Resource[AtSpec, AtStatus]):
    """At runs a command in a pod once, at the scheduled time."""
