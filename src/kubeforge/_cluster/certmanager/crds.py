"""The CustomResourceDefinitions of the cert-manager kinds the development cluster serves:
`cert-manager.io/v1` Issuer, ClusterIssuer and Certificate, with cert-manager's names, short
names, printer columns and status subresource. Their schemas keep unknown fields (what the
built-in controllers do not read is stored as given); cert-manager's own webhook, which
validates them in a real cluster, is not part of the development cluster.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GROUP", "certmanager_crds"]

GROUP = "cert-manager.io"

_OPEN: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_READY: dict[str, Any] = {
    "name": "Ready",
    "type": "string",
    "jsonPath": '.status.conditions[?(@.type == "Ready")].status',
}
_STATUS: dict[str, Any] = {
    "name": "Status",
    "type": "string",
    "priority": 1,
    "jsonPath": '.status.conditions[?(@.type == "Ready")].message',
}
_AGE: dict[str, Any] = {
    "name": "Age",
    "type": "date",
    "description": "CreationTimestamp is a timestamp representing the server time when this "
    "object was created.",
    "jsonPath": ".metadata.creationTimestamp",
}


def _crd(
    kind: str, plural: str, scope: str, short: list[str], columns: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {
                "app.kubernetes.io/name": "cert-manager",
                "app.kubernetes.io/instance": "kubeforge",
            },
        },
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
                "categories": ["cert-manager"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": _OPEN,
                                "status": _OPEN,
                            },
                            "required": ["spec"],
                        }
                    },
                }
            ],
        },
    }


def certmanager_crds() -> list[dict[str, Any]]:
    """The three CRDs, to be installed before the controllers start."""
    issuer_columns = [_READY, _STATUS, _AGE]
    certificate_columns = [
        _READY,
        {"name": "Secret", "type": "string", "jsonPath": ".spec.secretName"},
        {"name": "Issuer", "type": "string", "priority": 1, "jsonPath": ".spec.issuerRef.name"},
        _STATUS,
        _AGE,
    ]
    return [
        _crd("Issuer", "issuers", "Namespaced", [], issuer_columns),
        _crd("ClusterIssuer", "clusterissuers", "Cluster", [], issuer_columns),
        _crd("Certificate", "certificates", "Namespaced", ["cert", "certs"], certificate_columns),
    ]
