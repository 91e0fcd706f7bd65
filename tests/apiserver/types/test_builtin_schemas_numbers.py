"""Numbers in request bodies, read as kube-apiserver reads them: Go's typed decoding for
built-in kinds (an integer field takes only an integer literal in its range), the
unstructured converter for strategic merge patches and applies (a whole-number float
becomes the integer), and custom objects stored as Go encodes them (`2.0` becomes `2`)."""

from __future__ import annotations

from typing import Any

import orjson

from kubeforge.testing import eventually
from tests.fuzz.kinds import CRD
from tests.support import HTTPClient

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
GADGETS = "/apis/fuzz.kubeforge.dev/v1/namespaces/default/gadgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def deployment_text(name: str, replicas: str = "1", port: str = "80") -> bytes:
    labels = '{"app":"web"}'
    return (
        f'{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}"}},'
        f'"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{labels}}},'
        f'"template":{{"metadata":{{"labels":{labels}}},"spec":{{"containers":'
        f'[{{"name":"c","image":"nginx","ports":[{{"containerPort":{port}}}]}}]}}}}}}}}'
    ).encode()


async def test_integer_fields_take_integer_literals_only(http: HTTPClient) -> None:
    for replicas, port, shown, field, go_type in (
        ("1.0", "80", "1.0", "DeploymentSpec.spec.replicas", "int32"),
        ("1e30", "80", "1e30", "DeploymentSpec.spec.replicas", "int32"),
        ("2147483648", "80", "2147483648", "DeploymentSpec.spec.replicas", "int32"),
        (
            "1",
            "80.0",
            "80.0",
            "ContainerPort.spec.template.spec.containers.ports.containerPort",
            "int32",
        ),
    ):
        reply = await http.request("POST", DEPLOYMENTS, raw=deployment_text("web", replicas, port))
        assert reply.status == 400, reply.body
        assert reply.json()["message"] == (
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            f"unmarshal number {shown} into Go struct field {field} of type {go_type}"
        )
    assert (await http.get(f"{DEPLOYMENTS}/web")).status == 404
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "nginx"}],
            "securityContext": {"supplementalGroups": [1, 2.5]},
        },
    }
    reply = await http.post("/api/v1/namespaces/default/pods", pod)
    assert reply.status == 400
    assert "number 2.5 into Go struct field PodSecurityContext" in reply.json()["message"]


async def test_yaml_whole_numbers_are_integers(http: HTTPClient) -> None:
    # YAML is converted to JSON first, where Go writes 2.0 as 2.
    text = deployment_text("web", "2.0").decode()
    reply = await http.request(
        "POST", DEPLOYMENTS, raw=text.encode(), content_type="application/yaml"
    )
    assert reply.status == 201, reply.body
    assert reply.json()["spec"]["replicas"] == 2


