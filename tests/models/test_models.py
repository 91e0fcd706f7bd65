"""The generated built-in models: freshness, names, types, round trips and typed client use."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from kubeforge import Client, models
from kubeforge._api.machinery import timestamps
from kubeforge._api.meta import LabelSelector, ObjectMeta, ResourceInfo
from kubeforge._apiserver.types.builtin_types import builtin_types
from kubeforge.models import (
    ConfigMap,
    Container,
    ContainerPort,
    Deployment,
    DeploymentSpec,
    EnvVar,
    Job,
    JobSpec,
    JobStatus,
    Pod,
    PodSpec,
    PodTemplateSpec,
    Service,
    ServicePort,
    ServiceSpec,
    apiextensions_v1,
    apps_v1,
    autoscaling_v2,
    coordination_v1,
    core_v1,
    discovery_v1,
    events_v1,
    networking_v1,
    policy_v1,
    rbac_v1,
    storage_v1,
)
from kubeforge.models._base import BuiltinModel
from tests.support import ROOT, load_tool

MODELS_DIR = ROOT / "src" / "kubeforge" / "models"


GEN = load_tool("gen_models")
DEFS: dict[str, Any] = orjson.loads(GEN.definitions_path().read_bytes())["$defs"]


def all_classes() -> Iterator[type[BuiltinModel]]:
    for name in models.MODULES:
        module = importlib.import_module(f"kubeforge.models.{name}")
        for attr in module.__all__:
            cls = getattr(module, attr)
            if isinstance(cls, type) and issubclass(cls, BuiltinModel):
                yield cls


# Generation --------------------------------------------------------------------------------


def test_committed_modules_equal_a_fresh_generation() -> None:
    files = GEN.generate()
    assert list(GEN.stale(files, MODELS_DIR)) == []
    written_by_hand = {"_base.py"}
    assert sorted(files) == sorted(
        p.name for p in MODELS_DIR.glob("*.py") if p.name not in written_by_hand
    )


def test_generation_is_deterministic() -> None:
    assert GEN.generate() == GEN.generate()


@pytest.mark.parametrize(
    ("json_name", "attr"),
    [
        ("podIPs", "pod_ips"),
        ("externalIPs", "external_ips"),
        ("hostIPC", "host_ipc"),
        ("openAPIV3Schema", "open_apiv3_schema"),
        ("nonResourceURLs", "non_resource_urls"),
        ("serverAddressByClientCIDRs", "server_address_by_client_cidrs"),
        ("fieldsV1", "fields_v1"),
        ("x-kubernetes-preserve-unknown-fields", "x_kubernetes_preserve_unknown_fields"),
        ("$ref", "ref"),
        ("$schema", "schema_"),
        ("from", "from_"),
        ("continue", "continue_"),
        ("not", "not_"),
        ("Port", "port"),
    ],
)
def test_attribute_names(json_name: str, attr: str) -> None:
    assert GEN.attribute_name(json_name, GEN.MODULE_NAMES) == attr


def test_every_class_names_its_definition_and_lives_in_its_group_version_module() -> None:
    prefixes = {gv.module: gv.prefix for gv in GEN.GROUP_VERSIONS}
    count = 0
    for cls in all_classes():
        definition = cls.__kubeforge_definition__
        assert definition in DEFS
        assert definition.rpartition(".")[2] == cls.__name__
        assert definition.rpartition(".")[0] == prefixes[cls.__module__.rpartition(".")[2]]
        count += 1
    assert count > 400


def test_field_docstrings_are_the_definition_descriptions() -> None:
    tree = ast.parse((MODELS_DIR / "core_v1.py").read_text(encoding="utf-8"))
    container = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Container"
    )
    docs: dict[str, str] = {}
    for field, doc in zip(container.body, container.body[1:], strict=False):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
        ):
            docs[field.target.id] = " ".join(str(doc.value.value).split())
    expected = DEFS["io.k8s.api.core.v1.Container"]["properties"]
    assert docs["name"] == " ".join(expected["name"]["description"].split())
    assert docs["image"] == " ".join(expected["image"]["description"].split())
    assert ast.get_docstring(container) == DEFS["io.k8s.api.core.v1.Container"]["description"]


# Names and scopes --------------------------------------------------------------------------


def test_served_kinds_carry_their_resource_info() -> None:
    served = {t.definition: t for t in builtin_types()}
    checked = 0
    for cls in all_classes():
        rtype = served.get(cls.__kubeforge_definition__)
        info = cls.__dict__.get("__kubeforge__")
        if rtype is None:
            continue
        assert isinstance(info, ResourceInfo), cls
        assert (info.gvk.group, info.gvk.version, info.gvk.kind) == (
            rtype.group,
            rtype.version,
            rtype.kind,
        )
        assert (info.plural, info.namespaced) == (rtype.plural, rtype.namespaced)
        assert info.short_names == rtype.short_names
        checked += 1
    assert checked >= 40


def test_resource_info_of_common_kinds() -> None:
    assert Pod.__kubeforge__.plural == "pods"
    assert Pod.__kubeforge__.namespaced
    assert not core_v1.Namespace.__kubeforge__.namespaced
    assert not rbac_v1.ClusterRole.__kubeforge__.namespaced
    scale = Deployment.__kubeforge__.scale
    assert scale is not None and scale.label_selector_path == ".status.selector"
    assert not ConfigMap.__kubeforge__.status_subresource
    assert storage_v1.CSIDriver.__kubeforge__.plural == "csidrivers"
    assert not storage_v1.CSIDriver.__kubeforge__.namespaced
    assert "__kubeforge__" not in core_v1.PodList.__dict__
    assert "__kubeforge__" not in core_v1.Container.__dict__


# Types -------------------------------------------------------------------------------------


def test_required_fields_are_required() -> None:
    with pytest.raises(ValidationError):
        Container.model_validate({"image": "nginx"})
    with pytest.raises(ValidationError):
        PodSpec.model_validate({})
    assert Container(name="web").name == "web"


def test_required_fields_servers_leave_out_are_optional() -> None:
    event = events_v1.Event.from_dict({"metadata": {"name": "e"}, "reason": "Started"})
    assert event.event_time is None
    empty = discovery_v1.EndpointSlice.from_dict({"addressType": "IPv4", "endpoints": None})
    assert empty.endpoints is None


def test_int_or_string_and_quantities_keep_their_json_type() -> None:
    port = ServicePort.from_dict({"port": 80, "targetPort": "http"})
    assert port.target_port == "http"
    assert ServicePort.from_dict({"port": 80, "targetPort": 8080}).target_port == 8080
    resources = {"limits": {"cpu": 1, "memory": "128Mi"}, "requests": {"cpu": 0.5}}
    decoded = core_v1.ResourceRequirements.from_dict(resources)
    assert decoded.limits == {"cpu": 1, "memory": "128Mi"}
    assert orjson.dumps(decoded.to_dict()) == orjson.dumps(resources)


TIME_REFS = {
    f"#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.{name}": name for name in ("Time", "MicroTime")
}


def test_every_time_is_an_aware_datetime() -> None:
    """Each property that is a metav1.Time or MicroTime upstream is typed Time / MicroTime."""
    checked = 0
    for module in sorted(models.MODULES):
        mod = importlib.import_module(f"kubeforge.models.{module}")
        for attr in mod.__all__:
            cls = getattr(mod, attr)
            if not (isinstance(cls, type) and issubclass(cls, BuiltinModel)):
                continue
            properties = DEFS[cls.__kubeforge_definition__].get("properties") or {}
            for field_name, field in cls.model_fields.items():
                ref = properties[field.alias or field_name].get("$ref")
                if ref in TIME_REFS:
                    expected = getattr(timestamps, TIME_REFS[ref])
                    annotation = field.rebuild_annotation()
                    assert annotation in (expected, expected | None), (cls.__name__, field_name)
                    checked += 1
    assert checked > 40
    assert ObjectMeta.model_fields["creation_timestamp"].annotation == timestamps.Time | None


def test_times_are_written_back_as_kubernetes_writes_them() -> None:
    lease = {
        "spec": {
            "holderIdentity": "a",
            "acquireTime": "2025-01-01T00:00:00.000000Z",
            "renewTime": "2025-01-01T00:00:05.120000Z",
        }
    }
    decoded = coordination_v1.Lease.from_dict(lease)
    assert decoded.spec is not None
    assert decoded.spec.renew_time == datetime(2025, 1, 1, 0, 0, 5, 120000, tzinfo=UTC)
    assert decoded.to_dict()["spec"] == lease["spec"]
    status = {
        "startTime": "2025-01-01T01:02:03Z",
        "completionTime": "2025-01-01T04:02:03+02:00",  # another zone: written in UTC
        "conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": "2025-01-01T02:02:03Z"}
        ],
    }
    job = JobStatus.from_dict(status)
    assert job.start_time is not None and job.completion_time is not None
    assert job.completion_time - job.start_time == timedelta(hours=1)
    assert job.to_dict() == {**status, "completionTime": "2025-01-01T02:02:03Z"}
    # Built in Python: an aware datetime, in whole seconds for a Time, micro for a MicroTime.
    moment = datetime(2025, 1, 1, 1, 2, 3, 456789, tzinfo=timezone(timedelta(hours=-5)))
    assert JobStatus(start_time=moment).to_dict() == {"startTime": "2025-01-01T06:02:03Z"}
    spec = coordination_v1.LeaseSpec(renew_time=moment)
    assert spec.to_dict() == {"renewTime": "2025-01-01T06:02:03.456789Z"}
    assert spec.model_dump()["renew_time"] is moment
    with pytest.raises(ValidationError, match="time zone"):
        JobStatus(start_time=datetime(2025, 1, 1))
    with pytest.raises(ValidationError, match="RFC 3339"):
        JobStatus.from_dict({"startTime": "yesterday"})


def test_numbers_keep_integers() -> None:
    props = apiextensions_v1.JSONSchemaProps.from_dict({"type": "integer", "minimum": 1})
    assert props.minimum == 1 and isinstance(props.minimum, int)
    assert orjson.dumps(props.to_dict()) == b'{"minimum":1,"type":"integer"}'


def test_renamed_fields_keep_their_json_names() -> None:
    rule = networking_v1.NetworkPolicyIngressRule(
        from_=[networking_v1.NetworkPolicyPeer(ip_block=networking_v1.IPBlock(cidr="10.0.0.0/8"))]
    )
    assert rule.to_dict() == {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}
    block = networking_v1.IPBlock.from_dict({"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]})
    assert block.except_ == ["10.1.0.0/16"]
    spec = ServiceSpec.from_dict({"externalIPs": ["1.2.3.4"], "clusterIPs": ["10.0.0.1"]})
    assert spec.external_ips == ["1.2.3.4"] and spec.cluster_ips == ["10.0.0.1"]
    assert ServiceSpec(external_ips=["1.2.3.4"]).to_dict() == {"externalIPs": ["1.2.3.4"]}
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "not": {"required": ["a"]},
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"a": {"$ref": "#/definitions/a", "x-kubernetes-int-or-string": True}},
    }
    props = apiextensions_v1.JSONSchemaProps.from_dict(schema)
    assert props.x_kubernetes_preserve_unknown_fields is True
    assert props.not_ is not None and props.not_.required == ["a"]
    assert props.properties is not None and props.properties["a"].ref == "#/definitions/a"
    assert props.to_dict() == schema
    endpoint = core_v1.DaemonEndpoint.from_dict({"Port": 10250})
    assert endpoint.port == 10250 and endpoint.to_dict() == {"Port": 10250}


def test_json_schema_props_unions() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "list": {"type": "array", "items": {"type": "string"}},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    }
    props = apiextensions_v1.JSONSchemaProps.from_dict(schema)
    assert props.additional_properties is False
    assert props.properties is not None
    items = props.properties["list"].items
    assert isinstance(items, apiextensions_v1.JSONSchemaProps) and items.type == "string"
    assert props.to_dict() == schema


def test_unknown_fields_survive() -> None:
    data = {"name": "web", "image": "nginx", "futureField": {"x": 1}}
    assert Container.from_dict(data).to_dict() == data


def test_explicit_nulls_survive() -> None:
    # Real servers write these nulls; a round trip must not change the object.
    condition = {"type": "Ready", "status": "True", "lastProbeTime": None}
    assert core_v1.PodCondition.from_dict(condition).to_dict() == condition
    template = {"metadata": {"creationTimestamp": None, "labels": {"a": "b"}}}
    assert PodTemplateSpec.from_dict(template).to_dict() == template


def test_new_objects_serialize_complete() -> None:
    deployment = Deployment(
        metadata=ObjectMeta(name="web"),
        spec=DeploymentSpec(
            selector=LabelSelector(match_labels={"app": "web"}),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels={"app": "web"}),
                spec=PodSpec(
                    containers=[
                        Container(
                            name="web",
                            image="nginx",
                            ports=[ContainerPort(container_port=80)],
                            env=[EnvVar(name="A", value="1")],
                        )
                    ]
                ),
            ),
        ),
    )
    assert deployment.metadata.name == "web"
    assert deployment.to_dict() == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}],
                        }
                    ]
                },
            },
        },
    }
    assert Pod().to_dict() == {"apiVersion": "v1", "kind": "Pod", "metadata": {}}
    event = events_v1.Event().to_dict()
    assert event == {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {}}
    assert core_v1.PodList(items=[]).to_dict() == {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [],
    }


def test_filling_in_the_default_metadata_is_written() -> None:
    pod = Pod(spec=PodSpec(containers=[Container(name="c")]))
    pod.metadata.name = "web"
    pod.metadata.labels = {"app": "web"}
    expected = {"name": "web", "labels": {"app": "web"}}
    assert pod.to_dict()["metadata"] == expected
    listed = core_v1.PodList(items=[pod]).to_dict()
    assert listed["items"][0]["metadata"] == expected
    assert orjson.loads(pod.model_dump_json(by_alias=True, exclude_unset=True))["metadata"] == (
        expected
    )


# Every class against a sample that sets every property ------------------------------------

SAMPLE_SPECIAL: dict[str, Any] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "250m",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "25%",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"apiVersion": "v1", "kind": "Pod"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "2025-01-02T03:04:05Z",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "2025-01-02T03:04:05.000000Z",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"f:metadata": {".": {}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {"op": "add"},
    # A condition's status is one of True, False and Unknown (kubeforge.Condition says so).
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": {
        "type": "Ready",
        "status": "True",
        "observedGeneration": 3,
        "lastTransitionTime": "2025-01-02T03:04:05Z",
        "reason": "Text",
        "message": "text",
    },
    f"{GEN.APIEXT}.JSON": {"any": ["json", 1, None]},
    f"{GEN.APIEXT}.JSONSchemaPropsOrArray": {"type": "string"},
    f"{GEN.APIEXT}.JSONSchemaPropsOrBool": False,
    f"{GEN.APIEXT}.JSONSchemaPropsOrStringArray": ["a", "b"],
}


def sample(schema: dict[str, Any], depth: int) -> Any:
    """A JSON value for a property schema (objects a few levels deep)."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        if name in SAMPLE_SPECIAL:
            return SAMPLE_SPECIAL[name]
        return sample_object(name, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    kinds = schema.get("type")
    kind = next(k for k in kinds if k != "null") if isinstance(kinds, list) else kinds
    if kind == "string":
        return "text"
    if kind == "integer":
        return 3
    if kind == "boolean":
        return True
    if kind == "number":
        return 1.5
    if kind == "array":
        return [sample(schema["items"], depth)]
    if "additionalProperties" in schema:
        return {"key": sample(schema["additionalProperties"], depth)}
    return {"free": {"form": [1, "two"]}}


def sample_object(name: str, depth: int = 0) -> dict[str, Any]:
    definition = DEFS[name]
    required = set(definition.get("required") or ())
    out: dict[str, Any] = {}
    for prop, schema in (definition.get("properties") or {}).items():
        nested = schema.get("items") or schema.get("additionalProperties") or schema
        if depth > 3 and prop not in required and "$ref" in nested:
            continue  # keep recursive types (JSONSchemaProps) finite
        out[prop] = sample(schema, depth)
    return out


@pytest.mark.parametrize("module", sorted(models.MODULES))
def test_every_class_round_trips_a_sample_of_every_property(module: str) -> None:
    mod = importlib.import_module(f"kubeforge.models.{module}")
    for attr in mod.__all__:
        cls = getattr(mod, attr)
        if not (isinstance(cls, type) and issubclass(cls, BuiltinModel)):
            continue
        data = sample_object(cls.__kubeforge_definition__)
        decoded = cls.from_dict(data)
        assert decoded.to_dict() == data, cls.__name__
        # Every JSON property is a declared field (nothing fell through to the extras).
        assert not decoded.model_extra, (cls.__name__, decoded.model_extra)


# The package -------------------------------------------------------------------------------


def test_package_loads_modules_on_first_use() -> None:
    code = (
        "import sys, kubeforge.models as m\n"
        "assert not [k for k in sys.modules if k.startswith('kubeforge.models.')], 'eager'\n"
        "m.Pod\n"
        "assert 'kubeforge.models.core_v1' in sys.modules\n"
        "assert 'kubeforge.models.apps_v1' not in sys.modules\n"
        "assert 'kubeforge.apiserver' not in sys.modules\n"
        "m.apps_v1.Deployment\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_package_exports_resolve() -> None:
    for name in models.__all__:
        assert getattr(models, name) is not None
    assert models.Pod is core_v1.Pod
    assert models.Deployment is apps_v1.Deployment
    assert models.ObjectMeta is ObjectMeta
    assert "Pod" in dir(models)
    with pytest.raises(AttributeError):
        _ = models.NoSuchKind


def test_generated_code_imports_only_the_api_package() -> None:
    for path in MODELS_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")
                if top[0] == "kubeforge":
                    assert top[1] in ("_api", "models"), (path.name, node.module)


# Real objects from the embedded API server -------------------------------------------------


def web_deployment() -> Deployment:
    labels = {"app": "web"}
    return Deployment(
        metadata=ObjectMeta(name="web", labels=labels),
        spec=DeploymentSpec(
            replicas=2,
            selector=LabelSelector(match_labels=labels),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels),
                spec=PodSpec(
                    containers=[
                        Container(
                            name="web",
                            image="nginx:1.27",
                            ports=[ContainerPort(container_port=80, name="http")],
                            resources=core_v1.ResourceRequirements(
                                limits={"cpu": "500m", "memory": "128Mi"}
                            ),
                            readiness_probe=core_v1.Probe(
                                http_get=core_v1.HTTPGetAction(path="/", port="http")
                            ),
                        )
                    ]
                ),
            ),
        ),
    )


