"""Predicates, as controller-runtime's `predicate` package: which watched changes
reach the handlers (`GenerationChanged`, `LabelsChanged`, `LabelSelectorPredicate`, ...,
combined with `all_of`, `any_of` and `negate`, or written as `Funcs`).
"""

from __future__ import annotations

from kubeforge._runtime.predicate import (
    AnnotationsChanged,
    Funcs,
    GenerationChanged,
    LabelsChanged,
    LabelSelectorPredicate,
    Predicate,
    ResourceVersionChanged,
    all_of,
    any_of,
    negate,
)

__all__ = [
    "AnnotationsChanged",
    "Funcs",
    "GenerationChanged",
    "LabelSelectorPredicate",
    "LabelsChanged",
    "Predicate",
    "ResourceVersionChanged",
    "all_of",
    "any_of",
    "negate",
]
