"""Defaulting of built-in objects: minimal objects get what a real server fills in."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeforge._apiserver.types.defaults import DEFAULTERS, apply_defaults, image_pull_policy

CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
POD_SPEC_DEFAULTS = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
}


def defaulted(group: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(obj)
    apply_defaults(group, kind, result)
    return result


def template(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    tpl: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec}}
    if labels:
        tpl["metadata"] = {"labels": labels}
    return tpl


def defaulted_template(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    tpl = template(labels, **spec)
    container = {**tpl["spec"]["containers"][0], "imagePullPolicy": "IfNotPresent"}
    tpl["spec"] = {
        **POD_SPEC_DEFAULTS,
        **tpl["spec"],
        "containers": [{**container, **CONTAINER_DEFAULTS}],
    }
    return tpl


def test_minimal_deployment() -> None:
    obj = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template({"app": "web"})},
    }
    assert defaulted("apps", "Deployment", obj)["spec"] == {
        "selector": {"matchLabels": {"app": "web"}},
        "template": defaulted_template({"app": "web"}),
        "replicas": 1,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        },
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    }


def test_recreate_deployment_gets_no_rolling_update() -> None:
    obj = {"spec": {"strategy": {"type": "Recreate"}, "template": template()}}
    assert defaulted("apps", "Deployment", obj)["spec"]["strategy"] == {"type": "Recreate"}


def test_minimal_pod() -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert defaulted("", "Pod", obj)["spec"] == {
        "containers": [
            {"name": "c", "image": "nginx", "imagePullPolicy": "Always", **CONTAINER_DEFAULTS}
        ],
        **POD_SPEC_DEFAULTS,
        "enableServiceLinks": True,
    }


def test_pod_requests_default_to_limits_but_template_requests_do_not() -> None:
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    pod = {"spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}
    container = defaulted("", "Pod", pod)["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    deployment = {"spec": {"template": {"spec": copy.deepcopy(pod["spec"])}}}
    container = defaulted("apps", "Deployment", deployment)["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["resources"]["requests"] == {"cpu": "500m"}


def test_host_network_ports_mirror_on_pods_only() -> None:
    spec = {
        "hostNetwork": True,
        "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 8080}]}],
    }
    port = defaulted("", "Pod", {"spec": spec})["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}
    port = defaulted("apps", "DaemonSet", {"spec": {"template": {"spec": spec}}})["spec"][
        "template"
    ]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "protocol": "TCP"}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/nginx", "Always"),
        ("registry:5000/nginx:1", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("Upper/Case", "IfNotPresent"),
        ("", "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_probes_and_handlers() -> None:
    probe = {"httpGet": {"port": 80}}
    container = {
        "name": "c",
        "image": "x",
        "livenessProbe": probe,
        "lifecycle": {"preStop": {"httpGet": {"port": 80}}},
    }
    result = defaulted("", "Pod", {"spec": {"containers": [container]}})["spec"]["containers"][0]
    assert result["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert result["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/", "scheme": "HTTP"}


def test_volumes() -> None:
    volumes = [
        {"name": "a"},
        {"name": "b", "configMap": {"name": "cm"}},
        {"name": "c", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "d", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
        {"name": "e", "hostPath": {"path": "/x"}},
    ]
    result = defaulted("", "Pod", {"spec": {"containers": [], "volumes": volumes}})["spec"][
        "volumes"
    ]
    assert result == [
        {"name": "a", "emptyDir": {}},
        {"name": "b", "configMap": {"name": "cm", "defaultMode": 420}},
        {"name": "c", "secret": {"secretName": "s", "defaultMode": 256}},
        {
            "name": "d",
            "projected": {
                "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
                "defaultMode": 420,
            },
        },
        {"name": "e", "hostPath": {"path": "/x", "type": ""}},
    ]


def test_service_account_is_mirrored() -> None:
    spec = defaulted("", "Pod", {"spec": {"serviceAccountName": "robot", "containers": []}})["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("robot", "robot")


def test_minimal_service() -> None:
    obj = {"spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}}
    assert defaulted("", "Service", obj)["spec"] == {
        "selector": {"app": "x"},
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "sessionAffinity": "None",
        "type": "ClusterIP",
        "internalTrafficPolicy": "Cluster",
        "ipFamilyPolicy": "SingleStack",
        "ipFamilies": ["IPv4"],
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"type": "NodePort", "ports": [{"port": 80}]}, {"externalTrafficPolicy": "Cluster"}),
        (
            {"type": "LoadBalancer"},
            {"externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True},
        ),
        ({"externalIPs": ["1.2.3.4"]}, {"externalTrafficPolicy": "Cluster"}),
        ({"clusterIP": "None"}, {"ipFamilyPolicy": "RequireDualStack", "clusterIPs": ["None"]}),
        ({"clusterIP": "None", "selector": {"a": "b"}}, {"ipFamilyPolicy": "SingleStack"}),
        (
            {"sessionAffinity": "ClientIP"},
            {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}},
        ),
        ({"clusterIPs": ["10.0.0.9"]}, {"clusterIP": "10.0.0.9"}),
    ],
)
def test_service_variants(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    result = defaulted("", "Service", {"spec": spec})["spec"]
    assert {k: result.get(k) for k in expected} == expected


def test_external_name_service_has_no_ip_fields() -> None:
    result = defaulted(
        "", "Service", {"spec": {"type": "ExternalName", "externalName": "x.example"}}
    )["spec"]
    assert "ipFamilies" not in result and "ipFamilyPolicy" not in result
    assert "internalTrafficPolicy" not in result


def test_minimal_job() -> None:
    obj = {
        "metadata": {"name": "j"},
        "spec": {"template": template({"app": "j"}, restartPolicy="Never")},
    }
    result = defaulted("batch", "Job", obj)
    assert result["spec"] == {
        "template": defaulted_template({"app": "j"}, restartPolicy="Never"),
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "manualSelector": False,
    }
    assert result["metadata"]["labels"] == {"app": "j"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"parallelism": 3}, {"parallelism": 3, "completions": None}),
        ({"completions": 5}, {"parallelism": 1, "completions": 5}),
        ({"backoffLimitPerIndex": 1}, {"backoffLimit": 2**31 - 1}),
        ({"podFailurePolicy": {"rules": []}}, {"podReplacementPolicy": "Failed"}),
        ({"manualSelector": True}, {"manualSelector": True}),
    ],
)
def test_job_variants(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    result = defaulted("batch", "Job", {"spec": spec})["spec"]
    assert {k: result.get(k) for k in expected} == expected


def test_minimal_cronjob() -> None:
    obj = {
        "spec": {
            "schedule": "@hourly",
            "jobTemplate": {"spec": {"template": template(restartPolicy="Never")}},
        }
    }
    assert defaulted("batch", "CronJob", obj)["spec"] == {
        "schedule": "@hourly",
        "jobTemplate": {"spec": {"template": defaulted_template(restartPolicy="Never")}},
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    }


def test_statefulset_and_daemonset() -> None:
    sts = defaulted(
        "apps",
        "StatefulSet",
        {
            "spec": {
                "template": template(),
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
            }
        },
    )["spec"]
    assert sts["podManagementPolicy"] == "OrderedReady"
    assert sts["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    assert (sts["replicas"], sts["revisionHistoryLimit"]) == (1, 10)
    assert sts["volumeClaimTemplates"][0] == {
        "metadata": {"name": "data"},
        "spec": {"volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    ds = defaulted("apps", "DaemonSet", {"spec": {"template": template()}})["spec"]
    assert ds["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["revisionHistoryLimit"] == 10


def test_replicaset_and_replication_controller() -> None:
    assert (
        defaulted("apps", "ReplicaSet", {"spec": {"template": template()}})["spec"]["replicas"] == 1
    )
    rc = defaulted("", "ReplicationController", {"spec": {"template": template({"app": "x"})}})
    assert rc["spec"]["selector"] == {"app": "x"}
    assert rc["metadata"]["labels"] == {"app": "x"}


def test_secret_type_and_string_data() -> None:
    result = defaulted("", "Secret", {"data": {"a": "eA=="}, "stringData": {"b": "hello"}})
    assert result == {"data": {"a": "eA==", "b": "aGVsbG8="}, "type": "Opaque"}
    assert defaulted("", "Secret", {"type": "kubernetes.io/tls"})["type"] == "kubernetes.io/tls"


def test_namespace_and_pvc() -> None:
    ns = defaulted("", "Namespace", {"metadata": {"name": "team"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert ns["status"] == {"phase": "Active"}
    pvc = defaulted("", "PersistentVolumeClaim", {"spec": {}})
    assert pvc == {"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}


def test_crd() -> None:
    obj = {
        "spec": {
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "storage": True}],
        }
    }
    spec = defaulted("apiextensions.k8s.io", "CustomResourceDefinition", obj)["spec"]
    assert spec["names"] == {
        "kind": "Widget",
        "plural": "widgets",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert spec["conversion"] == {"strategy": "None"}
    assert spec["versions"] == [{"name": "v1", "storage": True, "served": False}]


def test_webhook_configurations() -> None:
    hook = {
        "name": "a.b.c",
        "clientConfig": {"service": {"name": "s", "namespace": "n"}},
        "rules": [{"operations": ["CREATE"]}],
    }
    mutating = defaulted(
        "admissionregistration.k8s.io", "MutatingWebhookConfiguration", {"webhooks": [hook]}
    )
    assert mutating["webhooks"][0] == {
        **hook,
        "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}},
        "rules": [{"operations": ["CREATE"], "scope": "*"}],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 10,
        "reinvocationPolicy": "Never",
    }
    validating = defaulted(
        "admissionregistration.k8s.io", "ValidatingWebhookConfiguration", {"webhooks": [hook]}
    )
    assert "reinvocationPolicy" not in validating["webhooks"][0]


def test_role_binding_subjects() -> None:
    obj = {
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa"}],
    }
    result = defaulted("rbac.authorization.k8s.io", "RoleBinding", obj)
    assert result["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert result["subjects"] == [
        {"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "sa"},
    ]


def test_limit_range_drops_empty_lists() -> None:
    obj = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}, {"type": "Container"}]}}
    limits = defaulted("", "LimitRange", obj)["spec"]["limits"]
    assert limits == [
        {
            "type": "Container",
            "max": {"cpu": "2"},
            "default": {"cpu": "2"},
            "defaultRequest": {"cpu": "2"},
        },
        {"type": "Container"},
    ]


def test_unknown_kinds_are_left_alone() -> None:
    obj = {"spec": {"x": 1}}
    assert defaulted("example.com", "Widget", obj) == obj


SAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("", "Pod"): {
        "spec": {
            "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 1}]}],
            "volumes": [{"name": "v"}],
        }
    },
    ("", "Service"): {"spec": {"ports": [{"port": 1}], "type": "LoadBalancer"}},
    ("apps", "Deployment"): {"spec": {"template": template({"a": "b"})}},
    ("batch", "Job"): {"spec": {"template": template({"a": "b"})}},
    ("batch", "CronJob"): {"spec": {"jobTemplate": {"spec": {"template": template()}}}},
    ("", "Secret"): {"stringData": {"a": "b"}},
}


@pytest.mark.parametrize("key", sorted(DEFAULTERS))
def test_defaulting_is_idempotent(key: tuple[str, str]) -> None:
    once = defaulted(*key, SAMPLES.get(key, {"metadata": {"name": "x"}}))
    assert defaulted(*key, once) == once
