"""What every printer is made of: the Column and Printer types, the columns many kinds
share (Name, Age, containers and images, replica counts), and the cell helpers the printers
of every group use (ages, labels and selectors, quantities, lists cut short).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, meta_of
from kubeforge._api.machinery.durations import age

__all__ = [
    "AGE",
    "AGE_DESCRIPTION",
    "CONTAINERS",
    "IMAGES",
    "NAME",
    "NAME_DESCRIPTION",
    "REPLICA_COLUMNS",
    "Cells",
    "Column",
    "Obj",
    "Printer",
    "container_cells",
    "first_condition_true",
    "format_label_selector",
    "format_labels",
    "int_or_string",
    "lb_ingress",
    "lower_group_kind",
    "object_age",
    "quantity",
    "quantity_ref",
    "selector_column",
    "selector_string",
    "since",
    "template_spec",
    "with_more",
]


# An object as printers read it, and the cells of its row.
Obj = Mapping[str, Any]
Cells = list[Any]


@dataclass(frozen=True, slots=True)
class Column:
    """One column definition of a Table."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        """The `columnDefinitions` entry; every key is always present."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Printer:
    """Columns plus the function computing one object's cells (and optional row conditions)."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], Cells]
    conditions: Callable[[Obj], list[dict[str, Any]] | None] | None = None

    def definitions(self) -> list[dict[str, Any]]:
        """The `columnDefinitions` of a Table."""
        return [c.definition() for c in self.columns]


NAME_DESCRIPTION = (
    "The object's name, unique among objects of its kind in its namespace (or in the "
    "cluster, for cluster-scoped kinds)."
)
AGE_DESCRIPTION = "Time elapsed since the object was created (metadata.creationTimestamp)."

NAME = Column("Name", "string", NAME_DESCRIPTION, format="name")
AGE = Column("Age", "string", AGE_DESCRIPTION)
CONTAINERS = Column("Containers", "string", "Names of the containers in the pod template.", 1)
IMAGES = Column("Images", "string", "Images of the containers in the pod template.", 1)
REPLICA_COLUMNS = (
    Column("Desired", "integer", "Number of replicas the object asks for."),
    Column("Current", "integer", "Number of replicas that currently exist."),
    Column("Ready", "integer", "Number of replicas that are ready."),
)


def selector_column(what: str) -> Column:
    """The wide Selector column of a kind that selects pods (`what` says which)."""
    return Column("Selector", "string", f"Label query over the pods {what}.", 1)


def object_age(obj: Obj, now: datetime) -> str:
    """The Age cell: time since the object was created."""
    return age(meta_of(obj).get("creationTimestamp"), now)


def since(timestamp: Any, now: datetime) -> str:
    """Time since a timestamp, as an age (`<unknown>` when it is not one)."""
    return age(timestamp if isinstance(timestamp, str) else None, now)


def container_cells(pod_spec: Any) -> tuple[str, str]:
    """The Containers and Images cells of a pod spec."""
    containers = as_list(as_dict(pod_spec).get("containers"))
    names = ",".join(str(as_dict(c).get("name") or "") for c in containers)
    images = ",".join(str(as_dict(c).get("image") or "") for c in containers)
    return names, images


def template_spec(obj: Obj) -> Mapping[str, Any]:
    """The pod spec of a workload's pod template."""
    return as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("spec"))


def format_labels(labels: Any) -> str:
    """`a=b,c=d` sorted by key, or `<none>`."""
    labels = as_dict(labels)
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


_SELECTOR_OPS = {"In": " in ", "NotIn": " notin "}


def selector_string(selector: Any) -> str | None:
    """A structured label selector as selector text; None when it is malformed."""
    selector = as_dict(selector)
    reqs: list[tuple[str, str]] = []
    for key, value in as_dict(selector.get("matchLabels")).items():
        reqs.append((key, f"{key}={value}"))
    for expr in as_list(selector.get("matchExpressions")):
        expr = as_dict(expr)
        key, op = str(expr.get("key") or ""), expr.get("operator")
        values = sorted(str(v) for v in as_list(expr.get("values")))
        if op in _SELECTOR_OPS:
            if not values:
                return None
            reqs.append((key, f"{key}{_SELECTOR_OPS[op]}({','.join(values)})"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                return None
            reqs.append((key, key if op == "Exists" else f"!{key}"))
        else:
            return None
    reqs.sort(key=lambda r: r[0])
    return ",".join(text for _, text in reqs)


def format_label_selector(selector: Any) -> str:
    """A structured label selector as text; `<none>` when empty, `<error>` when malformed."""
    text = selector_string(selector)
    if text is None:
        return "<error>"
    return text or "<none>"


def int_or_string(value: Any) -> str:
    """An IntOrString as printed."""
    return str(value)


def quantity(value: Any) -> str:
    """A quantity that is a plain value in the API: absent reads as zero."""
    return "0" if value is None else str(value)


def quantity_ref(value: Any) -> str:
    """A quantity that is optional in the API: absent reads as `<nil>`."""
    return "<nil>" if value is None else str(value)


def lower_group_kind(api_version: str, kind: str) -> str:
    """`kind.group` in lower case (just `kind` for the core group)."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return (f"{kind}.{group}" if group else kind).lower()


def with_more(items: list[str], total: int, limit: int, empty: str) -> str:
    """The first items of a list joined, `+ N more...` for the rest; `empty` for none."""
    text = ",".join(items)
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty


def lb_ingress(status: Any) -> str:
    """A load balancer's ingress addresses (IPs or hostnames), sorted."""
    found = set()
    for entry in as_list(as_dict(as_dict(status).get("loadBalancer")).get("ingress")):
        entry = as_dict(entry)
        if entry.get("ip"):
            found.add(str(entry["ip"]))
        elif entry.get("hostname"):
            found.add(str(entry["hostname"]))
    return ",".join(sorted(found))


def first_condition_true(conditions: Any, kind: str) -> bool:
    """Whether the first condition of type `kind` is True."""
    for cond in as_list(conditions):
        cond = as_dict(cond)
        if cond.get("type") == kind:
            return bool(cond.get("status") == "True")
    return False
