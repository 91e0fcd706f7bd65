"""useless v1alpha1."""

from api.v1alpha1.machine import (
    DOWN,
    UP,
    Machine,
    MachineSpec,
    MachineStatus,
    Switch,
    SwitchSpec,
    SwitchStatus,
)

__all__ = [
    "DOWN",
    "UP",
    "Machine",
    "MachineSpec",
    "MachineStatus",
    "Switch",
    "SwitchSpec",
    "SwitchStatus",
]
