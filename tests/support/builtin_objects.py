"""Built-in objects and the write path's strategy steps, for the strategy and validation tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kubeforge._apiserver.types.strategies import Strategy, strategy_for

Obj = dict[str, Any]
UID = "0f7d6b4e-0000-4000-8000-000000000001"


def strategy(group: str, kind: str) -> Strategy:
    return strategy_for(group, kind)


def created(group: str, kind: str, obj: Obj) -> Obj:
    """The object as the write path prepares it: defaulted, metadata set, prepared."""
    obj = copy.deepcopy(obj)
    s = strategy(group, kind)
    s.default(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("uid", UID)
    meta.setdefault("namespace", "default")
    obj.pop("status", None)
    s.prepare_create(obj)
    return obj


def errors(group: str, kind: str, obj: Obj) -> list[str]:
    """Validation messages for a new object, after defaulting and preparation."""
    obj = created(group, kind, obj)
    return [str(e) for e in strategy(group, kind).validate(obj)]


def update_errors(group: str, kind: str, old: Obj, change: Callable[[Obj], None]) -> list[str]:
    """Validation messages for an update of a (valid) object by `change`."""
    before = created(group, kind, old)
    after = copy.deepcopy(before)
    change(after)
    s = strategy(group, kind)
    s.default(after)
    s.prepare_update(after, before)
    return [str(e) for e in s.validate_update(after, before)]


def pod_spec(**extra: Any) -> Obj:
    return {"containers": [{"name": "c", "image": "nginx"}], **extra}


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"labels": labels or {"app": "x"}}, "spec": pod_spec(**spec)}


def deployment(**spec: Any) -> Obj:
    body = {"selector": {"matchLabels": {"app": "x"}}, "template": template(), **spec}
    return {"metadata": {"name": "web"}, "spec": body}


def job(**spec: Any) -> Obj:
    return {
        "metadata": {"name": "pi"},
        "spec": {"template": template(restartPolicy="Never"), **spec},
    }


EXT = "apiextensions.k8s.io"


def crd(**spec: Any) -> Obj:
    body = {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
        **spec,
    }
    return {"metadata": {"name": "widgets.example.com"}, "spec": body}
