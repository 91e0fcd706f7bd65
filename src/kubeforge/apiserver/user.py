"""Who a request is made as: the authenticated user that admission and reviews see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ADMIN", "UserInfo"]


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user (authentication.k8s.io/v1 UserInfo)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The UserInfo JSON object, with its empty fields left out as Kubernetes does."""
        out: dict[str, Any] = {}
        if self.username:
            out["username"] = self.username
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra}
        return out


# The one identity the server knows until it authenticates users: its bearer token's holder,
# an administrator.
ADMIN = UserInfo("kubeforge-admin", groups=("system:masters", "system:authenticated"))
