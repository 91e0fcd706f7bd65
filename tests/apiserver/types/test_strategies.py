"""Per-kind strategies: the registry, create/update preparation, malformed objects."""

from __future__ import annotations

import copy

import pytest

from kubeforge._apiserver.types.defaults import DEFAULTERS
from kubeforge._apiserver.types.strategies import BuiltinStrategy, Strategy, strategy_for
from kubeforge._apiserver.types.validation.registry import VALIDATORS
from tests.support.builtin_objects import (
    EXT,
    UID,
    Obj,
    crd,
    created,
    deployment,
    errors,
    job,
    pod_spec,
    strategy,
    template,
)

# -- the registry ----------------------------------------------------------------------------


def test_strategies_are_cached_and_unknown_kinds_do_nothing() -> None:
    assert strategy_for("apps", "Deployment") is strategy_for("apps", "Deployment")
    crd_kind = strategy_for("example.com", "Widget")
    assert type(crd_kind) is Strategy
    obj = {"metadata": {"name": "w", "finalizers": ["custom"]}, "spec": {}}
    snapshot = copy.deepcopy(obj)
    crd_kind.default(obj)
    crd_kind.prepare_create(obj)
    crd_kind.prepare_update(obj, snapshot)
    crd_kind.prepare_status_update(obj, snapshot)
    assert obj == snapshot
    assert crd_kind.validate(obj) == [] and crd_kind.validate_update(obj, snapshot) == []
    assert not crd_kind.reports_required


def test_built_in_kinds_without_validators_still_check_finalizers() -> None:
    s = strategy_for("apps", "ControllerRevision")
    assert isinstance(s, BuiltinStrategy) and not s.reports_required
    obj = {"metadata": {"name": "x", "finalizers": ["mine"]}}
    assert [str(e) for e in s.validate(obj)] == [
        'metadata.finalizers: Invalid value: "mine": name is neither a standard finalizer name '
        "nor is it fully qualified"
    ]
    assert strategy_for("apps", "Deployment").reports_required


# -- pods ------------------------------------------------------------------------------------


def test_pod_create_adds_admission_defaults_and_status() -> None:
    pod = created("", "Pod", {"metadata": {"name": "p"}, "spec": pod_spec()})
    spec = pod["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert spec["enableServiceLinks"] is True
    assert spec["tolerations"] == [
        {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_pod_create_keeps_existing_tolerations_and_accounts() -> None:
    spec = pod_spec(
        serviceAccountName="robot",
        priorityClassName="system-node-critical",
        tolerations=[{"operator": "Exists"}],
    )
    pod = created("", "Pod", {"metadata": {"name": "p"}, "spec": spec})
    assert pod["spec"]["serviceAccount"] == "robot"
    assert pod["spec"]["priority"] == 2000001000
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_gated_pods_get_a_scheduled_condition() -> None:
    pod = created("", "Pod", {"spec": pod_spec(schedulingGates=[{"name": "wait"}])})
    (condition,) = pod["status"]["conditions"]
    assert condition["type"] == "PodScheduled" and condition["reason"] == "SchedulingGated"


def test_pod_status_update_keeps_the_qos_class() -> None:
    s = strategy("", "Pod")
    old = created("", "Pod", {"spec": pod_spec()})
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running"}
    s.prepare_status_update(new, old)
    assert new["status"] == {"phase": "Running", "qosClass": "BestEffort"}


# -- workloads -------------------------------------------------------------------------------


def test_pod_status_writes_validate_as_pod_status_updates_not_the_spec_again() -> None:
    pods = strategy_for("", "Pod")
    status_writes = pods.for_subresource("status")
    old = {
        "metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "abc"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": ""}]},
        "status": {"qosClass": "BestEffort"},
    }
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Running"
    # A spec the main resource's rules refuse (an empty image) is not a /status write's
    # business: such a write keeps the spec as it is stored.
    assert any(
        str(e).startswith("spec.containers[0].image") for e in pods.validate_update(new, old)
    )
    assert status_writes.validate_update(new, old) == []
    # What ValidatePodStatusUpdate does check.
    moved = copy.deepcopy(new)
    moved["spec"]["nodeName"] = "n2"
    unmirrored = copy.deepcopy(new)
    del unmirrored["metadata"]["annotations"]["kubernetes.io/config.mirror"]
    reclassed = copy.deepcopy(new)
    reclassed["status"]["qosClass"] = "Burstable"
    assert [e.field for e in status_writes.validate_update(moved, old)] == ["status.nodeName"]
    assert [e.field for e in status_writes.validate_update(unmirrored, old)] == [
        "metadata.annotations[kubernetes.io/config.mirror]"
    ]
    assert [e.field for e in status_writes.validate_update(reclassed, old)] == ["status.qosClass"]


def test_deployment_annotations_bump_the_generation() -> None:
    s = strategy("apps", "Deployment")
    old = created("apps", "Deployment", deployment())
    old["metadata"]["generation"] = 3
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = {"kubernetes.io/change-cause": "x"}
    s.prepare_update(new, old)
    assert new["metadata"]["generation"] == 4
    same = copy.deepcopy(old)
    s.prepare_update(same, old)
    assert same["metadata"]["generation"] == 3


