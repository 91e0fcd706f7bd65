"""One object as the console shows it: its YAML with managedFields folded away (and a
Secret's values left out), who manages which part, its conditions, its Events and its
ownership graph.

The graph follows ownerReferences both ways from the object: its owners up to the top, its
children (objects naming it as owner) down, each node with its garbage-collection state:
being deleted (deletionTimestamp), in foreground deletion (the `foregroundDeletion`
finalizer holds it until its blocking children are gone), orphaning its children, held by
other finalizers, or an orphan itself (an owner named that the cluster no longer has, which
the garbage collector deletes it for), as the garbage collector in
pkg/controller/garbagecollector/garbagecollector.go decides from the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from kubeforge._console.mirror import ClusterMirror
from kubeforge._runtime.timeline import group_kind

__all__ = ["MAX_GRAPH_NODES", "describe", "ownership_graph", "redacted", "to_yaml"]

MAX_GRAPH_NODES = 200
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def redacted(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret with its values replaced by their sizes: the console shows which keys a
    Secret has, never what they hold."""
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
        return obj
    out = dict(obj)
    for field in ("data", "stringData"):
        values = obj.get(field)
        if isinstance(values, Mapping):
            out[field] = {key: f"<{len(str(value))} bytes hidden>" for key, value in values.items()}
    return out


def to_yaml(obj: Mapping[str, Any]) -> str:
    """The object as YAML, without its managedFields."""
    shown = dict(obj)
    meta = dict(shown.get("metadata") or {})
    meta.pop("managedFields", None)
    shown["metadata"] = meta
    return yaml.safe_dump(shown, sort_keys=False, default_flow_style=False, allow_unicode=True)


