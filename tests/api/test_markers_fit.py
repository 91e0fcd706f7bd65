"""A marker that does not fit its field's type is an error naming the field and the marker,
as controller-gen refuses `+kubebuilder:validation:MinLength` on an integer."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

import kubeforge
import kubeforge.markers
from kubeforge._api import markers as mk
from kubeforge._api.schema import SchemaError, schema_for_model

MISFITS: list[tuple[Any, str]] = [
    (Annotated[int, mk.MinLength(2)], "MinLength(value=2) applies to strings, not to an integer"),
    (Annotated[int | None, mk.MaxLength(9)], "MaxLength(value=9) applies to strings"),
    (Annotated[str, mk.Minimum(1)], "Minimum(value=1, exclusive=False) applies to numbers"),
    (Annotated[bool, mk.Maximum(1)], "applies to numbers, not to a boolean"),
    (Annotated[int, mk.Minimum(1.5)], "an integer cannot be limited by the non-integral 1.5"),
    (Annotated[str, mk.MultipleOf(2)], "MultipleOf(value=2) applies to numbers"),
    (Annotated[int, mk.Pattern("^[0-9]+$")], "applies to strings (and int-or-strings)"),
    (Annotated[str, mk.MinItems(1)], "MinItems(value=1) applies to lists, not to a string"),
    (Annotated[dict[str, str], mk.MaxItems(1)], "applies to lists, not to an object"),
    (Annotated[list[str], mk.MinProperties(1)], "applies to objects, not to an array"),
    (Annotated[str, mk.UniqueItems()], "UniqueItems() applies to lists"),
    (Annotated[dict[str, str], mk.ListType("set")], "applies to lists"),
    (Annotated[str, mk.ListMapKeys("name")], "applies to lists"),
    (Annotated[list[str], mk.MapType("atomic")], "applies to maps, not to an array"),
    (Annotated[list[int], mk.Items(mk.MinLength(1))], "list items: MinLength(value=1)"),
    (Annotated[Any, mk.Maximum(3)], "applies to numbers, not to an untyped value"),
]


@pytest.mark.parametrize(("annotation", "reason"), MISFITS)
def test_a_misfit_marker_is_an_error_naming_the_field_and_the_marker(
    annotation: Any, reason: str
) -> None:
    class Spec(kubeforge.Model):
        count: annotation  # type: ignore[valid-type]

    with pytest.raises(SchemaError) as refused:
        schema_for_model(Spec)
    message = str(refused.value)
    assert ".Spec.count: " in message and reason in message, message


FITS: list[tuple[Any, dict[str, Any]]] = [
    (Annotated[str, mk.MinLength(1), mk.MaxLength(3)], {"minLength": 1, "maxLength": 3}),
    (Annotated[float, mk.Minimum(0.5)], {"minimum": 0.5}),
    (Annotated[int, mk.Minimum(2.0)], {"minimum": 2.0}),
    (Annotated[int | str, mk.Pattern("^[0-9]+%?$")], {"pattern": "^[0-9]+%?$"}),
    (Annotated[Any, mk.Type("string"), mk.MinLength(1)], {"type": "string", "minLength": 1}),
    (Annotated[int, mk.Format("int32"), mk.Enum(1, 2)], {"format": "int32", "enum": [1, 2]}),
    (Annotated[list[str], mk.MinItems(1), mk.Items(mk.MinLength(1))], {"minItems": 1}),
    (Annotated[dict[str, str], mk.MapType("atomic")], {"x-kubernetes-map-type": "atomic"}),
]


@pytest.mark.parametrize(("annotation", "expected"), FITS)
def test_markers_that_fit_still_apply(annotation: Any, expected: dict[str, Any]) -> None:
    class Spec(kubeforge.Model):
        count: annotation  # type: ignore[valid-type]

    schema = schema_for_model(Spec)["properties"]["count"]
    assert expected.items() <= schema.items(), schema


def test_a_misfit_marker_on_a_class_names_the_class() -> None:
    @kubeforge.markers.on_class(mk.MinLength(1))
    class Spec(kubeforge.Model):
        name: str = ""

    with pytest.raises(SchemaError, match=r"\.Spec: MinLength\(value=1\) applies to strings"):
        schema_for_model(Spec)

    @kubeforge.markers.on_class(mk.MinProperties(1), mk.StructType("atomic"))
    class Fine(kubeforge.Model):
        name: str = ""

    assert schema_for_model(Fine)["minProperties"] == 1


def test_the_crd_generator_refuses_a_resource_with_a_misfit_marker() -> None:
    class BadSpec(kubeforge.Model):
        replicas: Annotated[int, kubeforge.markers.MinLength(2)] = 1

    @kubeforge.resource(group="misfit.example.com", version="v1")
    class Bad(kubeforge.Resource[BadSpec, None]):
        """A resource that cannot have a CRD."""

    from kubeforge._api.crd import crd_for

    with pytest.raises(SchemaError, match=r"BadSpec\.replicas: MinLength\(value=2\)"):
        crd_for([Bad])
