"""Impersonation: `Impersonate-User`, `-Group`, `-Uid` and `-Extra-<key>` headers.

Each requested attribute is authorized for the real requester with the verb `impersonate`
(users, groups and service accounts in the core group; uids and `userextras/<key>` in
authentication.k8s.io), as the apiserver's impersonation filter does; the first refusal
is a 403. The impersonated identity gets `system:authenticated` (or, for
system:anonymous, `system:unauthenticated`), and a service account its groups when no
group was asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import unquote

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.forbidden import forbidden
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.user import (
    ANONYMOUS_NAME,
    AUTHENTICATED,
    UNAUTHENTICATED,
    UserInfo,
    service_account_groups,
    split_service_account,
)

__all__ = ["impersonated", "wants_impersonation"]

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA = "impersonate-extra-"


def wants_impersonation(headers: Mapping[str, str]) -> bool:
    return any(key[:12].lower() == "impersonate-" for key in headers)


def _values(value: str) -> list[str]:
    # One value per header line, commas included, as kube-apiserver reads them (kubectl and
    # client-go send one group or extra value per line); the HTTP layer keeps repeated
    # impersonation lines apart with line feeds.
    return [v.strip() for v in value.split("\n") if v.strip()]


def impersonated(
    real: UserInfo,
    headers: Mapping[str, str],
    allowed: Callable[[Attributes], tuple[bool, str]],
) -> UserInfo:
    """The identity the request impersonates, once `real` may impersonate each part of it."""
    name = ""
    groups: list[str] = []
    uid = ""
    extra: dict[str, tuple[str, ...]] = {}
    for key, value in headers.items():
        lower = key.lower()
        if lower == USER:
            name = value.strip()
        elif lower == GROUP:
            groups.extend(_values(value))
        elif lower == UID:
            uid = value.strip()
        elif lower.startswith(EXTRA):
            extra_key = unquote(lower[len(EXTRA) :])
            extra[extra_key] = (*extra.get(extra_key, ()), *_values(value))
    if not name:
        asked = [f"Group {g}" for g in groups] + [f"Extra {k}" for k in extra]
        if uid:
            asked.append(f"UID {uid}")
        raise StatusError.bad_request(
            f"requested [{', '.join(asked)}] without impersonating a user"
        )

    checks: list[Attributes] = []
    account = split_service_account(name)
    if account is not None:
        checks.append(
            Attributes(
                real, "impersonate", True, "", "v1", "serviceaccounts", "", account[0], account[1]
            )
        )
    else:
        checks.append(Attributes(real, "impersonate", True, "", "v1", "users", "", "", name))
    for group in groups:
        checks.append(Attributes(real, "impersonate", True, "", "v1", "groups", "", "", group))
    for extra_key, values in extra.items():
        for value in values:
            checks.append(
                Attributes(
                    real,
                    "impersonate",
                    True,
                    "authentication.k8s.io",
                    "v1",
                    "userextras",
                    extra_key,
                    "",
                    value,
                )
            )
    if uid:
        checks.append(
            Attributes(
                real, "impersonate", True, "authentication.k8s.io", "v1", "uids", "", "", uid
            )
        )
    for attrs in checks:
        ok, reason = allowed(attrs)
        if not ok:
            raise forbidden(attrs, reason)

    if account is not None and not groups:
        groups = list(service_account_groups(account[0]))
    if name == ANONYMOUS_NAME:
        if UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
    elif AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return UserInfo(name, uid, tuple(groups), extra)
