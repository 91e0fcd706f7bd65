"""What a resource request addresses: parsed from the URL path and the HTTP method."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestInfo", "parse_request_path"]

# Path segments after `namespaces/<name>` that address the namespace itself.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """A request for objects: `GET /apis/apps/v1/namespaces/ns/deployments/web/scale`."""

    group: str
    version: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str | None
    verb: str

    @property
    def collection(self) -> bool:
        return self.name is None


# Clients write to the same few collections and objects over and over, and a RequestInfo is
# immutable, so parsed paths are kept (a bounded number: paths are the client's to choose).
_PARSED: dict[tuple[str, str, bool], RequestInfo | None] = {}
_PARSED_MAX = 4096


def parse_request_path(method: str, path: str, watch_param: bool) -> RequestInfo | None:
    """Parse a resource path; None when the path is not a resource request.

    Discovery paths (`/api`, `/apis/<g>/<v>`) return None too: they have no resource part.
    """
    key = (method, path, watch_param)
    try:
        return _PARSED[key]
    except KeyError:
        pass
    info = _parse(method, path, watch_param)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = info
    return info


def _parse(method: str, path: str, watch_param: bool) -> RequestInfo | None:
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    if parts[0] == "api":
        if len(parts) < 3:
            return None
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) < 4:
            return None
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None

    legacy_watch = False
    if rest and rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
        if not rest:
            return None

    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            # The namespace object itself: /namespaces/<name>[/status|/finalize]
            namespace = None
            rest = ["namespaces", *rest[1:]]

    resource = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 and subresource != "proxy":
        return None

    method = method.upper()
    if method == "GET" or method == "HEAD":
        if legacy_watch or (watch_param and subresource is None):
            verb = "watch"
        elif name is None:
            verb = "list"
        else:
            verb = "get"
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "deletecollection" if name is None else "delete"
    else:
        verb = method.lower()
    return RequestInfo(group, version, namespace, resource, name, subresource, verb)