async def test_typed_objects_through_the_client(api: Client) -> None:
    created = await api.create(web_deployment(), namespace="default")
    assert isinstance(created, Deployment)
    assert created.metadata.uid
    assert created.spec is not None and created.spec.strategy is not None
    rolling = created.spec.strategy.rolling_update
    assert rolling is not None and rolling.max_surge == "25%"
    fetched = await api.get(Deployment, "web", namespace="default")
    assert isinstance(fetched, Deployment)
    assert fetched.metadata.resource_version == created.metadata.resource_version
    listed = await api.list(Deployment, namespace="default")
    assert [d.metadata.name for d in listed] == ["web"]
    assert all(isinstance(d, Deployment) for d in listed)


SERVER_OBJECTS: list[dict[str, Any]] = [
    web_deployment().to_dict(),
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sh", "-c", "sleep 1000"],
                    "env": [
                        {"name": "A", "value": "1"},
                        {
                            "name": "NODE",
                            "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                        },
                    ],
                    "livenessProbe": {"tcpSocket": {"port": 8080}},
                    "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}],
                }
            ],
            "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
    },
    {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    },
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"}},
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres"}]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    },
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": "50%"},
    },
    {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
        },
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny"},
        "spec": {
            "podSelector": {},
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}],
        },
    },
]

