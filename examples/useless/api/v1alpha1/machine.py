"""Machine and Switch: the useless machine, whose switches always flip back off."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import kubeforge
from kubeforge import markers

UP, DOWN = "up", "down"


class MachineSpec(kubeforge.Model):
    """The machine's desired state."""

    switch_position: Annotated[str, markers.Enum(UP, DOWN)] = DOWN
    """The machine's own switch (stage 1): set it up, and the machine turns it back down."""

    switches: Annotated[int, markers.Minimum(1), markers.Maximum(16)] = 1
    """How many Switch objects the machine has (stage 2), from 1 to 16."""


class MachineStatus(kubeforge.Model):
    """What the machine controller observed."""

    seen_at: datetime | None = None
    """When the controller first saw the switch up (stage 1)."""

    positions: str = ""
    """The positions of the machine's switches, one letter each: u (up) or d (down)."""

    flipped_at: datetime | None = None
    """When the controller last flipped one of the machine's switches back down (stage 2);
    it flips at most one per interval."""


@kubeforge.resource(
    group="useless.container.training",
    version="v1alpha1",
    short_names=["mach"],
    categories=["all"],
    printer_columns=[
        kubeforge.PrinterColumn("Position", ".spec.switchPosition"),
        kubeforge.PrinterColumn("Switches", ".spec.switches", type="integer"),
        kubeforge.PrinterColumn("Positions", ".status.positions"),
        kubeforge.PrinterColumn("Seen", ".status.seenAt", type="date"),
        kubeforge.PrinterColumn("Flipped", ".status.flippedAt", type="date", priority=1),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class Machine(kubeforge.Resource[MachineSpec, MachineStatus]):
    """A useless machine: whatever you do, it turns its switch back off."""


class SwitchSpec(kubeforge.Model):
    """A switch's desired position."""

    position: Annotated[str, markers.Enum(UP, DOWN)] = DOWN
    """up or down; the machine flips an up switch back down."""


class SwitchStatus(kubeforge.Model):
    """What the machine controller observed about the switch."""

    seen_at: datetime | None = None
    """When the controller first saw the switch up."""


@kubeforge.resource(
    group="useless.container.training",
    version="v1alpha1",
    short_names=["sw"],
    printer_columns=[
        kubeforge.PrinterColumn("Position", ".spec.position"),
        kubeforge.PrinterColumn("Machine", ".metadata.labels.machine"),
        kubeforge.PrinterColumn("Seen", ".status.seenAt", type="date"),
        kubeforge.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
)
class Switch(kubeforge.Resource[SwitchSpec, SwitchStatus]):
    """A switch of a useless machine; labelled machine=<name> and owned by that machine."""
