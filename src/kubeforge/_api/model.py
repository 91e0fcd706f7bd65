"""The base of every typed API object: snake_case in Python, camelCase on the wire.

A constructor takes the Python field names (`switch_position=`; the JSON names are accepted
too) and refuses a keyword it does not know, so a typo fails where it is made instead of the
field being pruned by the server. Reading is lenient: `model_validate` / `from_dict` keep the
fields the class does not declare (a newer server's, or a CRD's beyond the class), so reading
an object and writing it back never loses them.
"""

from __future__ import annotations

from inspect import Parameter, Signature
from typing import TYPE_CHECKING, Any, Self

from pydantic import AliasGenerator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["DEFAULT_FACTORY", "Model", "to_camel"]


class _DefaultFactory:
    """The default a signature shows for a field with a `default_factory`."""

    def __repr__(self) -> str:
        return "<factory>"


DEFAULT_FACTORY: Any = _DefaultFactory()
"""Passed for a field with a default factory, it means "not given", as for a dataclass (tools
such as Hypothesis pass a parameter's default back)."""


class _FieldSignature:
    """A model class's `__signature__`: keyword-only Python field names and no `**kwargs`.

    pydantic's own names the JSON aliases and ends with `**extra_data` for models that keep
    unknown fields; tools reading the signature (Hypothesis's `st.builds`, editors) would then
    fill in `switchPosition` beside a given `switch_position`. Computed from the fields each
    time, so that it also holds for classes whose validator is built later.
    """

    def __get__(self, instance: object, owner: type[BaseModel]) -> Signature:
        if instance is not None:
            raise AttributeError("__signature__")  # an instance's is that of its __call__
        parameters = []
        for name, field in owner.__pydantic_fields__.items():
            if field.is_required():
                default: Any = Parameter.empty
            elif field.default_factory is not None:
                default = DEFAULT_FACTORY
            else:
                default = field.default
            parameters.append(
                Parameter(
                    name,
                    Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=field.rebuild_annotation(),
                )
            )
        return Signature(parameters, return_annotation=None)


_SIGNATURE = _FieldSignature()


class Model(BaseModel):
    """A Kubernetes-shaped model: `switch_position` is `switchPosition` in JSON."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(alias=to_camel),
        validate_by_name=True,
        validate_by_alias=True,
        # What a read keeps; constructors refuse unknown keywords (__init__).
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

    def __init__(self, /, **data: Any) -> None:
        """Build from keyword arguments (Python field names, or the JSON names); an argument
        the class (or a nested model given as a dict) does not declare is a ValidationError."""
        __tracebackhide__ = True
        if any(value is DEFAULT_FACTORY for value in data.values()):
            data = {k: v for k, v in data.items() if v is not DEFAULT_FACTORY}
        self.__pydantic_validator__.validate_python(data, self_instance=self, extra="forbid")

    # Validation (model_validate) does not go through __init__: reading keeps unknown fields.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    if not TYPE_CHECKING:  # a type checker reports an unknown attribute by itself

        def __setattr__(self, name: str, value: Any) -> None:
            cls = type(self)
            if (
                name not in cls.__pydantic_fields__
                and not name.startswith("_")
                and not hasattr(cls, name)
                and name not in (self.__pydantic_extra__ or ())
            ):
                # Unknown fields come only from reading; a misspelt assignment is refused
                # as a misspelt keyword is.
                raise AttributeError(f"{cls.__name__} has no field {name!r}")
            super().__setattr__(name, value)

    @classmethod
    def __pydantic_on_complete__(cls) -> None:
        # pydantic sets its own signature on each class it completes.
        cls.__signature__ = _SIGNATURE  # type: ignore[assignment]
        super().__pydantic_on_complete__()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build from the JSON form (camelCase keys); fields the class does not declare are
        kept (and written back by `to_dict`)."""
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: camelCase keys, unset optional fields left out."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data
