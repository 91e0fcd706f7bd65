"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding in the embedded API server."""

from __future__ import annotations

from typing import Any

import orjson

from kubeforge.testing import Kubectl
from tests.support import HTTPClient
from tests.support.admission import (
    BINDINGS,
    MUTATING,
    POLICIES,
    VALIDATING,
    configmap,
    deployment,
)

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def policy(name: str, validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments"],
                    }
                ]
            },
            "validations": validations,
            **spec,
        },
    }
    return body


def binding(name: str, policy_name: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": actions, **spec},
    }


async def install(http: HTTPClient, *objects: dict[str, Any]) -> None:
    for obj in objects:
        path = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
        reply = await http.post(path, obj)
        assert reply.status == 201, reply.body


async def test_deny_as_kubectl_prints_it_and_warn(http: HTTPClient, kubectl: Kubectl) -> None:
    await install(
        http,
        policy("max-replicas", [{"expression": "object.spec.replicas <= 5"}]),
        binding("max-replicas-binding", "max-replicas", ["Deny"]),
    )
    manifest = orjson.dumps(deployment("big", replicas=6)).decode()
    result = await kubectl.run("create", "-f", "-", stdin=manifest, check=False)
    assert result.code == 1
    # The message Kubernetes documents for this policy.
    assert result.err.strip() == (
        "The deployments \"big\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with "
        "binding 'max-replicas-binding' denied request: failed expression: "
        "object.spec.replicas <= 5"
    )
    reply = await http.post(DEPLOYMENTS, deployment("big", replicas=6))
    status = reply.json()
    assert reply.status == 422
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with "
        "binding 'max-replicas-binding' denied request: failed expression: "
        "object.spec.replicas <= 5"
    )
    assert status["details"]["causes"] == [
        {
            "message": "ValidatingAdmissionPolicy 'max-replicas' with binding "
            "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
        }
    ]
    assert (await http.post(DEPLOYMENTS, deployment("small", replicas=2))).status == 201

    await install(
        http,
        policy(
            "even",
            [
                {
                    "expression": "object.spec.replicas % 2 == 0",
                    "messageExpression": "'replicas should be even, not ' + "
                    "string(object.spec.replicas)",
                }
            ],
        ),
        binding("even-warning", "even", ["Warn", "Audit"]),
    )
    result = await kubectl.run("create", "deployment", "odd", "--image=nginx", "--replicas=3")
    assert (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'even' with binding "
        "'even-warning': replicas should be even, not 3"
    ) in result.err
    assert (await http.get(f"{DEPLOYMENTS}/odd")).status == 200


async def test_reason_message_variables_and_match_conditions(http: HTTPClient) -> None:
    await install(
        http,
        policy(
            "labelled",
            [
                {
                    "expression": "variables.team != ''",
                    "message": "  a team label is required  ",
                    "reason": "Forbidden",
                }
            ],
            variables=[
                {
                    "name": "team",
                    "expression": "has(object.metadata.labels) && 'team' in "
                    "object.metadata.labels ? object.metadata.labels['team'] : ''",
                }
            ],
            matchConditions=[
                {"name": "not-system", "expression": "!object.metadata.name.startsWith('sys-')"}
            ],
        ),
        binding("labelled", "labelled", ["Deny"]),
    )
    reply = await http.post(DEPLOYMENTS, deployment("plain"))
    assert reply.status == 403
    assert reply.json()["reason"] == "Forbidden"
    assert reply.json()["message"].endswith("denied request: a team label is required")
    assert (await http.post(DEPLOYMENTS, deployment("sys-skipped"))).status == 201
    labelled = deployment("labelled")
    labelled["metadata"]["labels"] = {"team": "blue"}
    assert (await http.post(DEPLOYMENTS, labelled)).status == 201


