"""Whether a node satisfies a NodeSelector: the required node affinity of a pod, and of a
persistent volume (v1helper.MatchNodeSelectorTerms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.access import as_list, labels_of, name_of
from kubeforge._api.machinery.selectors import requirement_matches

__all__ = ["node_selector_matches"]


def node_selector_matches(selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether one of the selector's terms matches the node: all of a term's label
    expressions and field expressions (`metadata.name`); an empty term matches nothing."""
    labels = labels_of(node)
    fields = {"metadata.name": name_of(node)}
    for term in as_list(selector.get("nodeSelectorTerms")):
        expressions = as_list(term.get("matchExpressions"))
        field_terms = as_list(term.get("matchFields"))
        if not expressions and not field_terms:
            continue
        if all(requirement_matches(r, labels, numeric=True) for r in expressions) and all(
            requirement_matches(r, fields, numeric=True) for r in field_terms
        ):
            return True
    return False
