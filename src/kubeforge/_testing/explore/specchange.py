"""Another spec for an object, for the `revert` perturbation (A -> B -> A): each scalar field
of the spec changed to another value its CRD's schema allows (another enum value, the other
boolean, a number one up or down within its bounds, a string one character longer or
shorter within its length), keeping only what a dry run of the server accepts (its CEL
rules, immutable fields). Arrays and objects are left alone, and so are built-in kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._client.client import Client
from kubeforge._client.discovery import APIResource
from kubeforge._client.errors import ApiError, NotFound

__all__ = ["other_spec", "show_change"]


async def other_spec(
    client: Client,
    resource: APIResource,
    name: str,
    namespace: str | None,
    spec: Mapping[str, Any],
) -> dict[str, Any]:
    """Spec fields changed to other values the server accepts (a dry run decides)."""
    what = f"{resource.api_version}/{resource.kind}"
    schema = await _spec_schema(client, resource)
    candidates = {
        field: value
        for field, prop in (schema.get("properties") or {}).items()
        if (value := _other_value(prop, spec.get(field, prop.get("default")))) is not None
    }

    async def accepted(fields: dict[str, Any]) -> bool:
        try:
            await client.patch(what, name, {"spec": fields}, namespace=namespace, dry_run=True)
        except ApiError:
            return False
        return True

    if candidates and await accepted(candidates):
        return candidates
    return {f: v for f, v in candidates.items() if await accepted({f: v})}


def show_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{field} {before.get(field)!r} -> {value!r}" for field, value in after.items()
    )


async def _spec_schema(client: Client, resource: APIResource) -> dict[str, Any]:
    """The structural schema of the spec of a CRD's served version ({} for built-ins)."""
    try:
        crd = await client.get(
            "apiextensions.k8s.io/v1/CustomResourceDefinition",
            f"{resource.plural}.{resource.group}",
        )
    except NotFound:
        return {}
    for version in crd["spec"]["versions"]:
        if version["name"] == resource.version:
            root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            spec: dict[str, Any] = (root.get("properties") or {}).get("spec") or {}
            return spec
    return {}


def _other_value(schema: Mapping[str, Any], value: Any) -> Any:
    """Another value a scalar field's schema allows (None: no simple one)."""
    enum = schema.get("enum")
    if enum:
        others = [choice for choice in enum if choice != value]
        return others[0] if others else None
    kind = schema.get("type")
    if kind == "boolean":
        return not value
    if kind == "integer" and isinstance(value, int):
        up, down = value + 1, value - 1
        if schema.get("maximum") is None or up <= schema["maximum"]:
            return up
        if schema.get("minimum") is None or down >= schema["minimum"]:
            return down
        return None
    if kind == "string" and isinstance(value, str):
        if schema.get("pattern") or schema.get("format"):
            return None
        longest = schema.get("maxLength")
        if longest is None or len(value) < longest:
            return value + "x"
        return value[:-1] if len(value) > int(schema.get("minLength") or 0) else None
    return None