async def test_params_by_name_and_selector_and_parameter_not_found(http: HTTPClient) -> None:
    limit = {"expression": "object.spec.replicas <= int(params.data.max)"}
    await install(
        http,
        policy(
            "limits",
            [{**limit, "messageExpression": "'at most ' + params.data.max + ' replicas'"}],
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
        binding(
            "limits-by-name",
            "limits",
            ["Deny"],
            paramRef={"name": "limits", "parameterNotFoundAction": "Deny"},
        ),
    )
    reply = await http.post(DEPLOYMENTS, deployment("early"))
    assert reply.status == 422
    assert reply.json()["message"].endswith(
        "ValidatingAdmissionPolicy 'limits' with binding 'limits-by-name' denied request: "
        "failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction"
    )
    assert (await http.post(CONFIGMAPS, configmap("limits", data={"max": "3"}))).status == 201
    assert (await http.post(DEPLOYMENTS, deployment("three", replicas=3))).status == 201
    reply = await http.post(DEPLOYMENTS, deployment("four", replicas=4))
    assert reply.status == 422
    assert reply.json()["message"].endswith("denied request: at most 3 replicas")

    # A selector evaluates the policy once per param; with none found, Allow admits.
    assert (await http.delete(f"{BINDINGS}/limits-by-name")).status == 200
    await install(
        http,
        binding(
            "limits-by-label",
            "limits",
            ["Deny"],
            paramRef={
                "selector": {"matchLabels": {"kind": "limit"}},
                "parameterNotFoundAction": "Allow",
            },
        ),
    )
    assert (await http.post(DEPLOYMENTS, deployment("any", replicas=9))).status == 201
    for name, value in (("low", "2"), ("high", "8")):
        cm = configmap(name, data={"max": value})
        cm["metadata"]["labels"] = {"kind": "limit"}
        assert (await http.post(CONFIGMAPS, cm)).status == 201
    reply = await http.post(DEPLOYMENTS, deployment("five", replicas=5))
    assert reply.status == 422
    assert reply.json()["message"].endswith("denied request: at most 2 replicas")
    assert (await http.post(DEPLOYMENTS, deployment("two", replicas=2))).status == 201


async def test_failure_policy_for_evaluation_and_configuration_errors(http: HTTPClient) -> None:
    broken = [{"expression": "object.spec.missing == 1"}]
    unknown_params = policy(
        "unknown-params",
        [{"expression": "true"}],
        paramKind={"apiVersion": "example.com/v1", "kind": "Missing"},
    )
    # A policy's own configuration error refuses whatever the policy matches.
    unknown_params["spec"]["matchConstraints"]["objectSelector"] = {"matchLabels": {"p": "params"}}
    await install(
        http,
        policy("strict", broken),
        binding(
            "strict",
            "strict",
            ["Deny"],
            matchResources={"objectSelector": {"matchLabels": {"p": "strict"}}},
        ),
        policy("lenient", broken, failurePolicy="Ignore"),
        binding("lenient", "lenient", ["Deny"]),
        unknown_params,
        binding("unknown-params", "unknown-params", ["Deny"]),
    )
    assert (await http.post(DEPLOYMENTS, deployment("fine"))).status == 201
    strict = deployment("strict")
    strict["metadata"]["labels"] = {"p": "strict"}
    reply = await http.post(DEPLOYMENTS, strict)
    assert reply.status == 422
    assert reply.json()["message"].endswith(
        "ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression "
        "'object.spec.missing == 1' resulted in error: no such key: missing"
    )
    params = deployment("params")
    params["metadata"]["labels"] = {"p": "params"}
    reply = await http.post(DEPLOYMENTS, params)
    assert reply.status == 422
    assert reply.json()["message"].endswith(
        "ValidatingAdmissionPolicy 'unknown-params' denied request: failed to configure policy: "
        "failed to find resource referenced by paramKind: 'example.com/v1, Kind=Missing'"
    )


async def test_namespace_object_and_unbound_policies(http: HTTPClient) -> None:
    await install(
        http,
        policy(
            "namespace-says",
            [{"expression": "namespaceObject.metadata.name == 'default'"}],
        ),
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    assert (await http.post("/api/v1/namespaces", namespace)).status == 201
    other = "/apis/apps/v1/namespaces/other/deployments"
    # A policy without a binding does nothing; a binding to no policy neither.
    assert (await http.post(other, deployment("unbound", namespace="other"))).status == 201
    await install(http, binding("nobody", "no-such-policy", ["Deny"]))
    assert (await http.post(other, deployment("still", namespace="other"))).status == 201
    await install(http, binding("namespace-says", "namespace-says", ["Deny"]))
    assert (await http.post(other, deployment("refused", namespace="other"))).status == 422
    assert (await http.post(DEPLOYMENTS, deployment("allowed"))).status == 201


async def test_policies_and_bindings_are_validated(http: HTTPClient) -> None:
    cases = [
        (
            policy("bad", [{"expression": "object.spec.replicas <"}]),
            'spec.validations[0].expression: Invalid value: "object.spec.replicas <": '
            "compilation failed: ERROR:",
        ),
        (
            policy("bad", [{"expression": "params.x == 1"}]),
            "undeclared reference to 'params'",
        ),
        (
            policy("bad", [{"expression": "true", "reason": "Teapot"}]),
            'spec.validations[0].reason: Unsupported value: "Teapot": supported values: '
            '"Forbidden", "Invalid", "RequestEntityTooLarge"',
        ),
        (
            policy("bad", []),
            "spec.validations: Required value: validations or auditAnnotations must contain at "
            "least one item",
        ),
        (
            binding("bad", "p", ["Deny", "Warn"]),
            "spec.validationActions: Invalid value: ",
        ),
        (
            binding("bad", "p", []),
            "spec.validationActions: Required value: at least one validation action is required",
        ),
        (
            binding("bad", "p", ["Deny"], paramRef={"name": "x"}),
            "spec.paramRef.parameterNotFoundAction: Required value",
        ),
    ]
    for obj, message in cases:
        path = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
        reply = await http.post(path, obj)
        assert reply.status == 422, (obj, reply.body)
        assert message in reply.json()["message"], reply.json()["message"]
    created = (await http.post(POLICIES, policy("good", [{"expression": "true"}]))).json()
    assert created["spec"]["failurePolicy"] == "Fail"
    assert created["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert created["spec"]["matchConstraints"]["namespaceSelector"] == {}
    assert created["spec"]["matchConstraints"]["resourceRules"][0]["scope"] == "*"


async def test_policies_govern_webhook_configurations_but_not_themselves(
    http: HTTPClient,
) -> None:
    # As kube-apiserver does: webhooks never see the admission configuration kinds, but
    # policies see the webhook configurations; only the policy and binding kinds (and the
    # reviews, which are not stored) are out of their reach.
    fail_closed = policy(
        "webhooks-fail-closed",
        [
            {
                "expression": "object.webhooks.all(w, w.failurePolicy == 'Fail')",
                "message": "webhooks must fail closed",
            }
        ],
    )
    fail_closed["spec"]["matchConstraints"]["resourceRules"] = [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
        }
    ]
    everything = policy("refuse-everything", [{"expression": "false", "message": "no"}])
    everything["spec"]["matchConstraints"]["resourceRules"] = [
        {
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "operations": ["*"],
            "resources": ["*/*"],
        }
    ]
    await install(
        http,
        fail_closed,
        binding("webhooks-fail-closed", "webhooks-fail-closed", ["Deny"]),
        everything,
    )

    def configuration(kind: str, policy: str) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": f"open-{policy.lower()}"},
            "webhooks": [
                {
                    "name": "hook.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/hook"},
                    "rules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["secrets"],
                        }
                    ],
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "failurePolicy": policy,
                }
            ],
        }

    for kind, path in (
        ("ValidatingWebhookConfiguration", VALIDATING),
        ("MutatingWebhookConfiguration", MUTATING),
    ):
        refused = await http.post(path, configuration(kind, "Ignore"))
        assert refused.status == 422, refused.body
        assert refused.json()["message"].endswith(
            "ValidatingAdmissionPolicy 'webhooks-fail-closed' with binding "
            "'webhooks-fail-closed' denied request: webhooks must fail closed"
        )
        assert (await http.get(f"{path}/open-ignore")).status == 404
        assert (await http.post(path, configuration(kind, "Fail"))).status == 201
        # An update is held to it too.
        stored = (await http.get(f"{path}/open-fail")).json()
        stored["webhooks"][0]["failurePolicy"] = "Ignore"
        assert (await http.put(f"{path}/open-fail", stored)).status == 422

    # A policy that refuses everything still cannot refuse policies or bindings (its own
    # repair stays possible), nor a review; once bound it refuses ordinary objects.
    await install(http, binding("refuse-everything", "refuse-everything", ["Deny"]))
    assert (await http.post(CONFIGMAPS, configmap("refused"))).status == 422
    assert (await http.delete(f"{BINDINGS}/refuse-everything")).status == 200
    assert (await http.post(CONFIGMAPS, configmap("allowed"))).status == 201
    await install(http, binding("refuse-everything", "refuse-everything", ["Deny"]))
    review = await http.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
        },
    )
    assert review.status == 201, review.body
    assert (await http.delete(f"{POLICIES}/refuse-everything")).status == 200