def managers(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The managedFields entries, without their field sets: who wrote, how, and when."""
    out = []
    for entry in meta.get("managedFields") or ():
        if isinstance(entry, Mapping):
            out.append(
                {
                    "manager": entry.get("manager") or "",
                    "operation": entry.get("operation") or "",
                    "subresource": entry.get("subresource") or "",
                    "apiVersion": entry.get("apiVersion") or "",
                    "time": entry.get("time") or "",
                    "fields": _field_paths(entry.get("fieldsV1") or {}),
                }
            )
    return out


def _field_paths(fields: Mapping[str, Any], prefix: str = "", limit: int = 40) -> list[str]:
    """The leaf paths of a fieldsV1 set (`f:spec.f:replicas` -> `spec.replicas`)."""
    found: list[str] = []

    def walk(node: Mapping[str, Any], path: str) -> None:
        for key, child in node.items():
            if len(found) >= limit:
                return
            if key == ".":
                continue
            name = key[2:] if key.startswith(("f:", "k:", "v:", "i:")) else key
            here = f"{path}.{name}" if path else name
            if isinstance(child, Mapping) and any(k != "." for k in child):
                walk(child, here)
            else:
                found.append(here)

    walk(fields, prefix)
    return found


def gc_state(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What holds the object back from deletion, or how it is being deleted."""
    finalizers = [str(f) for f in meta.get("finalizers") or ()]
    deleting = bool(meta.get("deletionTimestamp"))
    return {
        "deleting": deleting,
        "deletionTimestamp": meta.get("deletionTimestamp"),
        "finalizers": finalizers,
        "foreground": FOREGROUND in finalizers,
        "orphaning": ORPHAN in finalizers,
        "heldBy": [f for f in finalizers if f not in (FOREGROUND, ORPHAN)] if deleting else [],
    }


def _node(key: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "id": str(meta.get("uid") or f"{key}/{meta.get('namespace')}/{meta.get('name')}"),
        "kind": key,
        "shortKind": group_kind(key).rpartition("/")[2],
        "namespace": meta.get("namespace") or "",
        "name": meta.get("name") or "",
        "gc": gc_state(meta),
    }


def ownership_graph(mirror: ClusterMirror, key: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object's owners (to the top) and children (to the bottom) as nodes and edges
    (owner -> child, with `controller` and `blockOwnerDeletion`)."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    root = _node(key, obj)
    root["root"] = True
    nodes[root["id"]] = root

    def add_owners(child_id: str, meta: Mapping[str, Any], depth: int) -> None:
        for reference in meta.get("ownerReferences") or ():
            if len(nodes) >= MAX_GRAPH_NODES or depth > 10:
                return
            namespace = str(meta.get("namespace") or "")
            found = mirror.owner_of(reference, namespace)
            uid = str(reference.get("uid") or "")
            edges.append(_edge(uid, child_id, reference))
            if uid in nodes:
                continue
            if found is None:
                api_version = str(reference.get("apiVersion") or "")
                nodes[uid] = {
                    "id": uid,
                    "kind": f"{api_version}/{reference.get('kind')}",
                    "shortKind": str(reference.get("kind") or ""),
                    "namespace": namespace,
                    "name": str(reference.get("name") or ""),
                    "missing": True,
                    "gc": gc_state({}),
                }
                continue
            owner_key, owner = found
            nodes[uid] = _node(owner_key, owner)
            add_owners(uid, owner.get("metadata") or {}, depth + 1)

    def add_children(owner_id: str, depth: int) -> None:
        if depth > 10:
            return
        for child_key, child in mirror.children(owner_id):
            if len(nodes) >= MAX_GRAPH_NODES:
                return
            meta = child.get("metadata") or {}
            reference: Mapping[str, Any] = next(
                (r for r in meta.get("ownerReferences") or () if r.get("uid") == owner_id), {}
            )
            node = _node(child_key, child)
            edges.append(_edge(owner_id, node["id"], reference))
            if node["id"] in nodes:
                continue
            nodes[node["id"]] = node
            add_children(node["id"], depth + 1)

    meta = obj.get("metadata") or {}
    add_owners(root["id"], meta, 0)
    add_children(root["id"], 0)
    for node in nodes.values():
        # An object whose every owner is gone is garbage: the collector deletes it.
        owners = [e for e in edges if e["to"] == node["id"]]
        node["orphan"] = bool(owners) and all(nodes[e["from"]].get("missing") for e in owners)
    truncated = len(nodes) >= MAX_GRAPH_NODES
    return {"nodes": list(nodes.values()), "edges": edges, "truncated": truncated}


def _edge(owner: str, child: str, reference: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "from": owner,
        "to": child,
        "controller": bool(reference.get("controller")),
        "blockOwnerDeletion": bool(reference.get("blockOwnerDeletion")),
    }


def describe(mirror: ClusterMirror, key: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Everything the object page shows about `obj` (read whole from the server)."""
    obj = redacted(obj)
    meta = obj.get("metadata") or {}
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    metadata_view = mirror.metadata(key, str(meta.get("namespace") or ""), meta.get("name") or "")
    graph_source = metadata_view if metadata_view is not None else obj
    return {
        "kind": key,
        "namespace": meta.get("namespace") or "",
        "name": meta.get("name") or "",
        "uid": meta.get("uid") or "",
        "resourceVersion": meta.get("resourceVersion") or "",
        "yaml": to_yaml(obj),
        "managedFields": managers(meta),
        "conditions": conditions if isinstance(conditions, list) else [],
        "events": [_event(e) for e in mirror.events_for(str(meta.get("uid") or ""))],
        "graph": ownership_graph(mirror, key, graph_source),
        "gc": gc_state(meta),
    }


def _event(event: Mapping[str, Any]) -> dict[str, Any]:
    source = event.get("source") or {}
    return {
        "type": event.get("type") or "",
        "reason": event.get("reason") or "",
        "message": event.get("message") or "",
        "count": event.get("count") or 1,
        "first": event.get("firstTimestamp") or event.get("eventTime") or "",
        "last": event.get("lastTimestamp") or event.get("eventTime") or "",
        "from": event.get("reportingComponent") or source.get("component") or "",
    }
