"""Errors from the API server, one class per reason, with the server's Status kept whole."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "error_from_status",
    "ignore_already_exists",
    "ignore_not_found",
]

T = TypeVar("T")


class ApiError(Exception):
    """An error answer from the API server; `status` is its Status body.

    `call` names the client call that got it (`update_status At default/web`) when it came
    through `Client`, so a log line says which of a reconcile's requests failed.
    """

    code: int = 0
    call: str | None = None

    def __init__(self, status: dict[str, Any], code: int | None = None) -> None:
        self.status = status
        if code is not None:
            self.code = code
        elif isinstance(status.get("code"), int):
            self.code = status["code"]
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return str(self.status.get("message") or f"the server answered {self.code}")

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")

    @property
    def details(self) -> dict[str, Any]:
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}

    @property
    def retry_after(self) -> float | None:
        value = self.details.get("retryAfterSeconds")
        return float(value) if isinstance(value, int | float) else None

    def __str__(self) -> str:
        text = f"{self.code} {self.reason or type(self).__name__}: {self.message}"
        return f"{self.call}: {text}" if self.call else text


class BadRequest(ApiError):
    code = 400


class Unauthorized(ApiError):
    code = 401


class Forbidden(ApiError):
    code = 403


class NotFound(ApiError):
    code = 404


class MethodNotAllowed(ApiError):
    code = 405


class AlreadyExists(ApiError):
    """409 with reason AlreadyExists: create of a name that is taken."""

    code = 409


class Conflict(ApiError):
    """409 with reason Conflict: a stale resourceVersion or a server-side apply conflict."""

    code = 409


class Gone(ApiError):
    """410: the resourceVersion (or continue token) is older than the server remembers."""

    code = 410


class UnsupportedMediaType(ApiError):
    code = 415


class Invalid(ApiError):
    """422: the object failed validation; `causes` lists each field problem."""

    code = 422

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


class TooManyRequests(ApiError):
    code = 429


class ServerTimeout(ApiError):
    code = 504


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}


def error_from_status(code: int, status: dict[str, Any] | None) -> ApiError:
    """The right ApiError subclass for an HTTP code and Status body."""
    body = status if isinstance(status, dict) else {}
    if code == 409:
        cls: type[ApiError] = AlreadyExists if body.get("reason") == "AlreadyExists" else Conflict
    else:
        cls = _BY_CODE.get(code, ApiError)
    if not body:
        body = {"kind": "Status", "status": "Failure", "code": code}
    return cls(body, code)


async def ignore_not_found(awaitable: Awaitable[T]) -> T | None:
    """Await `awaitable`, turning NotFound into None: `await ignore_not_found(c.delete(...))`."""
    try:
        return await awaitable
    except NotFound:
        return None


async def ignore_already_exists(awaitable: Awaitable[T]) -> T | None:
    """Await `awaitable`, turning AlreadyExists into None."""
    try:
        return await awaitable
    except AlreadyExists:
        return None
