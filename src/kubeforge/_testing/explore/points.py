"""A perturbation, written as `<action>@<where>` (what `--kubeforge-perturb` takes and a
finding's replay command carries):

- `crash@widget:create:ConfigMap/w-*#1`: the manager stops abruptly right after that write
  (controller `widget`'s first create of a ConfigMap named `w-` and a generated suffix)
  succeeds, and a new one starts, as a restarted pod would;
- `error@widget:update_status:Widget/w#1`: that write fails instead (409 Conflict for an
  update, 500 for any other write) and is not made;
- `stale@widget:ConfigMap/w-child#2`: when controller `widget` reads version 2 of that
  object from its cache, it is served the version before (or nothing, for version 1);
- `coalesce@Pod/w#3`: the watch events of that object from its version 3 on are held back
  until they stop coming, and only the last is delivered: intermediate states go unseen;
- `revert@Widget/w`: after the test, the object's spec is changed (A -> B) and changed back
  (B -> A), letting the operator settle after each;
- `delete@widget:create:Record/ns.w#1`: right after that write, the object the reconcile
  was working on is deleted, and the test itself is abandoned;
- `advance@widget:Widget/w#1`: after the test, the virtual clock moves past the first
  `requeue_after` controller `widget` asked for Widget/w (a test on virtual time only).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACTIONS", "Perturbation"]

ACTIONS = ("crash", "error", "stale", "coalesce", "revert", "delete", "advance")
# The actions whose place is a write.
AT_WRITES = frozenset({"crash", "error", "delete"})

_FORMS = {
    "crash": "controller:verb:Kind/name#n",
    "error": "controller:verb:Kind/name#n",
    "delete": "controller:verb:Kind/name#n",
    "stale": "controller:Kind/name#version",
    "coalesce": "Kind/name#version",
    "revert": "Kind/name",
    "advance": "controller:Kind/name#n",
}


@dataclass(frozen=True)
class Perturbation:
    """One perturbation: an action at a place of the run (see the module)."""

    action: str
    controller: str = ""
    verb: str = ""
    object: str = ""
    number: int = 0

    def __str__(self) -> str:
        where = self.object
        if self.verb:
            where = f"{self.verb}:{where}"
        if self.controller:
            where = f"{self.controller}:{where}"
        if self.number:
            where = f"{where}#{self.number}"
        return f"{self.action}@{where}"

    @property
    def kind(self) -> str:
        """The kind of the object the place names."""
        return self.object.partition("/")[0]

    @property
    def point(self) -> str:
        """The write a write's action follows, as the trace names it."""
        return f"{self.controller}:{self.verb}:{self.object}#{self.number}"

    @classmethod
    def parse(cls, text: str) -> Perturbation:
        """Read `<action>@<where>`; ValueError saying what is wrong."""
        action, at, where = text.strip().partition("@")
        if not at or action not in ACTIONS:
            raise ValueError(
                f"a perturbation is <action>@<where>, the action one of {', '.join(ACTIONS)}: "
                f"not {text!r}"
            )
        form = _FORMS[action]
        number = 0
        if "#" in form:
            where, hash_, digits = where.rpartition("#")
            if not hash_ or not digits.isdigit() or int(digits) < 1:
                raise ValueError(f"{action}@ takes {form}: not {text!r}")
            number = int(digits)
        fields = form.partition("#")[0].split(":")
        parts = where.split(":", len(fields) - 1)
        if len(parts) != len(fields) or not all(parts) or "/" not in parts[-1]:
            raise ValueError(f"{action}@ takes {form}: not {text!r}")
        named = dict(zip(fields, parts, strict=True))
        return cls(
            action,
            controller=named.get("controller", ""),
            verb=named.get("verb", ""),
            object=parts[-1],
            number=number,
        )

    def describe(self) -> str:
        """What the perturbation does, in words."""
        nth = _ordinal(self.number)
        if self.action == "crash":
            return (
                f"the manager crashed right after {self.controller}'s {nth} {self.verb} of "
                f"{self.object}, and a new one started"
            )
        if self.action == "error":
            return f"{self.controller}'s {nth} {self.verb} of {self.object} failed"
        if self.action == "delete":
            return (
                f"the object being reconciled was deleted right after {self.controller}'s {nth} "
                f"{self.verb} of {self.object}"
            )
        if self.action == "stale":
            if self.number == 1:
                return (
                    f"{self.controller}'s cache did not show {self.object} yet, where its "
                    "version 1 was current"
                )
            return (
                f"{self.controller} read version {self.number - 1} of {self.object} from its "
                f"cache, where version {self.number} was current"
            )
        if self.action == "coalesce":
            return (
                f"the watch events of {self.object} from its version {self.number} on were "
                "held back and only the last was delivered"
            )
        if self.action == "revert":
            return f"the spec of {self.object} was changed and changed back after the test"
        return (
            f"after the test, the clock moved past the {nth} requeue_after {self.controller} "
            f"asked for {self.object}"
        )


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10)
    return f"{number}{suffix or 'th'}"
