"""Typed webhooks for one kind: a Defaulter that changes the object, a Validator that judges it.

    class MachineDefaulter(kubeforge.Defaulter[Machine]):
        async def default(self, machine: Machine) -> None:
            machine.spec.switches = machine.spec.switches or 1

    class MachineValidator(kubeforge.Validator[Machine]):
        def validate_update(self, old: Machine, new: Machine) -> kubeforge.Warnings | None:
            if new.spec.switches < old.spec.switches:
                raise kubeforge.InvalidObject(
                    kubeforge.FieldError.forbidden("spec.switches", "may not shrink"))
            return None

Objects arrive as the kind's class (or as dicts for kinds given by name). Every method may be
`async def` or plain `def` (run in a worker thread), return warnings (a list of strings) or
None, and raise `Denied` or `InvalidObject` to refuse. The defaulter's JSON Patch is
computed for it (_webhook/patch.py). As in controller-runtime, a defaulter is not called for
DELETE (nothing to default) and neither is called for CONNECT.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from kubeforge._api.meta import GroupVersionKind, ResourceInfo
from kubeforge._webhook.admission import call
from kubeforge._webhook.patch import defaulting_patch
from kubeforge._webhook.review import AdmissionRequest, AdmissionResponse

__all__ = [
    "Defaulter",
    "DefaultingHandler",
    "ValidatingHandler",
    "Validator",
    "Warnings",
]

T = TypeVar("T")

Warnings = list[str]
"""Warning messages for the client (kubectl prints them)."""

Outcome = Warnings | None | Awaitable[Warnings | None]


class Defaulter(Generic[T]):
    """Sets defaults on objects of a kind: implement `default` (async or plain)."""

    def default(self, obj: T) -> Outcome:
        """Change `obj` in place; return warnings or None; raise Denied to refuse."""
        raise NotImplementedError


class Validator(Generic[T]):
    """Judges objects of a kind: implement the checks you need (each allows by default)."""

    def validate_create(self, obj: T) -> Outcome:
        """Check a new object; return warnings or None; raise Denied/InvalidObject to refuse."""
        return None

    def validate_update(self, old: T, new: T) -> Outcome:
        """Check a change from `old` to `new`."""
        return None

    def validate_delete(self, obj: T) -> Outcome:
        """Check a deletion of `obj`."""
        return None


class _Codec:
    """Reads a request's object as the kind's class (or as a dict) and writes it back."""

    def __init__(self, kind: Any) -> None:
        info = getattr(kind, "__kubeforge__", None)
        self.cls: type[Any] | None = kind if isinstance(info, ResourceInfo) else None
        if isinstance(info, ResourceInfo):
            self.gvk = info.gvk
        elif isinstance(kind, GroupVersionKind):
            self.gvk = kind
        else:
            self.gvk = GroupVersionKind.parse(str(kind))

    def decode(self, raw: dict[str, Any] | None, what: str) -> Any:
        """The object as the kind's class; ValueError with a message for the client."""
        if not raw:
            raise ValueError(f"the request has no {what} to decode")
        api_version, kind = raw.get("apiVersion"), raw.get("kind")
        typed = api_version is not None or kind is not None
        if typed and (api_version, kind) != (self.gvk.api_version, self.gvk.kind):
            raise ValueError(
                f"the {what} is a {kind} of {api_version}; this webhook admits "
                f"{self.gvk.kind} of {self.gvk.api_version}"
            )
        if self.cls is None:
            return copy.deepcopy(raw)
        try:
            return self.cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(
                f"cannot read the {what} as {self.gvk.kind}: {where}: {first['msg']}"
            ) from None

    def encode(self, obj: Any) -> dict[str, Any]:
        if isinstance(obj, dict):
            return obj
        data: dict[str, Any] = obj.to_dict()
        return data


def _warnings(value: Any, source: Callable[..., Any]) -> Warnings | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, dict | bytes):
        items = list(value)
        if all(isinstance(item, str) for item in items):
            return items or None
    name = getattr(source, "__qualname__", repr(source))
    raise TypeError(f"{name} returned {value!r}; expected warnings (a list of strings) or None")


class DefaultingHandler:
    """Answers a mutating webhook for one kind with a defaulter."""

    def __init__(self, kind: Any, default: Callable[[Any], Outcome]) -> None:
        self.codec = _Codec(kind)
        self.default = default

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation in ("DELETE", "CONNECT"):
            return AdmissionResponse.allow()
        raw = request.object
        try:
            obj = self.codec.decode(raw, "object")
        except ValueError as exc:
            return AdmissionResponse.error(400, str(exc))
        assert raw is not None
        # The typed object's JSON before the defaulter: changes are measured against it.
        before = copy.deepcopy(self.codec.encode(obj))
        warnings = _warnings(await call(self.default, obj), self.default)
        patch = defaulting_patch(raw, before, self.codec.encode(obj))
        return AdmissionResponse.allow(patch=patch, warnings=warnings)


class ValidatingHandler:
    """Answers a validating webhook for one kind with a validator."""

    def __init__(self, kind: Any, validator: Validator[Any]) -> None:
        self.codec = _Codec(kind)
        self.validator = validator

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        validator = self.validator
        method: Callable[..., Outcome]
        try:
            if request.operation == "CREATE":
                method = validator.validate_create
                args = [self.codec.decode(request.object, "object")]
            elif request.operation == "UPDATE":
                method = validator.validate_update
                args = [
                    self.codec.decode(request.old_object, "old object"),
                    self.codec.decode(request.object, "object"),
                ]
            elif request.operation == "DELETE":
                # The object being deleted travels as oldObject (kubernetes#76346).
                method = validator.validate_delete
                args = [self.codec.decode(request.old_object, "old object")]
            else:
                return AdmissionResponse.allow()
        except ValueError as exc:
            return AdmissionResponse.error(400, str(exc))
        warnings = _warnings(await call(method, *args), method)
        return AdmissionResponse.allow(warnings=warnings)
