"""API errors, answered as `Status` objects with the reason and code Kubernetes uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubeforge._api.machinery.fielderror import FieldError, invalid_details, invalid_message

__all__ = ["StatusError", "status_success"]


class StatusError(Exception):
    """An error the server answers with a `Status` body; raised anywhere in request handling."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            # An unknown reason is left out, as Go's encoder leaves the empty field out.
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body

    # Constructors, one per reason. `resource` is the plural, qualified with the group when it
    # has one (`widgets.example.com`), as Kubernetes prints it.

    @classmethod
    def not_found(cls, group: str, resource: str, name: str) -> StatusError:
        return cls(
            404,
            "NotFound",
            f'{_qualified(group, resource)} "{name}" not found',
            _details(name, group, resource),
        )

    @classmethod
    def already_exists(
        cls, group: str, resource: str, name: str, generated: bool = False
    ) -> StatusError:
        message = f'{_qualified(group, resource)} "{name}" already exists'
        details = _details(name, group, resource)
        if generated:
            message += ", the server was not able to generate a unique name for the object"
            details["retryAfterSeconds"] = 1
        return cls(409, "AlreadyExists", message, details)

    @classmethod
    def conflict(cls, group: str, resource: str, name: str, why: str) -> StatusError:
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {why}',
            _details(name, group, resource),
        )

    @classmethod
    def stale(cls, group: str, resource: str, name: str) -> StatusError:
        return cls.conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )

    @classmethod
    def invalid(cls, group: str, kind: str, name: str, errors: Sequence[FieldError]) -> StatusError:
        return cls(
            422,
            "Invalid",
            invalid_message(group, kind, name, errors),
            invalid_details(group, kind, name, errors),
        )

    @classmethod
    def unprocessable(cls, message: str) -> StatusError:
        return cls(422, "Invalid", message)

    @classmethod
    def bad_request(cls, message: str) -> StatusError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(
        cls,
        group: str,
        resource: str,
        name: str,
        why: str,
        causes: list[dict[str, str]] | None = None,
    ) -> StatusError:
        details = _details(name, group, resource)
        if causes:
            details["causes"] = causes
        subject = f'{_qualified(group, resource)} "{name}"' if name else _qualified(group, resource)
        return cls(403, "Forbidden", f"{subject} is forbidden: {why}", details)

    @classmethod
    def unauthorized(cls) -> StatusError:
        return cls(401, "Unauthorized", "Unauthorized")

    @classmethod
    def method_not_allowed(cls) -> StatusError:
        return cls(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    @classmethod
    def unsupported_media_type(cls, content_type: str, accepted: Sequence[str]) -> StatusError:
        return cls(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(accepted),
        )

    @classmethod
    def not_acceptable(cls, accepted: Sequence[str]) -> StatusError:
        return cls(
            406,
            "NotAcceptable",
            "only the following media types are accepted: " + ", ".join(accepted),
        )

    @classmethod
    def gone(cls, message: str) -> StatusError:
        return cls(410, "Expired", message)

    @classmethod
    def too_large(cls, message: str) -> StatusError:
        return cls(413, "RequestEntityTooLarge", message)

    @classmethod
    def too_many_requests(cls, message: str, retry_after: int = 1) -> StatusError:
        return cls(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after})

    @classmethod
    def request_timeout(cls, message: str) -> StatusError:
        # The client, not the server, was too slow: 408, with the reason of timeouts.
        return cls(408, "Timeout", message)

    @classmethod
    def route_not_found(cls) -> StatusError:
        return cls(404, "NotFound", "the server could not find the requested resource")

    @classmethod
    def internal(cls, message: str) -> StatusError:
        return cls(500, "InternalError", f"Internal error occurred: {message}")

    @classmethod
    def timeout(cls, message: str) -> StatusError:
        return cls(504, "Timeout", message)


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, resource: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def status_success(group: str, resource: str, name: str, uid: str | None = None) -> dict[str, Any]:
    """The Status answered by a DELETE that removed the object at once."""
    details = _details(name, group, resource)
    if uid:
        details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
