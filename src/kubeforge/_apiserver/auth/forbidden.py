"""The 403 answer for a refused request, worded exactly as kube-apiserver words it."""

from __future__ import annotations

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.request.errors import StatusError

__all__ = ["forbidden", "forbidden_text"]

_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def forbidden_text(attrs: Attributes) -> str:
    """`User "u" cannot list resource "pods" in API group "" in the namespace "ns"`."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    text = (
        f'User "{user}" cannot {attrs.verb} resource "{attrs.resource_string}" in API group '
        f'"{attrs.group}"'
    )
    if attrs.namespace:
        return f'{text} in the namespace "{attrs.namespace}"'
    return f"{text} at the cluster scope"


def forbidden(attrs: Attributes, reason: str = "") -> StatusError:
    """The Forbidden Status: `pods "p" is forbidden: User ... cannot get resource ...`."""
    why = forbidden_text(attrs).translate(_SANITIZE)
    if reason:
        why = f"{why}: {reason}"
    if not attrs.resource_request:
        return StatusError(403, "Forbidden", f"forbidden: {why}", {})
    return StatusError.forbidden(attrs.group, attrs.resource, attrs.name, why)
