"""Handlers and how they refuse: the raw handler contract, denials, and calling sync or async code.

A handler takes an AdmissionRequest and returns an AdmissionResponse; a plain `def` runs in a
worker thread, an `async def` on the loop, as reconcilers do. Any handler (and any defaulter or
validator) refuses a request by raising `Denied` (403 Forbidden) or `InvalidObject` (422
Invalid with field causes, kube-apiserver's validation error); an error carrying an API
`Status` (such as `kubeforge.NotFound` from a client call) refuses with that Status, as
controller-runtime does with errors that implement APIStatus. Any other exception is a bug
in the handler: answered as an internal error (500), logged and counted.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, runtime_checkable

from kubeforge._api.machinery.access import name_of
from kubeforge._api.machinery.fielderror import FieldError, invalid_details, invalid_message
from kubeforge._webhook.review import AdmissionRequest, AdmissionResponse
from kubeforge.clock import activity

__all__ = [
    "AdmissionHandler",
    "Denied",
    "HandlerFunction",
    "InvalidObject",
    "admission_request",
    "as_handler",
    "call",
    "handling",
    "response_for_error",
]

R = TypeVar("R")

HandlerFunction = Callable[[AdmissionRequest], AdmissionResponse | Awaitable[AdmissionResponse]]
"""A raw handler as a function: `def` or `async def`, request in, response out."""


@runtime_checkable
class AdmissionHandler(Protocol):
    """A raw handler as an object: its `handle` method (sync or async) answers requests."""

    def handle(self, request: AdmissionRequest) -> Any: ...


_current: ContextVar[AdmissionRequest] = ContextVar("kubeforge_admission_request")


def admission_request() -> AdmissionRequest:
    """The request being admitted, from inside a handler, defaulter or validator (its user,
    dryRun, options ...); LookupError elsewhere."""
    try:
        return _current.get()
    except LookupError:
        raise LookupError("no admission request is being handled here") from None


@contextlib.contextmanager
def handling(request: AdmissionRequest) -> Iterator[None]:
    """Within the block, admission_request() returns `request`."""
    token = _current.set(request)
    try:
        yield
    finally:
        _current.reset(token)


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call_method = getattr(fn, "__call__", None)  # noqa: B004 - callable objects
    return call_method is not None and inspect.iscoroutinefunction(call_method)


async def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call `fn`: awaited when async, in a worker thread when not (the thread sees the same
    admission_request())."""
    if _is_async(fn):
        return await fn(*args)
    result = await activity.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def as_handler(handler: AdmissionHandler | HandlerFunction) -> Callable[..., Any]:
    """The callable that answers requests for a raw handler (its `handle`, or itself)."""
    handle = getattr(handler, "handle", None)
    if callable(handle):
        return handle  # type: ignore[no-any-return]
    if callable(handler):
        return handler
    raise TypeError(
        f"{handler!r} is not a handler: give a function of an AdmissionRequest or an object "
        "with a handle(request) method"
    )


class Denied(Exception):
    """Refuse the request with `message` (403 Forbidden unless `code` and `reason` say
    otherwise). `warnings` reach the client along with the refusal."""

    def __init__(
        self,
        message: str,
        *,
        code: int = 403,
        reason: str = "Forbidden",
        warnings: Iterable[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.warnings = list(warnings)

    def status(self, request: AdmissionRequest) -> dict[str, Any]:
        """The Status of the refusal of `request`."""
        return {"metadata": {}, "message": self.message, "reason": self.reason, "code": self.code}


class InvalidObject(Denied):
    """Refuse the object for the given field errors: a 422 Invalid Status whose message and
    causes are those kube-apiserver gives for its own validation errors
    (`Machine.example.com "m1" is invalid: spec.size: Invalid value: 3: must be even`)."""

    def __init__(self, *errors: FieldError, warnings: Iterable[str] = ()) -> None:
        if not errors:
            raise ValueError("InvalidObject needs at least one FieldError")
        self.errors = list(errors)
        super().__init__(
            "; ".join(str(e) for e in errors), code=422, reason="Invalid", warnings=warnings
        )

    def status(self, request: AdmissionRequest) -> dict[str, Any]:
        group, kind = request.kind.group, request.kind.kind
        name = request.name or name_of(request.object) or name_of(request.old_object)
        return {
            "metadata": {},
            "status": "Failure",
            "message": invalid_message(group, kind, name, self.errors),
            "reason": "Invalid",
            "details": invalid_details(group, kind, name, self.errors),
            "code": 422,
        }


def _api_status(error: BaseException) -> dict[str, Any] | None:
    """The Status an API error carries (anything with a Status body, such as the client's
    ApiError), with its code."""
    status = getattr(error, "status", None)
    if not isinstance(status, dict):
        return None
    code = status.get("code") or getattr(error, "code", None)
    if status.get("kind") != "Status" and not isinstance(code, int):
        return None
    result = dict(status)
    if isinstance(code, int):
        result["code"] = code
    return result


def response_for_error(error: BaseException, request: AdmissionRequest) -> AdmissionResponse | None:
    """The refusal an exception stands for, or None when it is a bug rather than a refusal."""
    if isinstance(error, Denied):
        return AdmissionResponse(
            allowed=False, status=error.status(request), warnings=error.warnings or None
        )
    status = _api_status(error)
    if status is not None:
        return AdmissionResponse(allowed=False, status=status)
    return None
