"""Pruning: dropping, in place, the fields of a custom object its structural schema does not know.

As apiextensions-apiserver's schema/pruning does: apiVersion, kind and metadata stay at the
root and in embedded resources, metadata keeping only ObjectMeta's fields; below
`x-kubernetes-preserve-unknown-fields` unknown fields stay while the known ones are still
pruned; `additionalProperties: false` keeps a field for validation to refuse. The dropped
paths are what the server reports as unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.fielderror import join_path
from kubeforge._api.machinery.schemanode import Node, node_of

__all__ = ["prune", "prune_value"]

_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_OBJECT_META_FIELDS = frozenset(
    """name generateName namespace selfLink uid resourceVersion generation creationTimestamp
    deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences finalizers
    managedFields""".split()  # noqa: SIM905
)


def prune(obj: Any, schema: Mapping[str, Any]) -> list[str]:
    """Drop, in place, every field the structural schema does not allow; returns the dropped
    paths sorted (`spec.foo`, `spec.items[0].bar`), which the server reports as unknown."""
    dropped: list[str] = []
    if type(obj) is dict:
        _prune(obj, node_of(schema), "", dropped, root=True)
    dropped.sort()
    return dropped


def _prune(value: Any, n: Node | None, path: str, dropped: list[str], root: bool = False) -> None:
    if n is not None and n.preserve_unknown:
        _skip_prune(value, n, path, dropped)
        return
    t = type(value)
    if t is dict:
        if n is None:
            dropped.extend(join_path(path, k) for k in value)
            value.clear()
            return
        props = n.properties
        embedded = root or n.embedded
        for key in list(value):
            if embedded and key in _META_FIELDS:
                if key == "metadata":
                    # ObjectMeta, at the root as in embedded objects, keeps only its fields.
                    _prune_meta(value[key], join_path(path, key), dropped)
                continue
            child = props.get(key) if props is not None else None
            if child is not None:
                _prune(value[key], child, join_path(path, key), dropped)
            elif n.additional_allows is not None:
                # additionalProperties: false keeps the field too; validation refuses it.
                _prune(value[key], n.additional, join_path(path, key), dropped)
            else:
                dropped.append(join_path(path, key))
                del value[key]
    elif t is list:
        items = n.items if n is not None else None
        for i, item in enumerate(value):
            _prune(item, items, f"{path}[{i}]", dropped)


def _skip_prune(value: Any, n: Node | None, path: str, dropped: list[str]) -> None:
    """Under x-kubernetes-preserve-unknown-fields: keep unknown fields, prune known ones."""
    if n is None:
        return
    t = type(value)
    if t is dict:
        props = n.properties
        for key, item in value.items():
            if n.embedded and key in _META_FIELDS:
                continue
            child = props.get(key) if props is not None else None
            if child is not None:
                _prune(item, child, join_path(path, key), dropped)
            elif n.additional_allows is not None:
                _prune(item, n.additional, join_path(path, key), dropped)
    elif t is list:
        for i, item in enumerate(value):
            _skip_prune(item, n.items, f"{path}[{i}]", dropped)


def _prune_meta(meta: Any, path: str, dropped: list[str]) -> None:
    if type(meta) is not dict:
        return
    for key in list(meta):
        if key not in _OBJECT_META_FIELDS:
            dropped.append(join_path(path, key))
            del meta[key]


def prune_value(value: Any, n: Node, resource_root: bool = False) -> list[str]:
    """Prune `value` in place against compiled node `n`; `resource_root` keeps apiVersion,
    kind and metadata as at the root of an object. Returns the dropped paths, sorted."""
    dropped: list[str] = []
    _prune(value, n, "", dropped, root=resource_root)
    dropped.sort()
    return dropped
