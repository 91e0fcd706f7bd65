"""The cluster's state at the end of a run, in a form two runs can be compared in.

A snapshot holds every object of every listable kind in the namespaces a test uses (all but
kube-system, kube-public and kube-node-lease) and the cluster-scoped objects of the
project's CRDs, except the runtime's bookkeeping (Events, Leases, Endpoints and
EndpointSlices) and the built-in controllers' rollout history (ControllerRevisions, a
Deployment's ReplicaSets scaled to nothing, the revision annotations). Each object is
normalised, as Sieve's differential oracle does, so that what differs between two runs by
nature does not count: uids, resourceVersions, generations, managedFields and timestamps
go; the test's namespace (new each run) reads `<ns>` (in names too, as in a cluster-scoped
object named after it), a generated name its prefix and `*` (wherever it appears, a status
field included), IP addresses `<ip>`, allocated node ports `<port>` and the random suffix of
a pod's token volume; conditions are ordered by type; of a pod's status only the phase
stays. Objects are keyed `Kind/namespace/name`, several of one generated prefix numbered by
age; two runs' such objects are paired by what they hold before they are compared (`align`).

Two reference runs of the same test give the noise: the objects and fields in which they
differ are left out of every comparison (`Noise`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeforge._client.client import Client
from kubeforge._client.discovery import APIResource
from kubeforge._client.errors import ApiError

__all__ = [
    "Difference",
    "Noise",
    "Snapshot",
    "align",
    "capture",
    "differences",
    "noise_between",
]

SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
SKIPPED_KINDS = frozenset({"Event", "Lease", "Endpoints", "EndpointSlice", "ControllerRevision"})
# Annotations the built-in controllers keep their rollout history in.
_HISTORY_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
    "deprecated.daemonset.template.generation",
)
_DROPPED_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionGracePeriodSeconds",
)
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_IP = re.compile(r"^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$")
# The projected token volume the API server adds to a pod, named with a random suffix.
_TOKEN_VOLUME = re.compile(r"\bkube-api-access-[a-z0-9]{5}\b")
_PORT_FIELDS = frozenset({"nodePort", "healthCheckNodePort"})

Objects = dict[str, dict[str, Any]]


@dataclass
class Snapshot:
    """Normalised objects by key, and each key's resourceVersion as it was."""

    objects: Objects = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # Objects still being deleted (finalizers or graceful termination pending).
    deleting: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"objects": self.objects, "versions": self.versions, "deleting": self.deleting}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        return cls(dict(data["objects"]), dict(data["versions"]), list(data["deleting"]))


async def listable(client: Client, crds: Iterable[str]) -> list[APIResource]:
    """The kinds a snapshot lists: namespaced ones, and the CRDs' cluster-scoped ones."""
    installed = set(crds)
    found = []
    for group, version in await client.discovery.server_groups():
        for resource in await client.discovery.resources(group, version):
            if "list" not in resource.verbs or resource.kind in SKIPPED_KINDS:
                continue
            if resource.namespaced or f"{resource.plural}.{resource.group}" in installed:
                found.append(resource)
    return found


async def capture(client: Client, kinds: Iterable[APIResource], namespace: str) -> Snapshot:
    """The state of the cluster now, normalised (see the module)."""
    raw: list[dict[str, Any]] = []
    for resource in kinds:
        try:
            items = await client.list(
                f"{resource.api_version}/{resource.kind}", all_namespaces=resource.namespaced
            )
        except ApiError:
            continue  # a kind that went away (its CRD deleted) meanwhile
        for item in items:
            meta = item.get("metadata") or {}
            if meta.get("namespace") in SYSTEM_NAMESPACES or _history(resource.kind, item):
                continue
            item.setdefault("kind", resource.kind)
            raw.append(item)
    generated = _generated_names(raw)
    snapshot = Snapshot()
    shown = [(item, normalise(item, namespace, generated)) for item in raw]
    # Oldest first; objects made in the same second (timestamps have no more) by what they
    # hold, so that alike objects of two runs pair up whatever names they were given.
    shown.sort(key=lambda pair: (_created(pair[0]), _digest(pair[1])))
    for item, normal in shown:
        meta = item.get("metadata") or {}
        key = _key(item, namespace, generated)
        if key.endswith("*"):
            # Objects of one generated prefix are told apart by age.
            number = 1
            while f"{key}#{number}" in snapshot.objects:
                number += 1
            key = f"{key}#{number}"
        snapshot.objects[key] = normal
        snapshot.versions[key] = str(meta.get("resourceVersion") or "")
        if meta.get("deletionTimestamp"):
            snapshot.deleting.append(key)
    return snapshot


