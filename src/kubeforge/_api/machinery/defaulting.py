"""Defaulting: filling, in place, a custom object's absent fields from its schema's defaults.

As apiextensions-apiserver's schema/defaulting does: a `null` the schema neither allows
(`nullable`) nor defaults is dropped first, a `null` with a default takes it, then every
absent property with a default gets a copy of it, at every depth the object reaches.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.schemanode import NO_DEFAULT, Node, node_of

__all__ = ["apply_defaults"]


def apply_defaults(obj: Any, schema: Mapping[str, Any]) -> None:
    """Apply schema defaults in place, and drop `null`s the schema neither allows nor
    defaults (the server prunes those before defaulting)."""
    _default(obj, node_of(schema))


def _default(value: Any, n: Node) -> None:
    t = type(value)
    if t is dict:
        props = n.properties
        additional = n.additional
        for key in [k for k, v in value.items() if v is None]:
            child = props.get(key) if props is not None else None
            if child is None:
                child = additional
            if child is None or child.nullable:
                continue
            if child.default is NO_DEFAULT:
                del value[key]
            else:
                value[key] = copy.deepcopy(child.default)
        if props:
            for key, child in props.items():
                if child.default is not NO_DEFAULT and key not in value:
                    value[key] = copy.deepcopy(child.default)
        for key, item in value.items():
            if item is None or type(item) not in (dict, list):
                continue
            child = props.get(key) if props is not None else None
            if child is None:
                child = additional
            if child is not None:
                _default(item, child)
    elif t is list:
        items = n.items
        if items is None:
            return
        for i, item in enumerate(value):
            if item is None and not items.nullable and items.default is not NO_DEFAULT:
                value[i] = item = copy.deepcopy(items.default)
            if type(item) in (dict, list):
                _default(item, items)
