"""Stage 2 of the useless machine: a Machine with `spec.switches` Switch objects.

Each pass starts from what the API server holds and does, in order:

1. membership: the switches labelled `machine=<name>` are the machine's. It makes itself
   their controller owner (adopting one that was moved from another machine, and marking
   it so with the annotation `useless.container.training/moved-in`) and lets go of any
   switch it controls whose label now names something else;
2. scale: it creates the missing switches and deletes the newest extra ones (keeping one
   moved in over its own: the mark says which, also on a pass after one that adopted it
   and then failed, or after a restart);
3. flip: it notes when each switch is first seen up (the Switch's `status.seenAt`) and
   turns the longest-up one back down once it has been up for `interval` seconds, but
   flips at most one switch every `interval` seconds (the Machine's `status.flippedAt`);
4. status: it records `status.positions` and asks to come back when the next flip is due.

The machine and its switches are read from the API server, not the cache: a switch created
a moment ago (under a generated name) may not be in the cache yet, and counting from the
cache would create it twice; a flip must see the last `flippedAt`, not an older copy.

Of the Machine this controller writes only `status.positions` and `status.flippedAt`; the
stage 1 controller owns `spec.switchPosition` and `status.seenAt`, so both run side by side.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import kubeforge
from kubeforge.client import Reader
from kubeforge.models import OwnerReference

from api.v1alpha1 import DOWN, UP, Machine, Switch
from controllers.common import GROUP, INTERVAL, rfc3339
from controllers.switch import (
    MACHINE_LABEL,
    in_order,
    machine_of,
    new_switch,
    positions,
    seen_at,
)

log = logging.getLogger(__name__)

MOVED_IN = f"{GROUP}/moved-in"
"""The annotation on a switch a machine adopted from another one."""


@kubeforge.rbac(groups=GROUP, resources="machines", verbs=["get", "list", "watch"])
@kubeforge.rbac(groups=GROUP, resources="machines/status", verbs=["get", "update", "patch"])
@kubeforge.rbac(
    groups=GROUP,
    resources="switches",
    verbs=["get", "list", "watch", "create", "update", "patch", "delete"],
)
@kubeforge.rbac(groups=GROUP, resources="switches/status", verbs=["get", "update", "patch"])
class MachineReconciler(kubeforge.Reconciler):
    """Keeps a Machine's switches: their number, their ownership, their positions."""

    def __init__(self, api_reader: Reader, interval: float = INTERVAL) -> None:
        # Each pass works from what the API server holds now: the manager's uncached reader.
        self.api_reader = api_reader
        self.interval = interval

    def setup_with_manager(self, manager: kubeforge.Manager) -> None:
        """Register this reconciler for Machines (controller `machine`), coming back to a
        machine when a switch it controls changes or a switch's label names it."""
        manager.controller().for_(Machine).owns(Switch).watches(Switch, machine_of).complete(self)

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            machine = await self.api_reader.get(Machine, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None  # its switches are garbage-collected with it
        if machine.metadata.deletion_timestamp is not None:
            return None
        try:
            switches, adopted = await self.members(machine)
            switches = await self.scale(machine, switches, adopted)
            return await self.flip(machine, switches)
        except kubeforge.Conflict:
            # A switch changed between our read and our write: start again from what is there.
            return kubeforge.Result(requeue=True)

    async def members(self, machine: Machine) -> tuple[list[Switch], set[str]]:
        """The machine's switches, oldest first, each controlled by it once this returns;
        and the names of those moved in from elsewhere (adopted now or by an earlier pass:
        they carry the MOVED_IN mark)."""
        name, uid = machine.metadata.name, machine.metadata.uid
        mine, adopted = [], set()
        for switch in await self.api_reader.list(Switch, namespace=machine.metadata.namespace):
            if switch.metadata.deletion_timestamp is not None:
                continue
            labelled = (switch.metadata.labels or {}).get(MACHINE_LABEL) == name
            controller = _controller_of(switch)
            controlled = controller is not None and controller.uid == uid
            if labelled and not controlled:
                if controller is not None and not _is_machine(controller):
                    continue  # something else manages it; not ours to take
                switch = await self.adopt(machine, switch)
            elif controlled and not labelled:
                await self.release(machine, switch)
            if labelled:
                mine.append(switch)
                if MOVED_IN in (switch.metadata.annotations or {}):
                    adopted.add(switch.metadata.name or "")
        return in_order(mine), adopted

    async def adopt(self, machine: Machine, switch: Switch) -> Switch:
        """Become the switch's controller, replacing the machine it was moved from, and mark
        it as moved in, in the same write: scaling keeps it over the machine's own, and the
        mark (not this pass's memory) is what says so, whatever happens before scaling."""
        switch.metadata.owner_references = [
            ref
            for ref in switch.metadata.owner_references or []
            if not (ref.controller and _is_machine(ref))
        ]
        kubeforge.set_controller_reference(machine, switch)
        switch.metadata.annotations = {**(switch.metadata.annotations or {}), MOVED_IN: "true"}
        log.info("%s: adopting switch %s", _key(machine), switch.metadata.name)
        adopted: Switch = await self.client.update(switch)
        return adopted

    async def release(self, machine: Machine, switch: Switch) -> None:
        """Stop controlling a switch whose label no longer names this machine (so deleting
        the machine no longer deletes it)."""
        kubeforge.remove_owner_reference(machine, switch)
        annotations = dict(switch.metadata.annotations or {})
        annotations.pop(MOVED_IN, None)
        switch.metadata.annotations = annotations or None
        log.info("%s: releasing switch %s", _key(machine), switch.metadata.name)
        await self.client.update(switch)

    async def scale(
        self, machine: Machine, switches: list[Switch], adopted: set[str]
    ) -> list[Switch]:
        """Create or delete switches until there are `spec.switches`; returns those kept.
        The newest go first, but a switch just moved in is kept over the machine's own:
        whoever moved it wanted it here."""
        wanted = machine.spec.switches
        own = [s for s in reversed(switches) if s.metadata.name not in adopted]
        moved_in = [s for s in reversed(switches) if s.metadata.name in adopted]
        extra = (own + moved_in)[: max(len(switches) - wanted, 0)]
        for switch in extra:
            log.info("%s: deleting switch %s", _key(machine), switch.metadata.name)
            await kubeforge.ignore_not_found(
                self.client.delete(
                    Switch, switch.metadata.name or "", namespace=machine.metadata.namespace
                )
            )
        kept = [s for s in switches if s not in extra]
        while len(kept) < wanted:
            created: Switch = await self.client.create(new_switch(machine))
            log.info("%s: created switch %s", _key(machine), created.metadata.name)
            kept.append(created)
        return kept

    async def flip(self, machine: Machine, switches: list[Switch]) -> kubeforge.Result | None:
        """Note up switches, flip the one that is due (if any), record the positions; the
        result comes back when the next flip is due."""
        now = datetime.now(UTC)
        pause = timedelta(seconds=self.interval)
        up: list[tuple[datetime, Switch]] = []
        for switch in switches:
            seen = seen_at(switch)
            if switch.spec.position == UP:
                if seen is None:
                    seen = now
                    await self.set_seen_at(switch, now)
                up.append((seen, switch))
            elif seen is not None:
                await self.set_seen_at(switch, None)  # down again: a fresh wait next time
        up.sort(key=lambda pair: pair[0])

        status = machine.status
        flipped_at = status.flipped_at if status is not None else None

        def due(seen: datetime) -> datetime:
            return max(seen + pause, flipped_at + pause) if flipped_at else seen + pause

        if up and due(up[0][0]) <= now:
            _, switch = up.pop(0)
            # Recorded before the flip: if we stop in between, the next flip waits an
            # interval too many rather than coming too soon.
            flipped_at = now
            await self.patch_status(machine, {"flippedAt": rfc3339(now)})
            await self.client.patch(
                Switch,
                switch.metadata.name or "",
                {
                    "metadata": {"resourceVersion": switch.metadata.resource_version},
                    "spec": {"position": DOWN},
                },
                namespace=switch.metadata.namespace,
            )
            switch.spec.position = DOWN
            await self.set_seen_at(switch, None)
            log.info("%s: flipped switch %s back down", _key(machine), switch.metadata.name)

        shown = positions(switches)
        if status is None or status.positions != shown:
            await self.patch_status(machine, {"positions": shown})
        if not up:
            return None
        return kubeforge.Result(requeue_after=max((due(up[0][0]) - now).total_seconds(), 0.01))

    async def set_seen_at(self, switch: Switch, when: datetime | None) -> None:
        """Write a switch's `status.seenAt` (None removes it)."""
        await self.client.patch_status(
            Switch,
            switch.metadata.name or "",
            {"status": {"seenAt": rfc3339(when)}},
            namespace=switch.metadata.namespace,
        )

    async def patch_status(self, machine: Machine, fields: dict[str, str | None]) -> None:
        """Merge `fields` into the machine's status, leaving stage 1's `seenAt` alone."""
        await self.client.patch_status(
            Machine,
            machine.metadata.name or "",
            {"status": fields},
            namespace=machine.metadata.namespace,
        )


def _controller_of(switch: Switch) -> OwnerReference | None:
    for ref in switch.metadata.owner_references or []:
        if ref.controller:
            return ref
    return None


def _is_machine(ref: OwnerReference) -> bool:
    return ref.kind == "Machine" and ref.api_version.partition("/")[0] == GROUP


def _key(machine: Machine) -> str:
    return f"{machine.metadata.namespace}/{machine.metadata.name}"