def _digest(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _history(kind: str, item: Mapping[str, Any]) -> bool:
    """A Deployment's old ReplicaSet, scaled to nothing: its rollout history, which the
    Deployment controller keeps (revisionHistoryLimit), not an object left behind."""
    if kind != "ReplicaSet":
        return False
    owners = (item.get("metadata") or {}).get("ownerReferences") or []
    replicas = (item.get("spec") or {}).get("replicas")
    return replicas == 0 and any(o.get("kind") == "Deployment" for o in owners)


def _created(item: Mapping[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("creationTimestamp") or "")


def _generated_names(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    names = {}
    for item in items:
        meta = item.get("metadata") or {}
        prefix, name = meta.get("generateName"), meta.get("name") or ""
        if prefix and name.startswith(prefix) and name != prefix:
            names[name] = f"{prefix}*"
    return names


def _key(item: Mapping[str, Any], namespace: str, generated: Mapping[str, str]) -> str:
    meta = item.get("metadata") or {}
    name = str(meta.get("name") or "")
    where = meta.get("namespace") or ""
    where = "<ns>" if where == namespace else where
    shown = generated.get(name, name).replace(namespace, "<ns>")
    return f"{item.get('kind')}/{where}/{shown}" if where else f"{item.get('kind')}/{shown}"


def normalise(
    item: Mapping[str, Any], namespace: str, generated: Mapping[str, str]
) -> dict[str, Any]:
    """One object with what differs between runs by nature taken out (see the module)."""
    obj = dict(item)
    meta = dict(obj.get("metadata") or {})
    for name in _DROPPED_METADATA:
        meta.pop(name, None)
    if "deletionTimestamp" in meta:
        meta["deletionTimestamp"] = "<deleting>"
    if meta.get("annotations"):
        annotations = {
            k: v for k, v in meta["annotations"].items() if k not in _HISTORY_ANNOTATIONS
        }
        if annotations:
            meta["annotations"] = annotations
        else:
            del meta["annotations"]
    if meta.get("ownerReferences"):
        meta["ownerReferences"] = [
            {k: v for k, v in ref.items() if k != "uid"} for ref in meta["ownerReferences"]
        ]
    obj["metadata"] = meta
    if obj.get("kind") == "Pod":
        obj["status"] = {"phase": (obj.get("status") or {}).get("phase")}
    words = sorted({namespace: "<ns>", **generated}.items(), key=lambda pair: -len(pair[0]))
    result: dict[str, Any] = _clean(obj, words)
    return result


def _clean(value: Any, words: list[tuple[str, str]], field_name: str = "") -> Any:
    if isinstance(value, dict):
        return {
            key: _clean(item, words, key)
            for key, item in value.items()
            if key != "observedGeneration"
        }
    if isinstance(value, list):
        items = [_clean(item, words) for item in value]
        if field_name == "conditions" and all(isinstance(i, dict) and "type" in i for i in items):
            # A map keyed by type (listType=map): its order says nothing.
            items.sort(key=lambda condition: str(condition["type"]))
        return items
    if field_name in _PORT_FIELDS and isinstance(value, int):
        return "<port>"
    if isinstance(value, str):
        # Times anywhere in a string (a manifest kubectl kept in an annotation has them).
        value = _TOKEN_VOLUME.sub("kube-api-access-*", _TIME.sub("<time>", value))
        if _IP.match(value):
            return "<ip>"
        for word, shown in words:
            if word and word in value:
                value = value.replace(word, shown)
    return value


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": [1]}}` -> `{"a.b[0]": 1}`; empty containers are leaves."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


@dataclass
class Noise:
    """What differed between the reference runs: objects, and fields of an object."""

    objects: set[str] = field(default_factory=set)
    fields: set[tuple[str, str]] = field(default_factory=set)


def align(reference: Objects, run: Objects) -> Objects:
    """`run` with its objects of generated names numbered as the reference's they are most
    alike: the same content first, then the fewest different fields; what is left over is
    numbered after the reference's. (Which of several such objects is the oldest depends on
    the second each was made in, which differs between runs.)"""
    groups: dict[str, list[str]] = {}
    for key in run:
        base, hash_, _ = key.rpartition("#")
        if hash_ and base.endswith("*"):
            groups.setdefault(base, []).append(key)
    aligned = {key: obj for key, obj in run.items() if key.rpartition("#")[0] not in groups}
    for base, keys in groups.items():
        theirs = [key for key in reference if key.rpartition("#")[0] == base]
        left = list(keys)
        pairs: dict[str, str] = {}
        for key in theirs:
            same = next((k for k in left if run[k] == reference[key]), None)
            if same is not None:
                pairs[key] = same
                left.remove(same)
        for key in theirs:
            if key not in pairs and left:
                nearest = min(left, key=lambda k: _distance(reference[key], run[k]))
                pairs[key] = nearest
                left.remove(nearest)
        for key, mine in pairs.items():
            aligned[key] = run[mine]
        for number, mine in enumerate(left, start=len(theirs) + 1):
            aligned[f"{base}#{number}"] = run[mine]
    return aligned


def _distance(one: Any, two: Any) -> int:
    first, second = flatten(one), flatten(two)
    return sum(first.get(p, _ABSENT) != second.get(p, _ABSENT) for p in set(first) | set(second))


def noise_between(first: Objects, second: Objects) -> Noise:
    second = align(first, second)
    noise = Noise(objects=set(first) ^ set(second))
    for key in set(first) & set(second):
        one, two = flatten(first[key]), flatten(second[key])
        for path in set(one) | set(two):
            if one.get(path, _ABSENT) != two.get(path, _ABSENT):
                noise.fields.add((key, path))
    return noise


_ABSENT = object()


@dataclass(frozen=True)
class Difference:
    """How a run's end state differs from the reference's: `missing` (the reference has the
    object, the run not), `leaked` (the other way) or `changed` (a field), with values."""

    what: str
    key: str
    path: str = ""
    expected: Any = None
    found: Any = None

    def __str__(self) -> str:
        if self.what == "missing":
            return f"missing: {self.key}"
        if self.what == "leaked":
            return f"leaked:  {self.key}"
        return f"changed: {self.key} {self.path}: {self.expected!r} -> {self.found!r}"


def differences(reference: Objects, run: Objects, noise: Noise) -> list[Difference]:
    """What `run` has that `reference` has not, and the other way, noise left out."""
    run = align(reference, run)
    found: list[Difference] = []
    for key in sorted(set(reference) - set(run) - noise.objects):
        found.append(Difference("missing", key))
    for key in sorted(set(run) - set(reference) - noise.objects):
        found.append(Difference("leaked", key))
    for key in sorted((set(reference) & set(run)) - noise.objects):
        expected, got = flatten(reference[key]), flatten(run[key])
        for path in sorted(set(expected) | set(got)):
            if (key, path) in noise.fields:
                continue
            one, two = expected.get(path, _ABSENT), got.get(path, _ABSENT)
            if one != two:
                found.append(
                    Difference(
                        "changed",
                        key,
                        path,
                        None if one is _ABSENT else one,
                        None if two is _ABSENT else two,
                    )
                )
    return found
