"""The base classes of the generated built-in models (this module is written by hand)."""

from typing import Any, ClassVar

from pydantic import ConfigDict

from kubeforge._api.model import Model

__all__ = ["BuiltinModel", "BuiltinObject"]


class BuiltinModel(Model):
    """A model of a built-in Kubernetes type; its validator is built on first use.

    Building validators lazily keeps importing a module of several hundred classes cheap.
    Field descriptions stay docstrings for editors only: pydantic reading them would parse
    each module's source once per class at import. `validate_by_name` (what `populate_by_name`
    means) is spelled out so that pydantic's mypy plugin checks required constructor arguments.
    """

    model_config = ConfigDict(
        defer_build=True, use_attribute_docstrings=False, validate_by_name=True
    )

    __kubeforge_definition__: ClassVar[str]
    """The OpenAPI definition the class was generated from, e.g. io.k8s.api.core.v1.Pod."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields that were given or assigned, explicit nulls included.

        A decoded object serializes back to exactly what was read. apiVersion and kind, which
        default to the class's own, are always written.
        """
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if "kind" in data and "apiVersion" in data:
            return data
        api_version, kind = self.__dict__.get("api_version"), self.__dict__.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return data
        return {"apiVersion": api_version, "kind": kind} | data


class BuiltinObject(BuiltinModel):
    """An object with ObjectMeta, which is there (empty) even when not given."""

    def model_post_init(self, context: Any, /) -> None:
        # Otherwise the default metadata would stay "unset", and left out of to_dict(), even
        # after `obj.metadata.name = ...`.
        self.__pydantic_fields_set__.add("metadata")
