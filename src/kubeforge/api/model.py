"""The base of every typed API object: snake_case in Python, camelCase on the wire.

Unknown fields survive a round trip (they are kept, not dropped), so reading an object and
writing it back never loses what the class does not declare.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import AliasGenerator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["Model", "to_camel"]


class Model(BaseModel):
    """A Kubernetes-shaped model: `switch_position` is `switchPosition` in JSON."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(alias=to_camel),
        validate_by_name=True,
        validate_by_alias=True,
        extra="allow",
        validate_assignment=False,
        use_enum_values=True,
        ser_json_timedelta="float",
        # bytes travel as base64, as Kubernetes' `format: byte` fields do.
        ser_json_bytes="base64",
        val_json_bytes="base64",
        # Docstrings under attributes become field descriptions (and CRD field docs).
        use_attribute_docstrings=True,
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build from the JSON form (camelCase keys)."""
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: camelCase keys, unset optional fields left out."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data
