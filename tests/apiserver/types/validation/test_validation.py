"""Semantic validation of built-in kinds, as each kind's strategy applies it."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._api.machinery.cron import schedule_error
from kubeforge._apiserver.types.validation.common import semantic_equal
from kubeforge._apiserver.types.validation.core_pods import pod_qos_class
from tests.support.builtin_objects import (
    EXT,
    Obj,
    crd,
    created,
    deployment,
    errors,
    job,
    pod_spec,
    template,
    update_errors,
)

# -- pods ------------------------------------------------------------------------------------


def resources(**values: Any) -> Obj:
    return {"name": "c", "image": "x", "resources": values}


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([{"name": "c", "image": "x"}], "BestEffort"),
        ([resources(requests={"cpu": "100m"})], "Burstable"),
        ([resources(limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        ([resources(limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "500m"})], "Burstable"),
        (
            [resources(limits={"cpu": "1000m", "memory": "1024Mi"}, requests={"cpu": "1"})],
            "Guaranteed",
        ),
        (
            [resources(limits={"cpu": "1", "memory": "1Gi"}), {"name": "d", "image": "x"}],
            "Burstable",
        ),
        ([resources(limits={"nvidia.com/gpu": "1"})], "BestEffort"),
    ],
)
def test_pod_qos_class(containers: list[Obj], qos: str) -> None:
    pod = created("", "Pod", {"spec": {"containers": containers}})
    assert pod["status"]["qosClass"] == qos
    assert pod_qos_class(pod["spec"]) == qos


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, ["spec.containers: Required value"]),
        (
            {"containers": [{"name": "c"}]},
            ["spec.containers[0].image: Required value"],
        ),
        (
            {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
            ['spec.containers[1].name: Duplicate value: "c"'],
        ),
        (
            {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]},
            [
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be "
                "between 1 and 65535, inclusive"
            ],
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "ports": [{"containerPort": 80, "protocol": "HTTP"}],
                    }
                ]
            },
            [
                'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported '
                'values: "SCTP", "TCP", "UDP"'
            ],
        ),
        (
            pod_spec(restartPolicy="Sometimes"),
            [
                'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
                '"Always", "OnFailure", "Never"'
            ],
        ),
        (
            {
                "containers": [
                    {"name": "c", "image": "x", "volumeMounts": [{"name": "v", "mountPath": "/d"}]}
                ]
            },
            ['spec.containers[0].volumeMounts[0].name: Not found: "v"'],
        ),
        (
            {"containers": [{"name": "c", "image": "x", "env": [{"name": "A=B"}]}]},
            [
                'spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment '
                "variable name must consist only of printable ASCII characters other than '='"
            ],
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 2},
                    }
                ]
            },
            ["spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"],
        ),
        (
            {"containers": [{"name": "c", "image": "x", "readinessProbe": {"periodSeconds": 5}}]},
            ["spec.containers[0].readinessProbe: Required value: must specify a handler type"],
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}},
                    }
                ]
            },
            [
                'spec.containers[0].resources.requests: Invalid value: "2": must be less than '
                "or equal to cpu limit of 1"
            ],
        ),
        (
            pod_spec(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]),
            ["spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type"],
        ),
        (
            pod_spec(activeDeadlineSeconds=0),
            [
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and "
                "2147483647, inclusive"
            ],
        ),
        (
            pod_spec(ephemeralContainers=[{"name": "e", "image": "x"}]),
            ["spec.ephemeralContainers: Forbidden: cannot be set on create"],
        ),
    ],
)
def test_pod_validation(spec: Obj, expected: list[str]) -> None:
    assert errors("", "Pod", {"metadata": {"name": "p"}, "spec": spec}) == expected


def test_pod_container_name_must_be_a_label() -> None:
    (message,) = errors("", "Pod", {"spec": {"containers": [{"name": "Main", "image": "x"}]}})
    assert message.startswith(
        'spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label'
    )


def test_pod_updates() -> None:
    old = {"metadata": {"name": "p"}, "spec": pod_spec()}

    def image(p: Obj) -> None:
        p["spec"]["containers"][0]["image"] = "nginx:2"

    def policy(p: Obj) -> None:
        p["spec"]["restartPolicy"] = "Never"

    def bind(p: Obj) -> None:
        p["spec"]["nodeName"] = "node-1"

    def drop_toleration(p: Obj) -> None:
        p["spec"]["tolerations"] = [{"operator": "Exists"}]

    def add_container(p: Obj) -> None:
        p["spec"]["containers"].append({"name": "d", "image": "x"})

    assert update_errors("", "Pod", old, image) == []
    assert update_errors("", "Pod", old, bind) == []
    (forbidden,) = update_errors("", "Pod", old, policy)
    assert forbidden.startswith(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    )
    assert update_errors("", "Pod", old, add_container) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]
    assert (
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ) in update_errors("", "Pod", old, drop_toleration)


# -- workloads -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (deployment(), []),
        (
            {"metadata": {"name": "web"}, "spec": {"template": template()}},
            [
                "spec.selector: Required value",
                'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
                "`selector` does not match template `labels`",
            ],
        ),
        (
            deployment(selector={"matchLabels": {"app": "y"}}),
            [
                'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
                "`selector` does not match template `labels`"
            ],
        ),
        (
            deployment(selector={}),
            [
                "spec.selector: Invalid value: "
                "v1.LabelSelector{MatchLabels:map[string]string(nil), "
                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid "
                "for deployment"
            ],
        ),
        (
            deployment(replicas=-1),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            deployment(
                strategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"},
                }
            ),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0%: may not be 0 when "
                "`maxSurge` is 0"
            ],
        ),
        (
            deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x"}}),
            [
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: x: a valid percent string "
                "must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
                "used for validation is '[0-9]+%')"
            ],
        ),
        (
            deployment(progressDeadlineSeconds=5, minReadySeconds=10),
            [
                "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than "
                "minReadySeconds"
            ],
        ),
        (
            deployment(template=template(restartPolicy="Never")),
            [
                'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
                '"Always"'
            ],
        ),
        (
            deployment(
                template={
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c"}]},
                }
            ),
            ["spec.template.spec.containers[0].image: Required value"],
        ),
    ],
)
def test_deployment_validation(body: Obj, expected: list[str]) -> None:
    assert errors("apps", "Deployment", body) == expected


def test_deployment_selector_is_immutable() -> None:
    def change(d: Obj) -> None:
        d["spec"]["selector"] = {"matchLabels": {"app": "y"}}
        d["spec"]["template"]["metadata"]["labels"] = {"app": "y"}

    assert update_errors("apps", "Deployment", deployment(), change) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"y"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    ]


def test_replicaset_and_daemonset_validation() -> None:
    rs = {
        "metadata": {"name": "r"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template(), "replicas": -2},
    }
    assert errors("apps", "ReplicaSet", rs) == [
        "spec.replicas: Invalid value: -2: must be greater than or equal to 0"
    ]
    ds = {"metadata": {"name": "d"}, "spec": {"template": template()}}
    assert errors("apps", "DaemonSet", ds) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
        "`selector` does not match template `labels`"
    ]


def test_statefulset_update_rules() -> None:
    sts = {
        "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "x"}},
            "template": template(),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
        },
    }
    sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}
    ]
    assert errors("apps", "StatefulSet", sts) == []

    def scale(s: Obj) -> None:
        s["spec"]["replicas"] = 3

    def rename(s: Obj) -> None:
        s["spec"]["serviceName"] = "other"

    assert update_errors("apps", "StatefulSet", sts, scale) == []
    assert update_errors("apps", "StatefulSet", sts, rename) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]


# -- jobs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"metadata": {"name": "pi"}, "spec": {"template": template()}},
            [
                'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
                '"Never"'
            ],
        ),
        (
            job(template=template(restartPolicy="Sometimes")),
            [
                'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported '
                'values: "Always", "OnFailure", "Never"',
                'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported '
                'values: "OnFailure", "Never"',
            ],
        ),
        (
            job(parallelism=-1),
            ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            job(completionMode="Indexed", completions=None, parallelism=2),
            ["spec.completions: Required value: when completion mode is Indexed"],
        ),
        (
            # A null selector selects nothing, so the template does not match it either.
            job(manualSelector=True),
            [
                "spec.selector: Required value",
                'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
                "`selector` does not match template `labels`",
            ],
        ),
    ],
)
def test_job_validation(body: Obj, expected: list[str]) -> None:
    assert errors("batch", "Job", body) == expected


def test_job_updates() -> None:
    def parallelism(j: Obj) -> None:
        j["spec"]["parallelism"] = 4

    def completions(j: Obj) -> None:
        j["spec"]["completions"] = 4

    def image(j: Obj) -> None:
        j["spec"]["template"]["spec"]["containers"][0]["image"] = "other"

    assert update_errors("batch", "Job", job(), parallelism) == []
    assert update_errors("batch", "Job", job(), completions) == [
        "spec.completions: Invalid value: 4: field is immutable"
    ]
    (template_error,) = update_errors("batch", "Job", job(), image)
    assert template_error.startswith("spec.template: Invalid value: ")
    assert template_error.endswith(": field is immutable")


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("*/5 * * * *", None),
        ("0 0 1 jan-mar MON-FRI", None),
        ("@hourly", None),
        ("@every 1h30m", None),
        ("CRON_TZ=UTC 0 * * * *", None),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("@sometimes", "unrecognized descriptor: @sometimes"),
        ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
    ],
)
def test_cron_schedules(schedule: str, problem: str | None) -> None:
    assert schedule_error(schedule) == problem


def test_cronjob_validation() -> None:
    body = {
        "metadata": {"name": "tick"},
        "spec": {
            "schedule": "bad",
            "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}},
        },
    }
    assert errors("batch", "CronJob", body) == [
        'spec.schedule: Invalid value: "bad": expected exactly 5 fields, found 1: [bad]'
    ]
    body["spec"]["schedule"] = ""
    assert errors("batch", "CronJob", body) == ["spec.schedule: Required value"]
    body["spec"]["schedule"] = "TZ=UTC 0 * * * *"
    assert errors("batch", "CronJob", body) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, '
        "use timeZone field instead"
    ]


# -- services, config, secrets ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"selector": {"app": "x"}, "ports": [{"port": 80}]}, []),
        ({"selector": {"app": "x"}}, ["spec.ports: Required value"]),
        ({"clusterIP": "None"}, []),
        ({"type": "ExternalName", "externalName": "db.example.com"}, []),
        ({"type": "ExternalName"}, ["spec.externalName: Required value"]),
        (
            {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]},
            ['spec.ports[1].name: Duplicate value: "a"'],
        ),
        (
            {"ports": [{"port": 80}, {"port": 81}]},
            ["spec.ports[0].name: Required value", "spec.ports[1].name: Required value"],
        ),
        (
            # The target port defaults to the (invalid) port.
            {"ports": [{"port": 0}]},
            [
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, "
                "inclusive",
            ],
        ),
        (
            {"ports": [{"port": 80, "nodePort": 30000}]},
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
        ),
        (
            {"type": "Magic", "ports": [{"port": 80}]},
            [
                'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", '
                '"ExternalName", "LoadBalancer", "NodePort"'
            ],
        ),
    ],
)
def test_service_validation(spec: Obj, expected: list[str]) -> None:
    assert errors("", "Service", {"metadata": {"name": "svc"}, "spec": spec}) == expected


def test_service_selector_labels_are_checked() -> None:
    (message,) = errors(
        "", "Service", {"spec": {"selector": {"app": "a b"}, "ports": [{"port": 1}]}}
    )
    assert message.startswith('spec.selector: Invalid value: "a b": a valid label must be')


def test_config_map_validation_and_immutability() -> None:
    assert errors("", "ConfigMap", {"data": {"a": "1"}, "binaryData": {"a": "MQ=="}}) == [
        'data[a]: Invalid value: "a": duplicate of key present in binaryData'
    ]
    assert errors("", "ConfigMap", {"data": {"a": "x" * (1024 * 1024 + 1)}}) == [
        "Too long: may not be more than 1048576 bytes"
    ]
    old = {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True}

    def edit(c: Obj) -> None:
        c["data"]["a"] = "2"

    def release(c: Obj) -> None:
        c["immutable"] = False

    assert update_errors("", "ConfigMap", old, edit) == [
        "data: Forbidden: field is immutable when `immutable` is set"
    ]
    assert update_errors("", "ConfigMap", old, release) == [
        "immutable: Forbidden: field is immutable when `immutable` is set"
    ]


def test_secret_validation() -> None:
    assert errors("", "Secret", {"type": "kubernetes.io/tls", "data": {}}) == [
        "data[tls.crt]: Required value"
    ]
    assert errors("", "Secret", {"type": "kubernetes.io/basic-auth"}) == [
        "data[username]: Required value",
        "data[password]: Required value",
    ]

    def retype(s: Obj) -> None:
        s["type"] = "kubernetes.io/basic-auth"
        s["data"] = {"username": "dQ=="}

    assert update_errors("", "Secret", {"data": {"a": "eA=="}}, retype) == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable'
    ]


# -- leases and RBAC -------------------------------------------------------------------------


def test_lease_validation() -> None:
    lease = {"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}
    assert errors("coordination.k8s.io", "Lease", lease) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]


RBAC = "rbac.authorization.k8s.io"


def test_rbac_rules() -> None:
    role = {
        "rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/x"]},
        ]
    }
    assert errors(RBAC, "Role", role) == [
        "rules[0].verbs: Required value: verbs must contain at least one value",
        'rules[1].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply '
        "to non-resource URLs",
    ]
    assert errors(RBAC, "ClusterRole", {"rules": [{"verbs": ["get"]}]}) == [
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "rules[0].resources: Required value: resource rules must supply at least one resource",
    ]


def test_role_bindings() -> None:
    binding = {
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
    }
    assert errors(RBAC, "RoleBinding", binding) == []
    assert errors(RBAC, "ClusterRoleBinding", binding) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "subjects[0].namespace: Required value",
    ]

    def change(b: Obj) -> None:
        b["roleRef"]["name"] = "other"

    assert update_errors(RBAC, "RoleBinding", binding, change) == [
        'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", '
        'Kind:"Role", Name:"other"}: cannot change roleRef'
    ]


# -- CRDs and webhooks -----------------------------------------------------------------------


SVC = {"name": "webhook-service", "namespace": "system", "path": "/convert"}


def webhook_conversion(
    *, url: str | None = None, service: Obj | None = None, versions: list[str] | None = None
) -> Obj:
    client_config: Obj = {}
    if url is not None:
        client_config["url"] = url
    if service is not None:
        client_config["service"] = service
    return {
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": versions or ["v1"]},
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            crd(names={"plural": "gadgets", "kind": "Gadget"}),
            [
                'metadata.name: Invalid value: "widgets.example.com": must be '
                'spec.names.plural+"."+spec.group'
            ],
        ),
        (
            crd(scope="Global"),
            ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'],
        ),
        (
            crd(versions=[{"name": "v1", "served": True, "storage": False}]),
            [
                "spec.versions: Invalid value: "
                "[]apiextensions.CustomResourceDefinitionVersion{"
                'apiextensions.CustomResourceDefinitionVersion{Name:"v1", Served:true, '
                "Storage:false, ...}}: must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []string(nil): must have at least one "
                "stored version",
            ],
        ),
        (
            crd(group="example"),
            ['spec.group: Invalid value: "example": should be a domain with at least one dot'],
        ),
        # The conversion webhook's clientConfig is checked as an admission webhook's is.
        (
            crd(conversion=webhook_conversion(url="https://127.0.0.1:9443/convert", service=SVC)),
            [
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or "
                "service is required"
            ],
        ),
        (
            crd(conversion=webhook_conversion()),
            [
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or "
                "service is required"
            ],
        ),
        (
            crd(conversion=webhook_conversion(url="http://127.0.0.1:9443/convert?x=1")),
            [
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is "
                "the only allowed URL scheme; desired format: https://host[/path]",
                'spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query '
                "parameters are not permitted in the URL",
            ],
        ),
        (
            crd(conversion=webhook_conversion(service={"name": "hook", "port": 0})),
            [
                "spec.conversion.webhookClientConfig.service.namespace: Required value: "
                "service namespace is required",
                "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is "
                "not valid: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            crd(conversion=webhook_conversion(service=SVC, versions=["v2"])),
            [
                'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: '
                "must include at least one of v1, v1beta1"
            ],
        ),
        (
            crd(conversion={"strategy": "Webhook"}),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy "
                "is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ],
        ),
        (
            crd(
                conversion={
                    "strategy": "None",
                    "webhook": {"clientConfig": {"service": SVC}},
                }
            ),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when "
                "strategy is not set to Webhook"
            ],
        ),
    ],
)
def test_crd_validation(body: Obj, expected: list[str]) -> None:
    if body["spec"]["group"] != "example.com":
        body["metadata"]["name"] = f"widgets.{body['spec']['group']}"
    assert errors(EXT, "CustomResourceDefinition", body) == expected


def test_crd_plural_must_be_lowercase() -> None:
    body = crd(names={"plural": "Widgets", "kind": "Widget"})
    body["metadata"]["name"] = "Widgets.example.com"
    (message,) = errors(EXT, "CustomResourceDefinition", body)
    assert message.startswith('spec.names.plural: Invalid value: "Widgets": a DNS-1035 label')


def test_crd_group_is_immutable_and_versions_must_stay_stored() -> None:
    def regroup(c: Obj) -> None:
        c["spec"]["group"] = "example.org"
        c["metadata"]["name"] = "widgets.example.org"

    def drop_v1(c: Obj) -> None:
        c["spec"]["versions"] = [{"name": "v2", "served": True, "storage": True}]

    assert update_errors(EXT, "CustomResourceDefinition", crd(), regroup) == [
        'spec.group: Invalid value: "example.org": field is immutable'
    ]
    assert update_errors(EXT, "CustomResourceDefinition", crd(), drop_v1) == [
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was '
        "previously a storage version, and must remain in spec.versions until a storage "
        "migration ensures no data remains persisted in v1 and removes v1 from "
        "status.storedVersions"
    ]


ADM = "admissionregistration.k8s.io"


def webhook(**fields: Any) -> Obj:
    return {
        "name": "check.example.com",
        "clientConfig": {"service": {"name": "s", "namespace": "n"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


@pytest.mark.parametrize(
    ("hooks", "expected"),
    [
        ([webhook()], []),
        (
            [webhook(name="check")],
            [
                'webhooks[0].name: Invalid value: "check": should be a domain with at least three '
                "segments separated by dots"
            ],
        ),
        ([webhook(), webhook()], ['webhooks[1].name: Duplicate value: "check.example.com"']),
        (
            [webhook(sideEffects=None)],
            ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"],
        ),
        (
            [webhook(sideEffects="Some")],
            [
                'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
                '"NoneOnDryRun"'
            ],
        ),
        (
            [webhook(admissionReviewVersions=[])],
            [
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, "
                "v1beta1"
            ],
        ),
        (
            [webhook(admissionReviewVersions=["v2"])],
            [
                'webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include '
                "at least one of v1, v1beta1"
            ],
        ),
        (
            [
                webhook(
                    clientConfig={"url": "https://x", "service": {"name": "s", "namespace": "n"}}
                )
            ],
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"],
        ),
        (
            [webhook(clientConfig={"url": "http://x/p?q=1"})],
            [
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only "
                "allowed URL scheme; desired format: https://host[/path]",
                'webhooks[0].clientConfig.url: Invalid value: "q=1": query parameters are not '
                "permitted in the URL",
            ],
        ),
        (
            [webhook(timeoutSeconds=31)],
            [
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between "
                "1 and 30 seconds"
            ],
        ),
    ],
)
def test_webhook_validation(hooks: list[Obj], expected: list[str]) -> None:
    hooks = [{k: v for k, v in h.items() if v is not None} for h in hooks]
    assert errors(ADM, "ValidatingWebhookConfiguration", {"webhooks": hooks}) == expected
    assert errors(ADM, "MutatingWebhookConfiguration", {"webhooks": hooks}) == expected


def test_webhook_rules() -> None:
    hook = webhook(
        rules=[
            {
                "operations": ["*", "CREATE"],
                "apiGroups": [],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ]
    )
    assert errors(ADM, "ValidatingWebhookConfiguration", {"webhooks": [hook]}) == [
        'webhooks[0].rules[0].operations: Invalid value: []string{"*", "CREATE"}: if \'*\' is '
        "present, must not specify other operations",
        "webhooks[0].rules[0].apiGroups: Required value",
    ]


# -- helpers ---------------------------------------------------------------------------------


def test_semantic_equality_ignores_empty_values() -> None:
    assert semantic_equal({"a": None, "b": [], "c": {"d": {}}}, {})
    assert semantic_equal(None, {})
    assert not semantic_equal({"a": 1}, {"a": 2})
