"""Registering a kind's typed webhooks, in the controller builder's style.

    manager.webhook_for(Machine).defaulter(MachineDefaulter()).validator(MachineValidator()).complete()

controller-runtime's WebhookManagedBy: the defaulter is served at `/mutate-<group>-<version>-
<kind>` and the validator at `/validate-...` (kubebuilder's paths) unless given a path. Each
takes its options from the `@admission_webhook` marker on the defaulter's or validator's class
(or function), and defaults otherwise: create and update, failurePolicy Fail, sideEffects
None, named `m<kind>-<version>.kb.io` / `v<kind>-<version>.kb.io`.

When the kind's versions are a hub and its spokes, `complete()` also serves their conversion
at `/convert`, as controller-runtime's builder does for convertible types; a convertible kind
needs neither a defaulter nor a validator (`manager.webhook_for(v1.At).complete()`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kubeforge._api.conversion import kind_versions
from kubeforge._api.webhooks import (
    WebhookMarker,
    check_path,
    kind_of,
    marker_for,
    mutate_path,
    validate_path,
)
from kubeforge._webhook.typed import (
    Defaulter,
    DefaultingHandler,
    Outcome,
    ValidatingHandler,
    Validator,
)

if TYPE_CHECKING:
    from kubeforge._webhook.server import RegisteredWebhook, WebhookServer

__all__ = ["WebhookBuilder"]

T = TypeVar("T")


class WebhookBuilder(Generic[T]):
    """Fluent setup of a kind's defaulting and validating webhooks; `complete()` registers
    them with the server."""

    def __init__(self, server: WebhookServer, kind: Any) -> None:
        self.server = server
        self.kind = kind
        self.gvk, _ = kind_of(kind)
        self._defaulter: tuple[Any, Callable[[Any], Outcome], str | None] | None = None
        self._validator: tuple[Validator[Any], str | None] | None = None

    def defaulter(
        self, defaulter: Defaulter[T] | Callable[[T], Outcome], *, path: str | None = None
    ) -> WebhookBuilder[T]:
        """Default objects with a Defaulter (or a function of the object) at kubebuilder's
        mutating path, or at `path`."""
        if self._defaulter is not None:
            raise ValueError("defaulter() may be called only once")
        if isinstance(defaulter, Defaulter):
            function: Callable[[Any], Outcome] = defaulter.default
        elif callable(defaulter):
            function = defaulter
        else:
            raise TypeError(f"{defaulter!r} is neither a Defaulter nor a function of the object")
        self._defaulter = (defaulter, function, None if path is None else check_path(path))
        return self

    def validator(self, validator: Validator[T], *, path: str | None = None) -> WebhookBuilder[T]:
        """Validate objects with a Validator at kubebuilder's validating path, or at `path`."""
        if self._validator is not None:
            raise ValueError("validator() may be called only once")
        if not all(
            callable(getattr(validator, name, None))
            for name in ("validate_create", "validate_update", "validate_delete")
        ):
            raise TypeError(f"{validator!r} is not a Validator")
        self._validator = (validator, None if path is None else check_path(path))
        return self

    def complete(self) -> list[RegisteredWebhook]:
        """Register the webhooks with the server, the kind's conversion included when it has
        a hub and spokes (ValueError for a path already served)."""
        convertible = isinstance(self.kind, type) and kind_versions(self.kind) is not None
        if self._defaulter is None and self._validator is None and not convertible:
            raise ValueError(
                f"webhook_for({self.gvk.kind}) needs a defaulter, a validator, or a kind whose "
                "versions convert through a hub (kubeforge.Hub and kubeforge.Convertible)"
            )
        registered = []
        if self._defaulter is not None:
            source, function, path = self._defaulter
            handler = DefaultingHandler(self.kind, function)
            registered.append(self._register(source, handler, True, path))
        if self._validator is not None:
            validator, path = self._validator
            registered.append(
                self._register(validator, ValidatingHandler(self.kind, validator), False, path)
            )
        if convertible:
            registered.append(self.server.register_conversion(self.kind))
        return registered

    def _register(
        self, source: Any, handler: Any, mutating: bool, path: str | None
    ) -> RegisteredWebhook:
        marker = marker_for(source, mutating) or WebhookMarker()
        if marker.kind is not None and kind_of(marker.kind)[0] != self.gvk:
            raise ValueError(
                f"{source!r}: its webhook marker is for {kind_of(marker.kind)[0]}, not {self.gvk}"
            )
        path = path or marker.path or (mutate_path if mutating else validate_path)(self.gvk)
        spec = marker.spec(kind=self.kind, mutating=mutating, path=path)
        return self.server.register(path, handler, mutating=mutating, kind=self.kind, spec=spec)
