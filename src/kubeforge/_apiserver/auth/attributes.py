"""What a request asks to do, as authorizers see it (Kubernetes' authorizer.Attributes)."""

from __future__ import annotations

from dataclasses import dataclass

from kubeforge._apiserver.request.user import UserInfo

__all__ = ["Attributes"]


@dataclass(frozen=True, slots=True)
class Attributes:
    """A resource request (`resource_request`) or a request for a non-resource path."""

    user: UserInfo
    verb: str
    resource_request: bool
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def resource_string(self) -> str:
        """`resource` or `resource/subresource`, as rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource
