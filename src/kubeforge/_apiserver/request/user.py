"""Who a request comes from: the user, groups and extra attributes authentication found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ADMIN",
    "ANONYMOUS",
    "ANONYMOUS_NAME",
    "AUTHENTICATED",
    "MASTERS",
    "SERVICE_ACCOUNTS",
    "SERVICE_ACCOUNT_PREFIX",
    "UNAUTHENTICATED",
    "UserInfo",
    "service_account_groups",
    "service_account_user",
    "split_service_account",
]

# Well-known names (the Kubernetes apiserver's user package).
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated (or anonymous) identity."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def privileged(self) -> bool:
        """Members of system:masters may do anything, before any authorizer is asked."""
        return MASTERS in self.groups

    def to_dict(self) -> dict[str, Any]:
        """The UserInfo object of TokenReview, SelfSubjectReview and admission requests."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo("kubeforge-admin", groups=(MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo(ANONYMOUS_NAME, groups=(UNAUTHENTICATED,))


def service_account_user(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:<ns>:<name>`, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}")