CLASSES: dict[str, type[BuiltinModel]] = {
    "Deployment": Deployment,
    "Pod": Pod,
    "Service": Service,
    "Job": Job,
    "ConfigMap": ConfigMap,
    "Role": rbac_v1.Role,
    "NetworkPolicy": networking_v1.NetworkPolicy,
    "StatefulSet": apps_v1.StatefulSet,
    "PodDisruptionBudget": policy_v1.PodDisruptionBudget,
    "HorizontalPodAutoscaler": autoscaling_v2.HorizontalPodAutoscaler,
}


async def test_objects_from_the_server_round_trip_exactly(api: Client) -> None:
    for obj in SERVER_OBJECTS:
        returned = await api.create(obj, namespace="default")
        cls = CLASSES[returned["kind"]]
        assert cls.from_dict(returned).to_dict() == returned, returned["kind"]
    job = await api.get(Job, "once", namespace="default")
    assert isinstance(job, Job) and isinstance(job.spec, JobSpec)
    assert job.spec.template.spec is not None
    assert job.spec.template.spec.restart_policy == "Never"
    namespace = await api.get(core_v1.Namespace, "default")
    assert namespace.to_dict() == await api.get("v1/Namespace", "default")
    service = await api.get(Service, "web", namespace="default")
    assert service.spec is not None and service.spec.cluster_ip
    assert service.spec.ports == [ServicePort(port=80, target_port="http", protocol="TCP")]
