"""Built-in schemas: version lookup, decode errors, field errors and undeclared fields."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from kubeforge._api.machinery.fielderror import FieldErrorType
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas, DecodeError

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
POD = "io.k8s.api.core.v1.Pod"
CONFIGMAP = "io.k8s.api.core.v1.ConfigMap"
SECRET = "io.k8s.api.core.v1.Secret"
CRD = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"


@pytest.fixture(scope="module")
def schemas() -> BuiltinSchemas:
    return BuiltinSchemas.for_version("1.33")


def deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "replicas": 2,
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
                        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                        "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                    }
                ]
            },
        },
    }
    base.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": base,
    }


def container(obj: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return c


def decode_error(schemas: BuiltinSchemas, definition: str, obj: Any) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        schemas.validate(definition, obj)
    return info.value


# Versions ---------------------------------------------------------------------------------


def test_versions_share_one_instance(schemas: BuiltinSchemas) -> None:
    assert BuiltinSchemas.for_version("v1.33.4") is schemas
    assert BuiltinSchemas.for_version("1.33.0") is schemas
    assert schemas.kubernetes_version == "v1.33.0"
    assert schemas.directory.name == "v1.33.0-local"


def test_unshipped_versions_use_the_nearest_one() -> None:
    assert BuiltinSchemas.for_version("1.99").kubernetes_version == "v1.37.0"
    assert BuiltinSchemas.for_version("1.2").kubernetes_version == "v1.25.0"


def test_rejects_non_versions() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes"):
        BuiltinSchemas.for_version("2.0")


def test_definitions_load_fast_and_lose_the_type_enums() -> None:
    fresh = BuiltinSchemas(BuiltinSchemas.for_version("1.33").directory, "v1.33.0")
    start = time.perf_counter()
    defs = fresh.defs
    assert time.perf_counter() - start < 0.5
    assert len(defs) > 600
    props = defs[DEPLOYMENT]["properties"]
    assert "enum" not in props["apiVersion"]
    assert "enum" not in props["kind"]


def test_views_and_kind_lookup(schemas: BuiltinSchemas) -> None:
    assert schemas.definition_for_kind("apps", "v1", "Deployment") == DEPLOYMENT
    assert schemas.definition_for_kind("autoscaling", "v1", "Scale") == (
        "io.k8s.api.autoscaling.v1.Scale"
    )
    assert schemas.view_for_kind("apps", "v1", "Nope") is None
    view = schemas.view_for_kind("apps", "v1", "Deployment")
    assert view is not None
    replicas = view.field("spec")
    assert replicas is not None
    assert replicas.field("replicas") is not None
    assert schemas.view(POD).field("spec") is not None
    assert DEPLOYMENT in schemas
    assert "io.k8s.Nope" not in schemas


# Decoding errors --------------------------------------------------------------------------


def test_valid_objects_have_no_errors(schemas: BuiltinSchemas) -> None:
    assert schemas.validate(DEPLOYMENT, deployment()) == []
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    assert schemas.validate(CONFIGMAP, cm) == []


def test_wrong_scalar_type_is_a_decode_error(schemas: BuiltinSchemas) -> None:
    err = decode_error(schemas, DEPLOYMENT, deployment(replicas="three"))
    assert err.field == "spec.replicas"
    assert err.detail == (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
        "of type int32"
    )
    assert err.status_message("Deployment", "v1") == (
        'Deployment in version "v1" cannot be handled as a Deployment: ' + err.detail
    )


def test_decode_error_paths_drop_indices_for_go_but_keep_them_for_fields(
    schemas: BuiltinSchemas,
) -> None:
    obj = deployment()
    container(obj)["env"][0]["value"] = True
    err = decode_error(schemas, DEPLOYMENT, obj)
    assert err.field == "spec.template.spec.containers[0].env[0].value"
    assert err.detail == (
        "json: cannot unmarshal bool into Go struct field "
        "EnvVar.spec.template.spec.containers.env.value of type string"
    )


def test_decode_errors_name_go_types(schemas: BuiltinSchemas) -> None:
    obj = deployment()
    container(obj)["args"] = [1]
    assert decode_error(schemas, DEPLOYMENT, obj).detail.endswith(
        "Container.spec.template.spec.containers.args of type string"
    )
    obj = deployment(template="x")
    assert decode_error(schemas, DEPLOYMENT, obj).detail == (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.template "
        "of type v1.PodTemplateSpec"
    )
    obj = deployment()
    container(obj)["ports"][0]["containerPort"] = 1.5
    assert "cannot unmarshal number 1.5 into" in decode_error(schemas, DEPLOYMENT, obj).detail


def test_int_or_string_and_quantity(schemas: BuiltinSchemas) -> None:
    obj = deployment()
    container(obj)["livenessProbe"]["httpGet"]["port"] = True
    err = decode_error(schemas, DEPLOYMENT, obj)
    assert err.field == "spec.template.spec.containers[0].livenessProbe.httpGet.port"
    assert err.detail.endswith("of type intstr.IntOrString")
    container(obj)["livenessProbe"]["httpGet"]["port"] = 8080
    assert schemas.validate(DEPLOYMENT, obj) == []

    container(obj)["resources"]["limits"]["cpu"] = "lots"
    err = decode_error(schemas, DEPLOYMENT, obj)
    assert err.field == "spec.template.spec.containers[0].resources.limits[cpu]"
    assert err.detail.startswith("quantities must match the regular expression")
    container(obj)["resources"]["limits"]["cpu"] = 2
    assert schemas.validate(DEPLOYMENT, obj) == []


def test_bytes_and_times_must_parse(schemas: BuiltinSchemas) -> None:
    assert schemas.validate(SECRET, {"data": {"a": "aGVsbG8="}}) == []
    err = decode_error(schemas, SECRET, {"data": {"a": "he!!o"}})
    assert (err.field, err.detail) == ("data[a]", "illegal base64 data at input byte 2")
    err = decode_error(schemas, SECRET, {"metadata": {"creationTimestamp": "yesterday"}})
    assert err.field == "metadata.creationTimestamp"
    assert err.detail.startswith('parsing time "yesterday"')
    stamp = {"metadata": {"creationTimestamp": "2024-05-01T10:00:00Z"}}
    assert schemas.validate(SECRET, stamp) == []


# Field errors ---------------------------------------------------------------------------


def test_missing_required_fields(schemas: BuiltinSchemas) -> None:
    obj = deployment()
    del obj["spec"]["selector"]
    del container(obj)["name"]
    errors = schemas.validate(DEPLOYMENT, obj)
    assert sorted(str(e) for e in errors) == [
        "spec.selector: Required value",
        "spec.template.spec.containers[0].name: Required value",
    ]
    assert {e.type for e in errors} == {FieldErrorType.REQUIRED}


def test_null_required_field_is_required_not_a_decode_error(schemas: BuiltinSchemas) -> None:
    obj = deployment()
    container(obj)["name"] = None
    assert [str(e) for e in schemas.validate(DEPLOYMENT, obj)] == [
        "spec.template.spec.containers[0].name: Required value"
    ]


def test_required_fields_the_server_does_not_insist_on(schemas: BuiltinSchemas) -> None:
    status = {"status": {"conditions": [{"reason": "x"}]}}
    assert schemas.validate(DEPLOYMENT, {**deployment(), **status}) == []
    token: dict[str, Any] = {"spec": {}}
    assert schemas.validate("io.k8s.api.authentication.v1.TokenRequest", token) == []
    # A required integer decodes to 0; the type's own validation decides about it.
    revision = {"metadata": {"name": "r"}}
    assert schemas.validate("io.k8s.api.apps.v1.ControllerRevision", revision) == []


def test_unknown_definitions_have_nothing_to_check(schemas: BuiltinSchemas) -> None:
    assert schemas.validate("io.k8s.api.Nope", {"spec": 1}) == []
    assert schemas.unknown_fields("io.k8s.api.Nope", {"spec": 1}) == []


# Undeclared fields --------------------------------------------------------------------------


def test_unknown_fields_in_document_order(schemas: BuiltinSchemas) -> None:
    obj = deployment(zeta=1)
    obj["metadata"]["colour"] = "red"
    container(obj)["imagePolicy"] = "x"
    container(obj)["ports"][0]["hostPortt"] = 1
    obj["extra"] = True
    assert schemas.unknown_fields(DEPLOYMENT, obj) == [
        "metadata.colour",
        "spec.template.spec.containers[0].ports[0].hostPortt",
        "spec.template.spec.containers[0].imagePolicy",
        "spec.zeta",
        "extra",
    ]


def test_maps_and_free_form_fields_accept_any_keys(schemas: BuiltinSchemas) -> None:
    cm = {"metadata": {"labels": {"any": "x"}, "annotations": {"b": "y"}}, "data": {"k": "v"}}
    assert schemas.unknown_fields(CONFIGMAP, cm) == []
    revision = {
        "data": {"anything": {"nested": [1, 2]}},
        "metadata": {"managedFields": [{"fieldsV1": {"f:data": {"f:k": {}}}, "bogus": 1}]},
    }
    assert schemas.unknown_fields("io.k8s.api.apps.v1.ControllerRevision", revision) == [
        "metadata.managedFields[0].bogus"
    ]


def crd(schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    **version,
                }
            ],
        },
    }


def test_crd_schemas_are_walked_recursively(schemas: BuiltinSchemas) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-validations": [{"rule": "self.a > 0"}],
                "default": {"free": {"form": 1}},
                "properties": {
                    "a": {"type": "integer", "typo": 1},
                    "b": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}]},
                },
            }
        },
    }
    obj = crd(schema, subresources={"status": {"extra": 1}})
    root = "spec.versions[0]"
    schema_path = f"{root}.schema.openAPIV3Schema.properties.spec.properties.a.typo"
    assert schemas.unknown_fields(CRD, obj) == [schema_path, f"{root}.subresources.status.extra"]
    assert schemas.validate(CRD, obj) == []


def test_drop_unknown_fields_edits_in_place(schemas: BuiltinSchemas) -> None:
    obj = deployment(zeta=1)
    container(obj)["imagePolicy"] = "x"
    expected = copy.deepcopy(deployment())
    assert schemas.drop_unknown_fields(DEPLOYMENT, obj) == [
        "spec.template.spec.containers[0].imagePolicy",
        "spec.zeta",
    ]
    assert obj == expected
    assert schemas.unknown_fields(DEPLOYMENT, obj) == []


def test_after_a_merge_patch_only_what_it_brought_is_looked_at(schemas: BuiltinSchemas) -> None:
    # The result of a merge patch of a stored object: beneath the maps the patch names, the
    # values are the stored ones, which decoding already left as they are.
    patch: dict[str, Any] = {"spec": {"replicas": 3, "zeta": 1, "strategy": {"omega": 2}}}
    obj = deployment(replicas=3, zeta=1, strategy={"omega": 2, "type": "Recreate"})
    container(obj)["imagePolicy"] = "stored, so not looked at"
    obj["metadata"]["labels"] = {}  # likewise: not dropped
    assert schemas.drop_unknown_fields(DEPLOYMENT, obj, True, patched=patch) == [
        "spec.zeta",
        "spec.strategy.omega",
    ]
    assert obj["spec"]["strategy"] == {"type": "Recreate"}
    assert container(obj)["imagePolicy"] == "stored, so not looked at"
    assert obj["metadata"]["labels"] == {}


def test_a_value_a_merge_patch_puts_in_place_is_looked_at_whole(schemas: BuiltinSchemas) -> None:
    # Lists and anything else but a map replace what was stored.
    containers = [{"name": "web", "image": "nginx", "imagePolicy": "x", "env": []}]
    patch: dict[str, Any] = {"spec": {"template": {"spec": {"containers": containers}}}}
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"] = containers
    assert schemas.drop_unknown_fields(DEPLOYMENT, obj, True, patched=patch) == [
        "spec.template.spec.containers[0].imagePolicy"
    ]
    assert containers == [{"name": "web", "image": "nginx"}]


def test_values_of_the_wrong_type_are_left_to_validation(schemas: BuiltinSchemas) -> None:
    assert schemas.unknown_fields(DEPLOYMENT, deployment(template="x")) == []
    assert schemas.unknown_fields(DEPLOYMENT, {"spec": None, "metadata": []}) == []


def test_checks_are_cheap_on_a_small_object(schemas: BuiltinSchemas) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default", "labels": {"app": "web"}},
        "data": {f"key{i}": "v" * 40 for i in range(20)},
    }
    schemas.validate(CONFIGMAP, cm)
    start = time.perf_counter()
    for _ in range(1000):
        schemas.validate(CONFIGMAP, cm)
        schemas.unknown_fields(CONFIGMAP, cm)
    # About 10 microseconds per round on a laptop; the bound only catches pathologies.
    assert time.perf_counter() - start < 1.0
