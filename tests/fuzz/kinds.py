"""The kinds under fuzzing: where their objects live, and strategies for valid objects of
each (which the operations then send as they are, or made hostile)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = ["CRD", "KINDS", "Kind"]

GROUP = "fuzz.kubeforge.dev"


@dataclass(frozen=True)
class Kind:
    """One resource: its API path, kind, scope and strategies for its objects."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    spec: st.SearchStrategy[dict[str, Any]]
    """The object's fields other than apiVersion, kind and metadata."""
    subresources: tuple[str, ...] = ()
    strategic: bool = True  # strategic merge patches apply (built-in kinds)

    def collection(self, namespace: str | None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def path(self, namespace: str | None, name: str) -> str:
        return f"{self.collection(namespace)}/{name}"


_NAME = st.from_regex(r"\A[a-z]([a-z0-9-]{0,10}[a-z0-9])?\Z")
_LABEL_KEY = st.sampled_from(["app", "tier", "example.com/role", "k8s.io/x", "a.b-c_d"])
_LABEL_VALUE = st.from_regex(r"\A([A-Za-z0-9]([A-Za-z0-9_.-]{0,8}[A-Za-z0-9])?)?\Z")
LABELS = st.dictionaries(_LABEL_KEY, _LABEL_VALUE, max_size=3)
ANNOTATIONS = st.dictionaries(_LABEL_KEY, st.text(max_size=20), max_size=2)
_IMAGE = st.sampled_from(["nginx", "busybox:1.36", "registry.example.com/app@sha256:" + "a" * 64])
_PORT = st.integers(min_value=1, max_value=65535)
_QUANTITY = st.sampled_from(["100m", "1", "0.5", "128Mi", "1Gi", "2k", "1e3", "+1"])


@st.composite
def _containers(draw: st.DrawFn, min_size: int = 1) -> list[dict[str, Any]]:
    names = draw(st.lists(_NAME, min_size=min_size, max_size=2, unique=True))
    out = []
    for name in names:
        container: dict[str, Any] = {"name": name, "image": draw(_IMAGE)}
        if draw(st.booleans()):
            container["ports"] = [
                {"containerPort": draw(_PORT), "protocol": draw(st.sampled_from(["TCP", "UDP"]))}
            ]
        if draw(st.booleans()):
            container["env"] = [
                {"name": draw(st.sampled_from(["A", "B_C", "x.y"])), "value": draw(st.text())}
            ]
        if draw(st.booleans()):
            container["resources"] = {
                "limits": {"cpu": draw(_QUANTITY)},
                "requests": {"memory": draw(_QUANTITY)},
            }
        if draw(st.booleans()):
            container["command"] = draw(st.lists(st.text(max_size=5), max_size=2))
        out.append(container)
    return out


@st.composite
def _pod_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(_containers())}
    if draw(st.booleans()):
        spec["restartPolicy"] = draw(st.sampled_from(["Always", "OnFailure", "Never"]))
    if draw(st.booleans()):
        spec["terminationGracePeriodSeconds"] = draw(st.integers(min_value=0, max_value=100))
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(LABELS)
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    return spec


@st.composite
def _pod(draw: st.DrawFn) -> dict[str, Any]:
    return {"spec": draw(_pod_spec())}


@st.composite
def _deployment(draw: st.DrawFn) -> dict[str, Any]:
    labels = {"app": draw(_NAME)}
    spec: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": draw(_pod_spec())},
    }
    if draw(st.booleans()):
        spec["replicas"] = draw(st.integers(min_value=0, max_value=5))
    if draw(st.booleans()):
        spec["strategy"] = dict(
            draw(
                st.sampled_from(
                    [
                        {"type": "Recreate"},
                        {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                    ]
                )
            )
        )
    if draw(st.booleans()):
        spec["minReadySeconds"] = draw(st.integers(min_value=0, max_value=10))
    return {"spec": spec}


@st.composite
def _service(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]))
    spec: dict[str, Any] = {"type": kind}
    if kind == "ExternalName":
        spec["externalName"] = "db.example.com"
    else:
        ports = []
        for i, port in enumerate(draw(st.lists(_PORT, min_size=1, max_size=2, unique=True))):
            entry: dict[str, Any] = {"name": f"p{i}", "port": port}
            if draw(st.booleans()):
                entry["targetPort"] = draw(st.one_of(_PORT, st.just("http")))
            if kind != "ClusterIP" and draw(st.booleans()):
                entry["nodePort"] = draw(st.integers(min_value=30000, max_value=32767))
            ports.append(entry)
        spec["ports"] = ports
        spec["selector"] = draw(LABELS)
        if draw(st.booleans()):
            spec["clusterIP"] = draw(st.sampled_from(["None", "10.96.0.77", ""]))
    return {"spec": spec}


