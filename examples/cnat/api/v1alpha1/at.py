"""At v1alpha1: run a command line once, at a given time (the "cloud native at" command).

Deprecated in favour of v1, whose command is a list of arguments; still served, and converted
to and from v1 (the hub) without losing anything (see command.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

import kubeforge
from kubeforge import conversion, markers

from api import v1
from api.v1alpha1.command import COMMAND_ANNOTATION, argv_of, command_line

# RFC 3339, in UTC: the schedule names an instant, not a local time.
UTC_RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"
# Something besides the blanks a shell splits words at: a line of blanks runs nothing.
NOT_BLANK = r"[^ \t\r\n]"

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

    command: Annotated[str, markers.MinLength(1), markers.Pattern(NOT_BLANK)]
    """The command to run, split into arguments as a shell would (e.g. `echo hello`)."""


class AtStatus(kubeforge.Model):
    """Where the run is."""

    phase: Phase | None = None
    """PENDING until the schedule is reached, RUNNING while the pod runs, DONE afterwards."""


@kubeforge.resource(
    group="cnat.kubeforge.dev",
    version="v1alpha1",
    storage=False,
    deprecated=True,
    deprecation_warning=(
        "cnat.kubeforge.dev/v1alpha1 At is deprecated; use cnat.kubeforge.dev/v1 At"
    ),
    printer_columns=[
        kubeforge.PrinterColumn("Schedule", ".spec.schedule"),
        kubeforge.PrinterColumn("Command", ".spec.command", priority=1),
        kubeforge.PrinterColumn("Phase", ".status.phase"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class At(kubeforge.Resource[AtSpec, AtStatus], conversion.Convertible[v1.At]):
    """At runs a command in a pod once, at the scheduled time."""

    def to_hub(self) -> v1.At:
        argv = argv_of(self.spec.command)
        hub = v1.At(
            metadata=self.metadata,
            spec=v1.AtSpec(schedule=self.spec.schedule, command=argv),
            status=None if self.status is None else v1.AtStatus(phase=self.status.phase),
        )
        # Any line this object carried from an earlier conversion is replaced by its own.
        conversion.unstash(hub, COMMAND_ANNOTATION)
        if command_line(argv) != self.spec.command:
            conversion.stash(hub, COMMAND_ANNOTATION, self.spec.command)
        return hub

    @classmethod
    def from_hub(cls, hub: v1.At) -> Self:
        original = conversion.unstash(hub, COMMAND_ANNOTATION)
        if not isinstance(original, str):
            original = None
        return cls(
            metadata=hub.metadata,
            spec=AtSpec(
                schedule=hub.spec.schedule, command=command_line(hub.spec.command, original)
            ),
            status=None if hub.status is None else AtStatus(phase=hub.status.phase),
        )
