"""Refused requests, reported with the RBAC rule that would allow them.

When the API server answers 403 with RBAC's message (`User "u" cannot list resource
"pods" in API group "" in the namespace "ns"`), the client logs a warning on the
`kubeforge.rbac` logger naming the request and the `@rbac(...)` rule to add, so that a
controller running under its generated role shows at once which rule is missing. The
record carries the rule as `rbac_rule` and the request as `rbac_request`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

__all__ = ["missing_rule", "report_refusal"]

log = logging.getLogger("kubeforge.rbac")

_RESOURCE = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]*)" in API group '
    r'"(?P<group>[^"]*)"(?: in the namespace "(?P<namespace>[^"]*)")?'
)
_PATH = re.compile(r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) path "(?P<path>[^"]*)"')


def _list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def missing_rule(message: str) -> str | None:
    """The `@rbac(...)` decorator granting what an RBAC refusal message says was refused."""
    found = _RESOURCE.search(message)
    if found is not None:
        return (
            f"@rbac(groups={_list([found['group']])}, resources={_list([found['resource']])}, "
            f"verbs={_list([found['verb']])})"
        )
    found = _PATH.search(message)
    if found is not None:
        return f"@rbac(urls={_list([found['path']])}, verbs={_list([found['verb']])})"
    return None


def report_refusal(
    method: str, path: str, params: Mapping[str, str] | None, status: dict[str, Any] | None
) -> None:
    """Log a 403 the RBAC authorizer gave, with the rule that would allow the request."""
    if not status or status.get("reason") != "Forbidden":
        return
    message = str(status.get("message") or "")
    rule = missing_rule(message)
    if rule is None:
        return
    request = f"{method} {path}" + (f"?{urlencode(dict(params))}" if params else "")
    log.warning(
        "forbidden: %s: %s; the rule that would allow it: %s",
        request,
        message,
        rule,
        extra={"rbac_rule": rule, "rbac_request": request},
    )
