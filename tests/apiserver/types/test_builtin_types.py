"""The built-in kinds of Kubernetes 1.33 this server gained: CRUD, defaults, validation (as
kube-apiserver words it), printer columns, and the objects the server keeps for itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import HTTPClient

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


# (collection path, a valid object, an invalid object, the errors expected of it)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "/apis/storage.k8s.io/v1/csidrivers",
        {"metadata": {"name": "hostpath.csi.k8s.io"}, "spec": {}},
        {
            "metadata": {"name": "bad.csi.k8s.io"},
            "spec": {"fsGroupPolicy": "Sometimes", "volumeLifecycleModes": ["Forever"]},
        },
        [
            'spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", '
            '"None", "ReadWriteOnceWithFSType"',
            'spec.volumeLifecycleModes[0]: Unsupported value: "Forever": supported values: '
            '"Ephemeral", "Persistent"',
        ],
    ),
    (
        "/apis/storage.k8s.io/v1/csinodes",
        {
            "metadata": {"name": "node-1"},
            "spec": {"drivers": [{"name": "hostpath.csi.k8s.io", "nodeID": "node-1"}]},
        },
        {"metadata": {"name": "node-2"}, "spec": {"drivers": [{"name": "x.csi.io"}]}},
        ["spec.drivers[0].nodeID: Required value"],
    ),
    (
        "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
        {"metadata": {"name": "cap"}, "storageClassName": "standard", "capacity": "10Gi"},
        {"metadata": {"name": "nocap"}, "capacity": "1Gi"},
        ["storageClassName: Required value"],
    ),
    (
        "/apis/storage.k8s.io/v1/volumeattachments",
        {
            "metadata": {"name": "va"},
            "spec": {
                "attacher": "hostpath.csi.k8s.io",
                "nodeName": "node-1",
                "source": {"persistentVolumeName": "pv-1"},
            },
        },
        {
            "metadata": {"name": "va-bad"},
            "spec": {"attacher": "hostpath.csi.k8s.io", "nodeName": "node-1", "source": {}},
        },
        [
            "spec.source: Invalid value: {}: must specify exactly one of inlineVolumeSpec "
            "and persistentVolumeName"
        ],
    ),
    (
        "/apis/node.k8s.io/v1/runtimeclasses",
        {"metadata": {"name": "gvisor"}, "handler": "runsc"},
        {"metadata": {"name": "bad"}, "handler": "Not_A_Label"},
        [
            'handler: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of '
            "lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
            "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ],
    ),
    (
        "/apis/networking.k8s.io/v1/ipaddresses",
        {
            "metadata": {"name": "10.96.0.42"},
            "spec": {
                "parentRef": {
                    "group": "",
                    "resource": "services",
                    "namespace": "default",
                    "name": "web",
                }
            },
        },
        {"metadata": {"name": "2001:db8:0::1"}, "spec": {}},
        [
            'metadata.name: Invalid value: "2001:db8:0::1": must be a canonical format IP address',
            "spec.parentRef: Required value",
        ],
    ),
    (
        "/apis/networking.k8s.io/v1/servicecidrs",
        {"metadata": {"name": "extra"}, "spec": {"cidrs": ["10.100.0.0/16"]}},
        {"metadata": {"name": "two-v4"}, "spec": {"cidrs": ["10.1.0.0/16", "10.2.0.0/16"]}},
        [
            'spec.cidrs: Invalid value: {"cidrs":["10.1.0.0/16","10.2.0.0/16"]}: '
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and "
            "2001:db8::/64"
        ],
    ),
    (
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        {
            "metadata": {"name": "batch-work"},
            "spec": {
                "type": "Limited",
                "limited": {"limitResponse": {"type": "Queue", "queuing": {}}},
            },
        },
        {
            "metadata": {"name": "too-many-hands"},
            "spec": {
                "type": "Limited",
                "limited": {
                    "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 8}}
                },
            },
        },
        [
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater "
            "than queues (4)"
        ],
    ),
    (
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        {
            "metadata": {"name": "batch-jobs"},
            "spec": {
                "priorityLevelConfiguration": {"name": "batch-work"},
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": "batch"}}],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["batch"],
                                "resources": ["jobs"],
                                "namespaces": ["*"],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "metadata": {"name": "no-level"},
            "spec": {"priorityLevelConfiguration": {}, "matchingPrecedence": 1},
        },
        [
            "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
            "matchingPrecedence 1",
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        ],
    ),
    (
        "/apis/apiregistration.k8s.io/v1/apiservices",
        {
            "metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
                "insecureSkipTLSVerify": True,
                "service": {"namespace": "kube-system", "name": "metrics-server"},
            },
        },
        {
            "metadata": {"name": "v1.wrong.example.com"},
            "spec": {
                "group": "example.com",
                "version": "v1",
                "groupPriorityMinimum": 0,
                "versionPriority": 10,
            },
        },
        [
            'metadata.name: Invalid value: "v1.wrong.example.com": must be '
            '`spec.version+"."+spec.group`: "v1.example.com"',
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
        ],
    ),
]


@pytest.mark.parametrize(
    ("collection", "good", "bad", "errors"), CASES, ids=[c[0].rsplit("/", 1)[1] for c in CASES]
)
async def test_crud_and_validation(
    http: HTTPClient,
    collection: str,
    good: dict[str, Any],
    bad: dict[str, Any],
    errors: list[str],
) -> None:
    created = await http.post(collection, good)
    assert created.status == 201, created.body
    name = good["metadata"]["name"]
    assert created.json()["metadata"]["uid"]
    # Read again: the server's own controllers may have written status meanwhile.
    body = (await http.get(f"{collection}/{name}")).json()
    assert body["metadata"]["name"] == name

    listed = (await http.get(collection)).json()
    assert name in [item["metadata"]["name"] for item in listed["items"]]
    table = (await http.get(collection, headers=TABLE)).json()
    assert table["kind"] == "Table"
    assert name in [row["cells"][0] for row in table["rows"]]
    assert len(table["columnDefinitions"]) == len(table["rows"][0]["cells"])

    body["metadata"].setdefault("labels", {})["touched"] = "yes"
    updated = await http.put(f"{collection}/{name}", body)
    assert updated.status == 200, updated.body
    assert updated.json()["metadata"]["labels"] == {"touched": "yes"}

    refused = await http.post(collection, bad)
    assert refused.status == 422, refused.body
    status = refused.json()
    assert status["reason"] == "Invalid"
    messages = [f"{c['field']}: {c['message']}" for c in status["details"]["causes"]]
    assert messages == errors

    deleted = await http.delete(f"{collection}/{name}")
    assert deleted.status == 200
    assert (await http.get(f"{collection}/{name}")).status == 404


async def test_csi_driver_defaults_and_immutable_fields(http: HTTPClient) -> None:
    path = "/apis/storage.k8s.io/v1/csidrivers"
    created = (await http.post(path, {"metadata": {"name": "d.csi.io"}, "spec": {}})).json()
    assert created["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    created["spec"]["attachRequired"] = False
    created["spec"]["podInfoOnMount"] = True  # mutable
    reply = await http.put(f"{path}/d.csi.io", created)
    assert reply.status == 422
    causes = reply.json()["details"]["causes"]
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.attachedRequired", "Invalid value: false: field is immutable")
    ]


async def test_volume_attachment_spec_is_immutable_and_status_is_separate(
    http: HTTPClient,
) -> None:
    path = "/apis/storage.k8s.io/v1/volumeattachments"
    obj = {
        "metadata": {"name": "va"},
        "spec": {"attacher": "a.csi.io", "nodeName": "n1", "source": {"persistentVolumeName": "p"}},
        "status": {"attached": True},
    }
    created = (await http.post(path, obj)).json()
    assert "attached" not in created.get("status", {})  # status is not taken on create
    created["status"] = {"attached": True}
    status = await http.put(f"{path}/va/status", created)
    assert status.status == 200 and status.json()["status"]["attached"] is True
    row = (await http.get(f"{path}/va", headers=TABLE)).json()["rows"][0]["cells"]
    assert row[:5] == ["va", "a.csi.io", "p", "n1", True]
    moved = status.json()
    moved["spec"]["nodeName"] = "n2"
    reply = await http.put(f"{path}/va", moved)
    assert reply.status == 422
    assert reply.json()["details"]["causes"][0]["field"] == "spec"


async def test_ip_address_parent_is_immutable(http: HTTPClient) -> None:
    path = "/apis/networking.k8s.io/v1/ipaddresses"
    ref = {"group": "", "resource": "services", "namespace": "default", "name": "a"}
    obj = {"metadata": {"name": "2001:db8::7"}, "spec": {"parentRef": ref}}
    created = (await http.post(path, obj)).json()
    row = (await http.get(f"{path}/2001:db8::7", headers=TABLE)).json()["rows"][0]["cells"]
    assert row[:2] == ["2001:db8::7", "services/default/a"]
    created["spec"]["parentRef"]["name"] = "b"
    reply = await http.put(f"{path}/2001:db8::7", created)
    assert reply.status == 422
    assert reply.json()["details"]["causes"][0]["field"] == "spec.parentRef"


async def test_service_cidr_may_become_dual_stack_only(http: HTTPClient) -> None:
    path = "/apis/networking.k8s.io/v1/servicecidrs"
    obj = {"metadata": {"name": "more"}, "spec": {"cidrs": ["10.200.0.0/16"]}}
    created = (await http.post(path, obj)).json()
    created["spec"]["cidrs"] = ["10.201.0.0/16"]
    changed = await http.put(f"{path}/more", created)
    assert changed.status == 422
    assert changed.json()["details"]["causes"][0]["field"] == "spec.cidrs[0]"
    created["spec"]["cidrs"] = ["10.200.0.0/16", "fd00:10::/108"]
    assert (await http.put(f"{path}/more", created)).status == 200


async def test_default_service_cidr_is_ready(http: HTTPClient) -> None:
    reply = (await http.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes")).json()
    assert reply["spec"]["cidrs"] == [http.server.config.service_cidr]
    [ready] = reply["status"]["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")


async def test_runtime_class_handler_is_immutable(http: HTTPClient) -> None:
    path = "/apis/node.k8s.io/v1/runtimeclasses"
    created = (await http.post(path, {"metadata": {"name": "rc"}, "handler": "runc"})).json()
    created["handler"] = "crun"
    reply = await http.put(f"{path}/rc", created)
    assert reply.status == 422
    assert reply.json()["details"]["causes"][0]["message"] == (
        'Invalid value: "crun": field is immutable'
    )


async def test_priority_level_defaults_and_printer(http: HTTPClient) -> None:
    path = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
    obj = {
        "metadata": {"name": "queued"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
    }
    created = (await http.post(path, obj)).json()
    assert created["spec"]["limited"] == {
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
        "limitResponse": {
            "type": "Queue",
            "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50},
        },
    }
    rows = (await http.get(path, headers=TABLE)).json()["rows"]
    cells = {row["cells"][0]: row["cells"][1:-1] for row in rows}
    assert cells["queued"] == ["Limited", 30, 64, 8, 50]
    assert cells["exempt"] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    assert cells["catch-all"] == ["Limited", 5, "<none>", "<none>", "<none>"]


async def test_flow_schemas_are_marked_dangling_until_their_level_exists(
    http: HTTPClient,
) -> None:
    schemas = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
    levels = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
    rule = {
        "subjects": [{"kind": "Group", "group": {"name": "team"}}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
    }
    schema = {
        "metadata": {"name": "team"},
        "spec": {"priorityLevelConfiguration": {"name": "team-level"}, "rules": [rule]},
    }
    created = (await http.post(schemas, schema)).json()
    assert created["spec"]["matchingPrecedence"] == 1000

    async def missing_pl() -> str:
        rows = (await http.get(f"{schemas}/team", headers=TABLE)).json()["rows"]
        return str(rows[0]["cells"][5])

    assert await missing_pl() == "True"
    level = {
        "metadata": {"name": "team-level"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
    }
    assert (await http.post(levels, level)).status == 201
    assert await missing_pl() == "False"
    exempt = (await http.get(f"{schemas}/exempt", headers=TABLE)).json()["rows"][0]["cells"]
    assert exempt[:4] == ["exempt", "exempt", 1, "<none>"]


async def test_local_api_services_list_every_served_group_version(http: HTTPClient) -> None:
    path = "/apis/apiregistration.k8s.io/v1/apiservices"
    items = {o["metadata"]["name"]: o for o in (await http.get(path)).json()["items"]}
    served = {("", "v1")}
    for group in (await http.get("/apis")).json()["groups"]:
        served |= {(group["name"], v["version"]) for v in group["versions"]}
    served.discard(("apiregistration.k8s.io", "v1"))
    assert set(items) == {f"{v}.{g}" for g, v in served}
    core = items["v1."]
    assert core["spec"] == {
        "group": "",
        "version": "v1",
        "groupPriorityMinimum": 18000,
        "versionPriority": 1,
    }
    assert core["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    [available] = core["status"]["conditions"]
    assert (available["type"], available["status"], available["reason"]) == (
        "Available",
        "True",
        "Local",
    )
    assert items["v2.autoscaling"]["spec"]["versionPriority"] == 30
    rows = (await http.get(path, headers=TABLE)).json()["rows"]
    assert [r["cells"][:3] for r in rows if r["cells"][0] == "v1.apps"] == [
        ["v1.apps", "Local", "True"]
    ]


async def test_api_services_follow_crds_and_report_missing_services(http: HTTPClient) -> None:
    from tests.support.crds import widget_crd

    assert (
        await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
    ).status == 201
    path = "/apis/apiregistration.k8s.io/v1/apiservices"
    crd_service = (await http.get(f"{path}/v1.example.com")).json()
    assert crd_service["spec"]["groupPriorityMinimum"] == 1000
    assert crd_service["metadata"]["labels"] == {
        "kube-aggregator.kubernetes.io/automanaged": "true"
    }

    remote = {
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {
            "group": "metrics.k8s.io",
            "version": "v1beta1",
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "service": {"namespace": "kube-system", "name": "metrics-server"},
        },
    }
    created = (await http.post(path, remote)).json()
    assert created["spec"]["service"]["port"] == 443
    row = (await http.get(f"{path}/v1beta1.metrics.k8s.io", headers=TABLE)).json()["rows"][0]
    assert row["cells"][:3] == [
        "v1beta1.metrics.k8s.io",
        "kube-system/metrics-server",
        "False (ServiceNotFound)",
    ]

    await http.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    gone = await http.get(f"{path}/v1.example.com")
    assert gone.status == 404


async def test_component_statuses_are_read_only(http: HTTPClient) -> None:
    listed = (await http.get("/api/v1/componentstatuses")).json()
    assert listed["kind"] == "ComponentStatusList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["etcd-0"]
    one = (await http.get("/api/v1/componentstatuses/etcd-0")).json()
    assert one["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    row = (await http.get("/api/v1/componentstatuses", headers=TABLE)).json()["rows"][0]
    assert row["cells"] == ["etcd-0", "Healthy", "ok", ""]
    assert (await http.get("/api/v1/componentstatuses/scheduler")).status == 404
    assert (await http.post("/api/v1/componentstatuses", one)).status == 405
    assert (await http.delete("/api/v1/componentstatuses/etcd-0")).status == 405
    selected = await http.get("/api/v1/componentstatuses?fieldSelector=metadata.name%3Dnope")
    assert selected.json()["items"] == []


async def test_autoscaling_v1_and_v2_share_objects(http: HTTPClient) -> None:
    v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    hpa = {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": ref, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
    }
    created = (await http.post(v1, hpa)).json()
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"] == {
        "scaleTargetRef": ref,
        "minReplicas": 1,
        "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 60,
    }
    as_v2 = (await http.get(f"{v2}/web")).json()
    assert as_v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        }
    ]
    # A metric v1 cannot show travels in an annotation, and back.
    memory = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}},
    }
    as_v2["spec"]["metrics"].append(memory)
    assert (await http.put(f"{v2}/web", as_v2)).status == 200
    read_v1 = (await http.get(f"{v1}/web")).json()
    assert read_v1["spec"]["targetCPUUtilizationPercentage"] == 60
    annotation = read_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
    assert '"targetAverageValue":"500Mi"' in annotation
    read_v1["spec"]["maxReplicas"] = 7
    assert (await http.put(f"{v1}/web", read_v1)).status == 200
    again = (await http.get(f"{v2}/web")).json()
    assert again["spec"]["maxReplicas"] == 7
    assert memory in again["spec"]["metrics"]
    assert "annotations" not in again["metadata"]
    row = (await http.get(f"{v1}/web", headers=TABLE)).json()["rows"][0]["cells"]
    assert row[:2] == ["web", "Deployment/web"]


async def test_a_dev_cluster_reports_its_controllers_healthy() -> None:
    from kubeforge._cluster.devcluster import DevCluster

    async with DevCluster() as cluster:
        client = cluster.client
        assert client is not None
        listed = await client.list("v1/ComponentStatus")
        health = {
            item["metadata"]["name"]: item["conditions"][0]["status"] for item in listed.items
        }
        assert health == {"controller-manager": "True", "etcd-0": "True", "scheduler": "True"}


HPAS_V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
HPAS_V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _causes(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["field"], c["type"]) for c in body["details"]["causes"]}


async def test_horizontal_pod_autoscalers_are_validated_as_kube_validates_them(
    http: HTTPClient,
) -> None:
    # pkg/apis/autoscaling/validation/validation.go, on whichever version a client writes.
    bad = {
        "metadata": {"name": "bad"},
        "spec": {
            "scaleTargetRef": {"kind": "", "name": "a/b"},
            "minReplicas": 3,
            "maxReplicas": 2,
            "metrics": [
                {"type": "Pods", "resource": {"name": "cpu"}},
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 0},
                    },
                },
            ],
            "behavior": {
                "scaleUp": {
                    "stabilizationWindowSeconds": 3601,
                    "selectPolicy": "Most",
                    "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}],
                },
                "scaleDown": {"policies": [{"type": "Percent", "value": 10, "periodSeconds": 0}]},
            },
        },
    }
    response = await http.post(HPAS_V2, bad)
    assert response.status == 422
    assert _causes(response.json()) == {
        ("spec.maxReplicas", "FieldValueInvalid"),
        ("spec.scaleTargetRef.kind", "FieldValueRequired"),
        ("spec.scaleTargetRef.name", "FieldValueInvalid"),
        ("spec.metrics[0].pods", "FieldValueRequired"),
        ("spec.metrics[0].resource.target.averageUtilization", "FieldValueRequired"),
        ("spec.metrics[0].resource.target.type", "FieldValueRequired"),
        ("spec.metrics[0].resource.target.type", "FieldValueInvalid"),
        ("spec.metrics[1].resource.target.averageUtilization", "FieldValueInvalid"),
        ("spec.behavior.scaleUp.stabilizationWindowSeconds", "FieldValueInvalid"),
        ("spec.behavior.scaleUp.selectPolicy", "FieldValueNotSupported"),
        ("spec.behavior.scaleUp.policies[0].value", "FieldValueInvalid"),
        ("spec.behavior.scaleUp.policies[0].periodSeconds", "FieldValueInvalid"),
        ("spec.behavior.scaleDown.policies[0].periodSeconds", "FieldValueInvalid"),
    }
    # minReplicas 0 is the alpha scale-to-zero feature, off as in kube-apiserver's defaults.
    zero = {
        "metadata": {"name": "zero"},
        "spec": {"scaleTargetRef": WEB, "minReplicas": 0, "maxReplicas": 2},
    }
    response = await http.post(HPAS_V1, zero)
    assert response.status == 422
    assert _causes(response.json()) == {
        ("spec.minReplicas", "FieldValueInvalid"),
        ("spec.metrics", "FieldValueForbidden"),
    }
    assert (await http.get(f"{HPAS_V2}/bad")).status == 404


async def test_an_explicitly_empty_list_of_scaling_policies_is_refused_not_defaulted(
    http: HTTPClient,
) -> None:
    # Defaulting fills scaleUp's policies only when they are absent (a nil check); an empty
    # list reaches validation, which asks for at least one, as kube-apiserver answers.
    empty = {
        "metadata": {"name": "empty"},
        "spec": {
            "scaleTargetRef": WEB,
            "maxReplicas": 2,
            "behavior": {"scaleUp": {"policies": []}, "scaleDown": {}},
        },
    }
    response = await http.post(HPAS_V2, empty)
    assert response.status == 422
    assert _causes(response.json()) == {("spec.behavior.scaleUp.policies", "FieldValueRequired")}
    assert "must specify at least one Policy" in response.json()["message"]
    # Absent, they are defaulted (scaleDown's too, its rules given without policies).
    del empty["spec"]["behavior"]["scaleUp"]["policies"]
    response = await http.post(HPAS_V2, empty)
    assert response.status == 201
    behavior = response.json()["spec"]["behavior"]
    assert [p["type"] for p in behavior["scaleUp"]["policies"]] == ["Pods", "Percent"]
    assert [p["type"] for p in behavior["scaleDown"]["policies"]] == ["Percent"]


async def test_an_autoscaling_v1_annotation_the_go_types_cannot_read_is_ignored(
    http: HTTPClient,
) -> None:
    # pkg/apis/autoscaling/v1/conversion.go reads each annotation into its Go type and drops
    # it when that fails, rather than storing what no Go client could read.
    behavior = {
        "ScaleUp": {
            "Policies": [{"Type": "Pods", "Value": 99999999999999999999999, "PeriodSeconds": 60}]
        }
    }
    metrics = [{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "lots"}}]
    annotations = {
        "autoscaling.alpha.kubernetes.io/behavior": json.dumps(behavior),
        "autoscaling.alpha.kubernetes.io/metrics": json.dumps(metrics),
    }
    hpa = {
        "metadata": {"name": "odd", "annotations": annotations},
        "spec": {"scaleTargetRef": WEB, "maxReplicas": 3},
    }
    assert (await http.post(HPAS_V1, hpa)).status == 201
    stored = (await http.get(f"{HPAS_V2}/odd")).json()
    assert "behavior" not in stored["spec"]
    assert [m["resource"]["name"] for m in stored["spec"]["metrics"]] == ["cpu"]
    # One that reads (Go matches field names case-insensitively) is converted and checked.
    behavior = {"scaleup": {"policies": [{"type": "Pods", "value": 4, "periodseconds": 60}]}}
    annotations["autoscaling.alpha.kubernetes.io/behavior"] = json.dumps(behavior)
    del annotations["autoscaling.alpha.kubernetes.io/metrics"]
    hpa["metadata"]["name"] = "fine"
    assert (await http.post(HPAS_V1, hpa)).status == 201
    stored = (await http.get(f"{HPAS_V2}/fine")).json()
    assert stored["spec"]["behavior"]["scaleUp"]["policies"] == [
        {"type": "Pods", "value": 4, "periodSeconds": 60}
    ]
    behavior["scaleup"]["policies"][0]["value"] = 0
    annotations["autoscaling.alpha.kubernetes.io/behavior"] = json.dumps(behavior)
    hpa["metadata"]["name"] = "zero-value"
    response = await http.post(HPAS_V1, hpa)
    assert response.status == 422
    assert _causes(response.json()) == {
        ("spec.behavior.scaleUp.policies[0].value", "FieldValueInvalid")
    }
