"""Reading webhooks' answers as kube-apiserver reads them, and matching rules."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.matching import Rule
from kubeforge._apiserver.admission.review import read_answer
from kubeforge._apiserver.request.user import ADMIN
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.validation.admissionregistration import validate_validating_webhooks
from kubeforge._apiserver.webhookclient.client import CallFailed, Reply

UID = "0b6d1b6f-2b1c-4e0b-9d0e-5f1c6f0c0a11"


def reply(
    response: Any, status: int = 200, content_type: str | None = "application/json", **review: Any
) -> Reply:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", **review}
    if response is not None:
        body["response"] = response
    return Reply(status, content_type, orjson.dumps(body))


def failure(r: Reply, mutating: bool = True, version: str = "v1") -> str:
    with pytest.raises(CallFailed) as caught:
        read_answer(r, version, UID, mutating)
    return str(caught.value)


def test_a_patch_comes_with_its_type() -> None:
    patch = base64.b64encode(b'[{"op":"add","path":"/a","value":1}]').decode()
    answer = read_answer(
        reply({"uid": UID, "allowed": True, "patch": patch, "patchType": "JSONPatch"}),
        "v1",
        UID,
        True,
    )
    assert answer.allowed and answer.patch == b'[{"op":"add","path":"/a","value":1}]'
    assert failure(reply({"uid": UID, "allowed": True, "patch": patch})) == (
        "received invalid webhook response: webhook returned response.patch but not "
        "response.patchType"
    )
    assert failure(reply({"uid": UID, "allowed": True, "patch": patch}), mutating=False) == (
        "received invalid webhook response: validating webhook may not return response.patch"
    )


def test_the_review_envelope_is_checked() -> None:
    assert failure(reply({"uid": "other", "allowed": True})) == (
        f'received invalid webhook response: expected response.uid="{UID}", got "other"'
    )
    assert failure(reply(None)) == "received invalid webhook response: webhook response was absent"
    wrong = reply({"uid": UID, "allowed": True}, apiVersion="admission.k8s.io/v1beta1")
    assert failure(wrong) == (
        "received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
        "Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
    )
    # v1beta1 answers never had their uid checked.
    beta = reply({"allowed": True}, apiVersion="admission.k8s.io/v1beta1")
    assert read_answer(beta, "v1beta1", UID, False).allowed


def test_unreadable_answers_are_described_as_client_go_describes_them() -> None:
    assert failure(Reply(200, "text/plain", b"ok")) == (
        "failed to call webhook: serializer for text/plain doesn't exist"
    )
    assert failure(Reply(200, "application/json", b"")) == (
        "failed to call webhook: 0-length response with status code: 200 and content type: "
        "application/json"
    )
    assert failure(Reply(200, None, b"<html>")) == (
        "failed to call webhook: couldn't get version/kind; json parse error: invalid "
        "character '<' looking for beginning of value"
    )
    assert failure(Reply(200, "application/json", b'{"response": {}}')) == (
        "failed to call webhook: Object 'Kind' is missing in '{\"response\": {}}'"
    )
    assert failure(reply({"uid": UID, "allowed": "yes"})) == (
        "failed to call webhook: json: cannot unmarshal string into Go struct field "
        "AdmissionResponse.response.allowed of type bool"
    )


def test_non_2xx_answers_become_generic_or_carried_status_errors() -> None:
    assert failure(Reply(404, "text/plain", b"404 page not found")) == (
        "failed to call webhook: the server could not find the requested resource"
    )
    assert failure(Reply(502, "text/plain", b'bad "gateway"')) == (
        'failed to call webhook: an error on the server ("bad \\"gateway\\"") has prevented '
        "the request from succeeding"
    )
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "too busy"}
    assert failure(Reply(503, "application/json", orjson.dumps(status))) == (
        "failed to call webhook: too busy"
    )
    assert failure(Reply(418, "application/json", b"{}")) == (
        "failed to call webhook: the server responded with the status code 418 but did not "
        "return more information"
    )


def attrs(operation: str, namespace: str, plural: str = "pods", sub: str = "") -> Attributes:
    rt = Registry().get("", "v1", plural)
    assert rt is not None
    return Attributes(
        operation, rt, sub, ("", "v1", rt.kind), "x", namespace, {}, None, None, False, ADMIN
    )


@pytest.mark.parametrize(
    ("resources", "sub", "expected"),
    [
        (["pods"], "", True),
        (["pods"], "status", False),
        (["pods/status"], "status", True),
        (["*"], "status", False),
        (["*/status"], "status", True),
        (["*/*"], "exec", True),
        (["pods/*"], "log", True),
        (["services/*"], "status", False),
    ],
)
def test_resources_and_subresources(resources: list[str], sub: str, expected: bool) -> None:
    rule = Rule.parse(
        {"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": resources}
    )
    assert (
        rule.matches(attrs("UPDATE", "default", sub=sub), attrs("UPDATE", "default").rt) is expected
    )


def test_scope_counts_a_namespace_as_cluster_scoped() -> None:
    namespaced = Rule.parse(
        {
            "operations": ["CREATE"],
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "resources": ["*"],
            "scope": "Namespaced",
        }
    )
    cluster = Rule.parse(
        {
            "operations": ["CREATE"],
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "resources": ["*"],
            "scope": "Cluster",
        }
    )
    pod = attrs("CREATE", "default")
    ns = attrs("CREATE", "new-ns", plural="namespaces")
    assert namespaced.matches(pod, pod.rt) and not cluster.matches(pod, pod.rt)
    assert cluster.matches(ns, ns.rt) and not namespaced.matches(ns, ns.rt)
    assert not namespaced.matches(attrs("UPDATE", "default"), pod.rt)  # operation


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (["*/*", "pods"], "if '*/*' is present, must not specify other resources"),
        (["pods/*", "pods/status"], "if 'pods/*' is present, must not specify pods/status"),
        (
            ["*/scale", "deployments/scale"],
            "if '*/scale' is present, must not specify deployments/scale",
        ),
        ([""], "webhooks[0].rules[0].resources[0]: Required value"),
    ],
)
def test_rule_resources_are_validated(resources: list[str], message: str) -> None:
    config = {
        "webhooks": [
            {
                "name": "v.example.com",
                "clientConfig": {"url": "https://example.com/v"},
                "rules": [
                    {
                        "operations": ["*"],
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "resources": resources,
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ]
    }
    errors = [str(e) for e in validate_validating_webhooks(config)]
    assert any(message in e for e in errors), errors
