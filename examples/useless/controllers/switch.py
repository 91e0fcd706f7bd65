"""Switches as the stage 2 machine sees them: which machine a switch belongs to, how a new
one is made, the order they are shown in, and the positions string."""

from __future__ import annotations

from datetime import UTC, datetime

import kubeforge

from api.v1alpha1 import DOWN, UP, Machine, Switch, SwitchSpec

MACHINE_LABEL = "machine"
"""The label naming a switch's machine: the label, not the owner reference, decides."""

_EPOCH = datetime.min.replace(tzinfo=UTC)


def machine_of(switch: Switch) -> list[kubeforge.Request]:
    """The machine a switch's label names (none when unlabelled): the map function that
    brings a machine back whenever one of its switches changes."""
    name = (switch.metadata.labels or {}).get(MACHINE_LABEL)
    return [kubeforge.Request(switch.metadata.namespace or "", name)] if name else []


def new_switch(machine: Machine) -> Switch:
    """A down switch for `machine`: labelled with its name, controlled by it (so it is
    garbage-collected with it), named by the server from `switch-`."""
    switch = Switch(
        metadata=kubeforge.ObjectMeta(
            generate_name="switch-",
            namespace=machine.metadata.namespace,
            labels={MACHINE_LABEL: machine.metadata.name or ""},
        ),
        spec=SwitchSpec(position=DOWN),
    )
    kubeforge.set_controller_reference(machine, switch)
    return switch


def in_order(switches: list[Switch]) -> list[Switch]:
    """Oldest first (name breaks ties), the order `status.positions` lists them in; scaling
    down removes from the end."""
    return sorted(
        switches, key=lambda s: (s.metadata.creation_timestamp or _EPOCH, s.metadata.name or "")
    )


def positions(switches: list[Switch]) -> str:
    """One letter per switch, in order: `u` for up, `d` for down."""
    return "".join("u" if s.spec.position == UP else "d" for s in switches)


def seen_at(switch: Switch) -> datetime | None:
    """When the machine first saw the switch up, if it has."""
    return switch.status.seen_at if switch.status is not None else None
