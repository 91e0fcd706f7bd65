"""Schema markers: what controller-tools reads from `+kubebuilder:validation:*` comments,
written on a field with `Annotated` or on a model class with `@markers.on_class(...)`.

    from kubeforge import markers

    class MachineSpec(kubeforge.Model):
        switches: Annotated[int, markers.Minimum(1), markers.Maximum(16)] = 1

    @markers.on_class(markers.ExactlyOneOf("image", "build"))
    class Source(kubeforge.Model): ...

Each marker edits the generated OpenAPI schema of what it annotates; docs/markers.md maps
every controller-tools marker to its spelling here.
"""

from __future__ import annotations

from kubeforge._api.markers import (
    AtLeastOneOf,
    AtMostOneOf,
    Default,
    Description,
    EmbeddedResource,
    Enum,
    ExactlyOneOf,
    Example,
    ExternalDocs,
    Format,
    Immutable,
    IntOrString,
    Items,
    ListMapKeys,
    ListType,
    MapType,
    Marker,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    Nullable,
    Optional,
    Pattern,
    PreserveUnknownFields,
    Required,
    Rule,
    Schemaless,
    StructType,
    Title,
    Type,
    UniqueItems,
    on_class,
)

__all__ = [
    "AtLeastOneOf",
    "AtMostOneOf",
    "Default",
    "Description",
    "EmbeddedResource",
    "Enum",
    "ExactlyOneOf",
    "Example",
    "ExternalDocs",
    "Format",
    "Immutable",
    "IntOrString",
    "Items",
    "ListMapKeys",
    "ListType",
    "MapType",
    "Marker",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "MultipleOf",
    "Nullable",
    "Optional",
    "Pattern",
    "PreserveUnknownFields",
    "Required",
    "Rule",
    "Schemaless",
    "StructType",
    "Title",
    "Type",
    "UniqueItems",
    "on_class",
]