async def test_patches_read_numbers_as_their_kind_of_patch(http: HTTPClient) -> None:
    created = await http.request("POST", DEPLOYMENTS, raw=deployment_text("web"))
    assert created.status == 201
    rv = created.json()["metadata"]["resourceVersion"]
    merge = await http.request(
        "PATCH",
        f"{DEPLOYMENTS}/web",
        raw=b'{"spec":{"replicas":2.0}}',
        content_type="application/merge-patch+json",
    )
    assert merge.status == 400 and "number 2.0" in merge.json()["message"]
    json_patch = await http.request(
        "PATCH",
        f"{DEPLOYMENTS}/web",
        raw=b'[{"op":"replace","path":"/spec/replicas","value":3.0}]',
        content_type="application/json-patch+json",
    )
    assert json_patch.status == 400
    assert (await http.get(f"{DEPLOYMENTS}/web")).json()["metadata"]["resourceVersion"] == rv
    # A strategic merge patch and an apply are converted from maps: 2.0 is 2.
    strategic = await http.request(
        "PATCH",
        f"{DEPLOYMENTS}/web",
        raw=b'{"spec":{"replicas":2.0}}',
        content_type="application/strategic-merge-patch+json",
    )
    assert strategic.status == 200, strategic.body
    assert strategic.json()["spec"]["replicas"] == 2
    too_big = await http.request(
        "PATCH",
        f"{DEPLOYMENTS}/web",
        raw=b'{"spec":{"replicas":2147483648}}',
        content_type="application/strategic-merge-patch+json",
    )
    assert too_big.status == 400
    assert "number 2147483648" in too_big.json()["message"]
    applied = await http.request(
        "PATCH",
        f"{DEPLOYMENTS}/web?fieldManager=test&force=true",
        raw=deployment_text("web", "4.0"),
        content_type="application/apply-patch+yaml",
    )
    assert applied.status == 200, applied.body
    assert applied.json()["spec"]["replicas"] == 4
    stored = (await http.get(f"{DEPLOYMENTS}/web")).json()
    assert stored["spec"]["replicas"] == 4
    port = stored["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert type(port) is int


async def install_gadgets(http: HTTPClient) -> None:
    assert (await http.post(CRDS, CRD)).status == 201

    async def served() -> bool:
        return (await http.get(GADGETS)).status == 200

    await eventually(served)


def gadget(name: str, spec: str) -> bytes:
    return (
        f'{{"apiVersion":"fuzz.kubeforge.dev/v1","kind":"Gadget","metadata":{{"name":"{name}"}},'
        f'"spec":{spec}}}'
    ).encode()


async def test_custom_objects_hold_whole_numbers_as_integers(http: HTTPClient) -> None:
    await install_gadgets(http)
    reply = await http.request(
        "POST", GADGETS, raw=gadget("g", '{"size":3.0,"ratio":1.0,"free":{"x":[2.0,2.5]}}')
    )
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert (spec["size"], spec["ratio"], spec["free"]) == (3, 1, {"x": [2, 2.5]})
    got = await http.get(f"{GADGETS}/g")
    assert b'"size":3,' in got.body and b'"x":[2,2.5]' in got.body


async def test_a_float_beyond_exact_integers_is_no_integer(http: HTTPClient) -> None:
    # kube-openapi counts a float as an integer only within +-(2**53 - 1).
    await install_gadgets(http)
    for size in ("1e30", "9007199254740993.0"):
        reply = await http.request("POST", GADGETS, raw=gadget("g", f'{{"size":{size}}}'))
        assert reply.status == 422, reply.body
        causes = reply.json()["details"]["causes"]
        assert {
            "type": "FieldValueTypeInvalid",
            "message": 'Invalid value: "number": spec.size in body must be of type integer: '
            '"number"',
            "field": "spec.size",
        } in causes


async def test_embedded_resources_metadata_is_object_meta(http: HTTPClient) -> None:
    await install_gadgets(http)
    template: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"}
    bad = dict(template, metadata={"labels": "oops"})
    reply = await http.request(
        "POST", GADGETS, raw=gadget("g", orjson.dumps({"size": 1, "template": bad}).decode())
    )
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: spec.template.metadata: '
        'Invalid value: map[string]interface {}{"labels":"oops"}: json: cannot unmarshal '
        "string into Go struct field ObjectMeta.labels of type map[string]string"
    )
    assert (await http.get(f"{GADGETS}/g")).status == 404
    odd = dict(template, metadata={"name": "x", "color": "red", "uid": None, "labels": {"a": "b"}})
    created = await http.request(
        "POST", GADGETS, raw=gadget("g", orjson.dumps({"size": 1, "template": odd}).decode())
    )
    assert created.status == 201, created.body
    # What apiextensions-apiserver writes back: the typed ObjectMeta, unknown fields gone.
    assert created.json()["spec"]["template"]["metadata"] == {
        "name": "x",
        "labels": {"a": "b"},
        "creationTimestamp": None,
    }


