"""The default roles and bindings every cluster starts with (Kubernetes' bootstrap policy).

Like kube-apiserver, the server creates the ones missing at start-up, labelled
`kubernetes.io/bootstrapping: rbac-defaults` and annotated for automatic update.
The user-facing `admin`, `edit` and `view` roles only carry aggregation rules; the
cluster-role aggregation controller of a development cluster fills in their rules from
the `system:aggregate-to-*` roles (and any role labelled to aggregate into them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["bootstrap_objects"]

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
RBAC = "rbac.authorization.k8s.io/v1"
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def _rule(
    verbs: list[str],
    groups: list[str] | None = None,
    resources: list[str] | None = None,
    urls: list[str] | None = None,
) -> dict[str, list[str]]:
    rule: dict[str, list[str]] = {}
    if resources is not None:
        rule["apiGroups"] = groups if groups is not None else [""]
        rule["resources"] = resources
    if urls is not None:
        rule["nonResourceURLs"] = urls
    rule["verbs"] = verbs
    return rule


def _signer_rule(verbs: list[str], signer: str) -> dict[str, list[str]]:
    rule = _rule(verbs, ["certificates.k8s.io"], ["signers"])
    rule["resourceNames"] = [signer]
    return rule


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _role(
    name: str,
    rules: list[dict[str, list[str]]],
    labels: dict[str, str] | None = None,
    aggregate_from: list[str] | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": _meta(name, labels),
        "rules": rules,
    }
    if aggregate_from is not None:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [
                {"matchLabels": {AGGREGATE + target: "true"}} for target in aggregate_from
            ]
        }
    return role


def _binding(name: str, role: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}
            for kind, subject in subjects
        ],
    }


HEALTH = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

_VIEW = [
    _rule(
        READ,
        resources=[
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
    ),
    _rule(
        READ,
        resources=[
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
    ),
    _rule(READ, resources=["namespaces"]),
    _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(
        READ,
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    _rule(["impersonate"], resources=["serviceaccounts"]),
    _rule(WRITE, resources=["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    _rule(["create"], resources=["pods/eviction"]),
    _rule(
        WRITE,
        resources=[
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    _rule(["create"], resources=["serviceaccounts/token"]),
    _rule(
        WRITE,
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    _rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    _rule(
        READ,
        resources=[
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "secrets",
            "services/proxy",
        ],
    ),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
]


def bootstrap_objects() -> list[dict[str, Any]]:
    """The bootstrap ClusterRoles, then the ClusterRoleBindings."""
    roles = [
        _role(
            "cluster-admin",
            [_rule(["*"], ["*"], ["*"]), _rule(["*"], urls=["*"])],
        ),
        _role("admin", [], aggregate_from=["admin"]),
        _role("edit", [], {AGGREGATE + "admin": "true"}, aggregate_from=["edit"]),
        _role("view", [], {AGGREGATE + "edit": "true"}, aggregate_from=["view"]),
        _role("system:aggregate-to-admin", _ADMIN, {AGGREGATE + "admin": "true"}),
        _role("system:aggregate-to-edit", _EDIT, {AGGREGATE + "edit": "true"}),
        _role("system:aggregate-to-view", _VIEW, {AGGREGATE + "view": "true"}),
        _role(
            "system:discovery",
            [
                _rule(
                    ["get"],
                    urls=[
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                )
            ],
        ),
        _role("system:public-info-viewer", [_rule(["get"], urls=HEALTH)]),
        _role(
            "system:basic-user",
            [
                _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
                _rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
            ],
        ),
        _role(
            "system:auth-delegator",
            [
                _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _role(
            "system:monitoring",
            [
                _rule(
                    ["get"],
                    urls=[
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                )
            ],
        ),
        _role(
            "system:service-account-issuer-discovery",
            [
                _rule(
                    ["get"],
                    urls=[
                        "/.well-known/openid-configuration",
                        "/.well-known/openid-configuration/",
                        "/openid/v1/jwks",
                        "/openid/v1/jwks/",
                    ],
                )
            ],
        ),
        # Who may approve requests for each of kube's own signers, and the node client
        # requests (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go): bound to
        # nobody, for an administrator to grant.
        *(
            _role(
                f"system:certificates.k8s.io:{role}",
                [_signer_rule(["approve"], f"kubernetes.io/{signer}")],
            )
            for role, signer in (
                ("kube-apiserver-client-approver", "kube-apiserver-client"),
                ("kube-apiserver-client-kubelet-approver", "kube-apiserver-client-kubelet"),
                ("kubelet-serving-approver", "kubelet-serving"),
                ("legacy-unknown-approver", "legacy-unknown"),
            )
        ),
        *(
            _role(
                f"system:certificates.k8s.io:certificatesigningrequests:{kind}",
                [
                    _rule(
                        ["create"],
                        ["certificates.k8s.io"],
                        [f"certificatesigningrequests/{kind}"],
                    )
                ],
            )
            for kind in ("nodeclient", "selfnodeclient")
        ),
        _role(
            "system:controller:clusterrole-aggregation-controller",
            [
                _rule(
                    ["escalate", "get", "list", "patch", "update", "watch"],
                    ["rbac.authorization.k8s.io"],
                    ["clusterroles"],
                )
            ],
        ),
    ]
    bindings = [
        _binding("cluster-admin", "cluster-admin", [("Group", "system:masters")]),
        _binding("system:discovery", "system:discovery", [("Group", "system:authenticated")]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [("Group", "system:authenticated"), ("Group", "system:unauthenticated")],
        ),
        _binding("system:basic-user", "system:basic-user", [("Group", "system:authenticated")]),
        _binding("system:monitoring", "system:monitoring", [("Group", "system:monitoring")]),
        _binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            [("Group", "system:serviceaccounts")],
        ),
    ]
    return roles + bindings