@st.composite
def _configmap(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {
        "data": draw(st.dictionaries(st.from_regex(r"\A[A-Za-z0-9._-]{1,10}\Z"), st.text()))
    }
    if draw(st.booleans()):
        body["binaryData"] = {"bin": base64.b64encode(draw(st.binary(max_size=8))).decode()}
    if draw(st.booleans()):
        body["immutable"] = False
    return body


@st.composite
def _secret(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": draw(st.sampled_from(["Opaque", "kubernetes.io/tls", "example.com/custom"]))
    }
    if body["type"] == "kubernetes.io/tls":
        body["data"] = {"tls.crt": "Y3J0", "tls.key": "a2V5"}
    else:
        body["data"] = {"a": base64.b64encode(draw(st.binary(max_size=8))).decode()}
    if draw(st.booleans()):
        body["stringData"] = {"b": draw(st.text(max_size=5))}
    return body


_RULE = st.fixed_dictionaries(
    {
        "apiGroups": st.sampled_from([[""], ["apps"], ["*"]]),
        "resources": st.sampled_from([["pods"], ["configmaps", "secrets"], ["*"]]),
        "verbs": st.sampled_from([["get"], ["get", "list", "watch"], ["*"]]),
    }
)


@st.composite
def _role(draw: st.DrawFn) -> dict[str, Any]:
    return {"rules": draw(st.lists(_RULE, max_size=2))}


@st.composite
def _role_binding(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": draw(st.sampled_from(["Role", "ClusterRole"])),
            "name": draw(_NAME),
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": draw(_NAME), "namespace": "default"},
            {"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"},
        ][: draw(st.integers(min_value=0, max_value=2))],
    }


@st.composite
def _namespace(draw: st.DrawFn) -> dict[str, Any]:
    return {"spec": {"finalizers": ["kubernetes"]}} if draw(st.booleans()) else {}


@st.composite
def _gadget(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"size": draw(st.integers(min_value=0, max_value=100))}
    optional = {
        "ratio": st.floats(min_value=0, max_value=1),
        "minReplicas": st.integers(min_value=0, max_value=3),
        "maxReplicas": st.integers(min_value=3, max_value=9),
        "mode": st.sampled_from(["A", "B"]),
        "name": _NAME,
        "port": st.one_of(_PORT, st.just("http")),
        "tags": st.lists(_NAME, max_size=3, unique=True),
        "entries": st.lists(
            st.fixed_dictionaries({"name": _NAME, "value": st.integers(0, 9)}),
            max_size=2,
            unique_by=lambda e: e["name"],
        ),
        "labels": LABELS,
        "free": st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4)),
        "template": st.builds(
            lambda name, labels: {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": labels},
                "data": {"a": "b"},
            },
            _NAME,
            LABELS,
        ),
        "when": st.sampled_from(["2024-01-02T03:04:05Z", "2030-12-31T23:59:59+01:00"]),
        "enabled": st.booleans(),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            spec[key] = draw(strategy)
    return {"spec": spec}


KINDS = {
    "configmaps": Kind("v1", "ConfigMap", "configmaps", True, _configmap()),
    "secrets": Kind("v1", "Secret", "secrets", True, _secret()),
    "pods": Kind("v1", "Pod", "pods", True, _pod(), ("status",)),
    "services": Kind("v1", "Service", "services", True, _service(), ("status",)),
    "deployments": Kind(
        "apps/v1", "Deployment", "deployments", True, _deployment(), ("status", "scale")
    ),
    "namespaces": Kind("v1", "Namespace", "namespaces", False, _namespace(), ("status",)),
    "roles": Kind("rbac.authorization.k8s.io/v1", "Role", "roles", True, _role()),
    "rolebindings": Kind(
        "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True, _role_binding()
    ),
    "clusterroles": Kind(
        "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, _role()
    ),
    "gadgets": Kind(
        f"{GROUP}/v1", "Gadget", "gadgets", True, _gadget(), ("status", "scale"), strategic=False
    ),
}

_INT32 = {"type": "integer", "format": "int32"}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "selectableFields": [{"jsonPath": ".spec.mode"}],
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.minReplicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.minReplicas <= self.maxReplicas",
                                        "message": "minReplicas must not exceed maxReplicas",
                                    },
                                    {
                                        "rule": "!has(oldSelf.name) || self.name == oldSelf.name",
                                        "message": "name is immutable once set",
                                    },
                                    {
                                        "rule": "!has(self.tags) || self.tags.all(t, size(t) < 10)",
                                        "fieldPath": ".tags",
                                    },
                                ],
                                "properties": {
                                    "size": {**_INT32, "minimum": 0, "maximum": 100},
                                    "ratio": {"type": "number", "maximum": 1},
                                    "minReplicas": {**_INT32, "default": 1},
                                    "maxReplicas": {"type": "integer", "default": 10},
                                    "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                                    "name": {
                                        "type": "string",
                                        "maxLength": 12,
                                        "pattern": "^[a-z][a-z0-9-]*$",
                                    },
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "tags": {
                                        "type": "array",
                                        "maxItems": 5,
                                        "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"},
                                    },
                                    "entries": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "value": {"type": "integer", "default": 0},
                                            },
                                        },
                                    },
                                    "labels": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                    "free": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "when": {"type": "string", "format": "date-time"},
                                    "enabled": {"type": "boolean", "default": False},
                                    "nested": {
                                        "type": "object",
                                        "default": {},
                                        "properties": {
                                            "deep": {
                                                "type": "object",
                                                "default": {},
                                                "properties": {
                                                    "value": {"type": "string", "default": "x"}
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "replicas": _INT32,
                                    "selector": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