async def test_scale_replicas_are_an_int32(http: HTTPClient) -> None:
    assert (await http.request("POST", DEPLOYMENTS, raw=deployment_text("web"))).status == 201
    scale = f"{DEPLOYMENTS}/web/scale"
    for replicas in (2.0, 2**31):
        body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}}
        reply = await http.put(scale, dict(body, spec={"replicas": replicas}))
        assert reply.status == 400, reply.body
        assert "Go struct field ScaleSpec.spec.replicas of type int32" in reply.json()["message"]
    assert (await http.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 1
    strategic = await http.patch(
        scale, {"spec": {"replicas": 3.0}}, "application/strategic-merge-patch+json"
    )
    assert strategic.status == 200, strategic.body
    assert (await http.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 3


def type_cause(field: str, expected: str) -> dict[str, str]:
    return {
        "type": "FieldValueTypeInvalid",
        "message": f'Invalid value: "number": {field} in body must be of type {expected}: "number"',
        "field": field,
    }


async def test_numbers_where_a_custom_object_expects_none_are_a_422(http: HTTPClient) -> None:
    # Unstructured JSON reads any number it can: an integer beyond int64 as the float64 it
    # rounds to. Where the schema wants a string, that is a validation error, not a 500.
    await install_gadgets(http)
    for tags in ("[99999999999999999999999]", '["a",18446744073709551615]', "[-0.0]"):
        reply = await http.request("POST", GADGETS, raw=gadget("g", f'{{"size":1,"tags":{tags}}}'))
        assert reply.status == 422, reply.body
        field = "spec.tags[1]" if tags.startswith('["a"') else "spec.tags[0]"
        assert type_cause(field, "string") in reply.json()["details"]["causes"]
    assert (await http.get(f"{GADGETS}/g")).status == 404
    created = await http.request("POST", GADGETS, raw=gadget("g", '{"size":1,"tags":["a"]}'))
    assert created.status == 201, created.body
    rv = created.json()["metadata"]["resourceVersion"]
    for value in ("1e+308", "99999999999999999999999", "-1e308", "4.9e-324"):
        patch = f'[{{"op":"replace","path":"/spec/tags/0","value":{value}}}]'.encode()
        reply = await http.request(
            "PATCH", f"{GADGETS}/g", raw=patch, content_type="application/json-patch+json"
        )
        assert reply.status == 422, reply.body
        assert type_cause("spec.tags[0]", "string") in reply.json()["details"]["causes"]
    for content_type in ("application/merge-patch+json", "application/apply-patch+yaml"):
        body = gadget("g", '{"size":1,"tags":[1e+308]}')
        query = "?fieldManager=t&force=true" if "apply" in content_type else ""
        reply = await http.request(
            "PATCH", f"{GADGETS}/g{query}", raw=body, content_type=content_type
        )
        assert reply.status == 422, reply.body
    got = (await http.get(f"{GADGETS}/g")).json()
    assert got["metadata"]["resourceVersion"] == rv and got["spec"]["tags"] == ["a"]


async def test_an_integer_beyond_int64_is_a_float_in_a_custom_object(
    http: HTTPClient,
) -> None:
    # sigs.k8s.io/json's PreserveInts keeps an integer only when it fits an int64.
    await install_gadgets(http)
    for field, expected in (("maxReplicas", "integer"), ("port", "integer,string")):
        for value in ("9223372036854775808", "18446744073709551615", "-9223372036854775809"):
            body = gadget("g", f'{{"size":1,"{field}":{value}}}')
            reply = await http.request("POST", GADGETS, raw=body)
            assert reply.status == 422, reply.body
            assert type_cause(f"spec.{field}", expected) in reply.json()["details"]["causes"]
    widest = gadget(
        "g", '{"size":1,"maxReplicas":9223372036854775807,"free":{"n":18446744073709551615}}'
    )
    reply = await http.request("POST", GADGETS, raw=widest)
    assert reply.status == 201, reply.body
    spec = (await http.get(f"{GADGETS}/g")).json()["spec"]
    assert spec["maxReplicas"] == 2**63 - 1
    assert spec["free"]["n"] == float(2**64) and type(spec["free"]["n"]) is float