def test_workload_status_starts_with_go_zero_values() -> None:
    rs = created(
        "apps",
        "ReplicaSet",
        {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template()}},
    )
    assert rs["status"] == {"replicas": 0}
    ds = created(
        "apps",
        "DaemonSet",
        {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template()}},
    )
    assert ds["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    assert created("apps", "Deployment", deployment())["status"] == {}
    svc = created("", "Service", {"spec": {"ports": [{"port": 80}]}})
    assert svc["status"] == {"loadBalancer": {}}
    s = strategy("apps", "ReplicaSet")
    new = copy.deepcopy(rs)
    new["status"] = {"readyReplicas": 1}
    s.prepare_status_update(new, rs)
    assert new["status"] == {"readyReplicas": 1, "replicas": 0}


# -- jobs ------------------------------------------------------------------------------------


def test_job_create_generates_selector_and_labels() -> None:
    obj = created("batch", "Job", job())
    generated = {
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "job-name": "pi",
    }
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "x", **generated}
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    # Read back, a Job without labels takes its template's.
    assert obj["metadata"]["labels"] == {"app": "x"}
    bare = created(
        "batch",
        "Job",
        {
            "metadata": {"name": "pi"},
            "spec": {"template": {"spec": pod_spec(restartPolicy="Never")}},
        },
    )
    assert bare["metadata"]["labels"] == generated
    assert obj["status"] == {}
    assert strategy("batch", "Job").validate(obj) == []


def test_manual_job_selectors_are_left_alone() -> None:
    body = job(manualSelector=True, selector={"matchLabels": {"app": "x"}})
    obj = created("batch", "Job", body)
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "x"}
    assert strategy("batch", "Job").validate(obj) == []


# -- services and namespaces -----------------------------------------------------------------


def test_service_update_keeps_allocated_values() -> None:
    s = strategy("", "Service")
    old = created(
        "", "Service", {"spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}}
    )
    old["spec"].update(clusterIP="10.0.0.7", clusterIPs=["10.0.0.7"])
    old["spec"]["ports"][0]["nodePort"] = 30080
    new = {
        "metadata": old["metadata"],
        "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]},
    }
    s.default(new)
    s.prepare_update(new, old)
    assert (new["spec"]["clusterIP"], new["spec"]["clusterIPs"]) == ("10.0.0.7", ["10.0.0.7"])
    assert new["spec"]["ports"][0]["nodePort"] == 30080
    new["spec"]["clusterIPs"] = ["10.0.0.8"]
    assert [str(e) for e in s.validate_update(new, old)] == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.0.0.8"}: may not change once set'
    ]


def test_namespace_create_and_update() -> None:
    s = strategy("", "Namespace")
    ns = created(
        "", "Namespace", {"metadata": {"name": "team"}, "spec": {"finalizers": ["example.com/x"]}}
    )
    assert ns["status"] == {"phase": "Active"}
    assert ns["spec"]["finalizers"] == ["example.com/x", "kubernetes"]
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    new = copy.deepcopy(ns)
    new["metadata"]["labels"] = {"team": "a"}
    s.prepare_update(new, ns)
    assert new["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "team"}
    assert errors(
        "", "Namespace", {"metadata": {"name": "x"}, "spec": {"finalizers": ["custom"]}}
    ) == [
        'spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name '
        "nor is it fully qualified"
    ]


def test_generated_namespace_names_are_labelled() -> None:
    ns = {"metadata": {"generateName": "ns-"}}
    strategy("", "Namespace").default(ns)
    ns["metadata"]["name"] = "ns-abcde"
    strategy("", "Namespace").prepare_create(ns)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "ns-abcde"}


# -- CRDs ------------------------------------------------------------------------------------


def test_crd_create_records_the_stored_version() -> None:
    obj = created(EXT, "CustomResourceDefinition", crd())
    assert obj["status"] == {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    assert strategy(EXT, "CustomResourceDefinition").validate(obj) == []


def test_crd_update_appends_a_new_storage_version() -> None:
    s = strategy(EXT, "CustomResourceDefinition")
    old = created(EXT, "CustomResourceDefinition", crd())
    new = copy.deepcopy(old)
    new["spec"]["versions"] = [
        {"name": "v1", "served": True, "storage": False},
        {"name": "v2", "served": True, "storage": True},
    ]
    new["status"] = old["status"]
    s.prepare_update(new, old)
    assert new["status"]["storedVersions"] == ["v1", "v2"]
    assert old["status"]["storedVersions"] == ["v1"]


# -- malformed objects -----------------------------------------------------------------------


MALFORMED: list[Obj] = [
    {},
    {"metadata": None, "spec": None, "status": None},
    {"spec": [], "status": "x", "data": [1], "rules": {}, "webhooks": {}},
    {"spec": {"containers": {}, "template": [], "selector": [], "ports": {"a": 1}, "versions": 3}},
    {
        "spec": {
            "containers": [None, {"name": {}, "ports": [None, {"name": []}], "env": {}}],
            "selector": {"matchLabels": [], "matchExpressions": [None, {"operator": None}]},
            "ports": [{"name": ["x"], "port": "80", "nodePort": [1]}],
            "versions": [{"name": {}, "storage": True}, None],
            "priorityClassName": [],
            "tolerations": {},
        },
        "status": {"storedVersions": [{}, None]},
        "webhooks": [None, {"clientConfig": [], "rules": [None]}],
    },
]


@pytest.mark.parametrize("body", MALFORMED)
@pytest.mark.parametrize("key", sorted(set(VALIDATORS) | set(DEFAULTERS)))
def test_strategies_never_raise_on_malformed_objects(key: tuple[str, str], body: Obj) -> None:
    s = strategy_for(*key)
    new, old = copy.deepcopy(body), copy.deepcopy(body)
    s.default(new)
    s.prepare_create(new)
    assert isinstance(s.validate(new), list)
    s.prepare_update(new, old)
    s.prepare_status_update(new, old)
    assert all(str(e) for e in s.validate_update(new, old))
