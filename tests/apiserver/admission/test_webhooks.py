"""Admission webhooks called by the embedded API server, as kube-apiserver calls them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from kubeforge._apiserver.admission.chain import GROUP
from kubeforge._apiserver.types.resource import GroupResource
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient, free_port
from tests.support.admission import (
    MUTATING,
    VALIDATING,
    WebhookServer,
    allow,
    configmap,
    deny,
    deployment,
    mutating,
    never,
    patch,
    pod,
    rule,
    validating,
    webhook,
    webhook_server,
)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    async with webhook_server() as server:
        yield server


async def install(http: HTTPClient, config: dict[str, Any]) -> None:
    path = MUTATING if config["kind"] == "MutatingWebhookConfiguration" else VALIDATING
    reply = await http.post(path, config)
    assert reply.status == 201, reply.body


# -- calling and answering ---------------------------------------------------------------------


async def test_mutating_webhook_patch_is_stored_and_review_is_upstream_shaped(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route(
        "/label",
        lambda req: patch({"op": "add", "path": "/metadata/labels", "value": {"injected": "yes"}}),
    )
    await install(
        http, mutating("label", webhook("label.example.com", hooks, "/label", [rule(["pods"])]))
    )
    body = pod("", generateName="web-")
    del body["metadata"]["name"]
    reply = await http.post(PODS + "?fieldManager=tester", body)
    assert reply.status == 201, reply.body
    created = reply.json()
    assert created["metadata"]["labels"] == {"injected": "yes"}
    stored = (await http.get(f"{PODS}/{created['metadata']['name']}")).json()
    assert stored["metadata"]["labels"] == {"injected": "yes"}

    (request,) = hooks.requests("/label")
    review = hooks.reviews["/label"][0]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    assert request["uid"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["requestKind"] == request["kind"]
    assert request["requestResource"] == request["resource"]
    assert "subResource" not in request
    # A generated name is not known while admission runs.
    assert "name" not in request
    assert request["object"]["metadata"]["generateName"] == "web-"
    assert request["namespace"] == "default"
    assert request["operation"] == "CREATE"
    assert request["userInfo"]["username"] == "kubeforge-admin"
    assert "system:masters" in request["userInfo"]["groups"]
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "tester",
    }


async def test_update_and_delete_reviews_carry_old_objects_and_options(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    await install(
        http,
        validating(
            "all",
            webhook(
                "all.example.com",
                hooks,
                "/all",
                [rule(["configmaps"], operations=["UPDATE", "DELETE"])],
            ),
        ),
    )
    assert (await http.post(CONFIGMAPS, configmap("cm", data={"a": "1"}))).status == 201
    assert hooks.requests("/all") == []  # CREATE is not among the rule's operations
    reply = await http.patch(
        f"{CONFIGMAPS}/cm", {"data": {"a": "2"}}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body
    update = hooks.requests("/all")[-1]
    assert update["operation"] == "UPDATE"
    assert update["name"] == "cm"
    assert update["object"]["data"] == {"a": "2"}
    assert update["oldObject"]["data"] == {"a": "1"}
    assert update["options"]["kind"] == "UpdateOptions"

    reply = await http.delete(f"{CONFIGMAPS}/cm", {"propagationPolicy": "Background"})
    assert reply.status == 200, reply.body
    delete = hooks.requests("/all")[-1]
    assert delete["operation"] == "DELETE"
    assert delete["object"] is None
    assert delete["oldObject"]["data"] == {"a": "2"}
    assert delete["options"] == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "propagationPolicy": "Background",
    }


async def test_denial_and_warnings_as_kubectl_prints_them(
    http: HTTPClient, kubectl: Kubectl, hooks: WebhookServer
) -> None:
    hooks.route("/deny", lambda req: {**deny("names must start with ok"), "warnings": ["heads up"]})
    hooks.route("/warn", lambda req: {"allowed": True, "warnings": ['a "quoted" warning']})
    await install(
        http,
        validating(
            "checks",
            webhook(
                "deny.example.com",
                hooks,
                "/deny",
                [rule(["configmaps"])],
                objectSelector={"matchLabels": {"check": "deny"}},
            ),
            webhook("warn.example.com", hooks, "/warn", [rule(["configmaps"])]),
        ),
    )
    result = await kubectl.run("create", "configmap", "ok-one", "--from-literal=a=b", check=False)
    assert result.code == 0, result.err
    assert 'Warning: a "quoted" warning' in result.err

    labelled = await kubectl.run(
        "create",
        "-f",
        "-",
        stdin=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  labels:\n    check: deny\n"
        ),
        check=False,
    )
    assert labelled.code == 1
    assert (
        'Error from server (Forbidden): error when creating "STDIN": admission webhook '
        '"deny.example.com" denied the request: names must start with ok'
    ) in labelled.err
    assert "Warning: heads up" in labelled.err
    assert (await http.get(f"{CONFIGMAPS}/bad")).status == 404


async def test_denial_keeps_the_webhooks_status_and_fills_in_what_is_missing(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route("/bare", lambda req: {"allowed": False})
    hooks.route(
        "/reason", lambda req: {"allowed": False, "status": {"code": 200, "reason": "Nope"}}
    )
    await install(
        http,
        validating(
            "denials",
            webhook("bare.example.com", hooks, "/bare", [rule(["configmaps"])]),
        ),
    )
    reply = await http.post(CONFIGMAPS, configmap("x"))
    assert reply.status == 400
    assert reply.json()["message"] == (
        'admission webhook "bare.example.com" denied the request without explanation'
    )
    await http.delete(f"{VALIDATING}/denials")
    await install(
        http,
        validating(
            "denials", webhook("reason.example.com", hooks, "/reason", [rule(["configmaps"])])
        ),
    )
    reply = await http.post(CONFIGMAPS, configmap("x"))
    assert reply.status == 400  # a code below 400 is no refusal code
    assert reply.json()["reason"] == "Nope"
    assert (
        reply.json()["message"] == 'admission webhook "reason.example.com" denied the request: Nope'
    )


# -- matching ----------------------------------------------------------------------------------


async def test_rules_match_resources_subresources_operations_and_scope(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    def hook(name: str, r: dict[str, Any]) -> dict[str, Any]:
        return webhook(f"{name}.example.com", hooks, f"/{name}", [r])

    await install(
        http,
        validating(
            "rules",
            hook("pods", rule(["pods"], operations=["*"])),
            hook("podstatus", rule(["pods/status"], operations=["UPDATE"])),
            hook("scale", rule(["*/scale"], operations=["UPDATE"], groups=["*"], versions=["*"])),
            hook("star", rule(["*"], operations=["UPDATE"], groups=["*"], versions=["*"])),
            hook("all", rule(["*/*"], operations=["UPDATE"], groups=["apps"], versions=["v1"])),
            hook("namespaced", rule(["*"], groups=["*"], versions=["*"], scope="Namespaced")),
            hook("cluster", rule(["*"], groups=["*"], versions=["*"], scope="Cluster")),
            hook("v2", rule(["pods"], versions=["v2"])),
        ),
    )

    def called() -> set[str]:
        names = set(hooks.calls)
        hooks.calls.clear()
        return {n.strip("/") for n in names}

    assert (await http.post(PODS, pod("p"))).status == 201
    assert called() == {"pods", "namespaced"}
    current = (await http.get(f"{PODS}/p")).json()
    current["status"] = {"phase": "Running"}
    assert (await http.put(f"{PODS}/p/status", current)).status == 200
    assert called() == {"podstatus"}  # "pods" and "*" do not cover pods/status
    assert (await http.post(DEPLOYMENTS, deployment("d"))).status == 201
    assert called() == {"namespaced"}
    reply = await http.patch(
        f"{DEPLOYMENTS}/d/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body
    assert called() == {"scale", "all"}
    scale_review = hooks.requests("/scale")[-1]
    assert scale_review["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert scale_review["subResource"] == "scale"
    assert scale_review["object"]["spec"]["replicas"] == 3
    assert scale_review["oldObject"]["spec"]["replicas"] == 1
    reply = await http.patch(
        f"{DEPLOYMENTS}/d", {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body
    assert called() == {"star", "all"}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scoped"}}
    assert (await http.post("/api/v1/namespaces", namespace)).status == 201
    assert called() == {"cluster"}  # a Namespace is cluster-scoped, whatever its request says
    assert hooks.requests("/cluster")[-1]["namespace"] == "scoped"


async def test_match_policy_equivalent_sends_the_version_the_rule_names(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    # core/v1 Events and events.k8s.io/v1 Events are one resource in two groups.
    hooks.route(
        "/events", lambda req: patch({"op": "replace", "path": "/note", "value": "patched"})
    )
    events_rule = rule(["events"], groups=["events.k8s.io"], versions=["v1"])
    await install(
        http,
        mutating(
            "events",
            webhook("equivalent.example.com", hooks, "/events", [events_rule]),
            webhook("exact.example.com", hooks, "/exact", [events_rule], matchPolicy="Exact"),
        ),
    )
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Test",
        "message": "original",
        "type": "Normal",
    }
    reply = await http.post("/api/v1/namespaces/default/events", event)
    assert reply.status == 201, reply.body
    assert reply.json()["message"] == "patched"  # converted back from the patched v1 Event
    (request,) = hooks.requests("/events")
    assert request["kind"] == {"group": "events.k8s.io", "version": "v1", "kind": "Event"}
    assert request["resource"]["group"] == "events.k8s.io"
    assert request["requestKind"] == {"group": "", "version": "v1", "kind": "Event"}
    assert request["requestResource"]["group"] == ""
    assert request["object"]["apiVersion"] == "events.k8s.io/v1"
    assert request["object"]["note"] == "original"
    assert request["object"]["regarding"]["name"] == "p"
    assert hooks.requests("/exact") == []


async def test_namespace_selector_uses_the_namespace_labels(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    await install(
        http,
        validating(
            "ns",
            webhook(
                "ns.example.com",
                hooks,
                "/ns",
                [rule(["configmaps", "namespaces", "persistentvolumes"], operations=["CREATE"])],
                namespaceSelector={"matchLabels": {"admission": "on"}},
            ),
        ),
    )
    labelled = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "watched", "labels": {"admission": "on"}},
    }
    plain = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}}
    assert (await http.post("/api/v1/namespaces", labelled)).status == 201
    assert (await http.post("/api/v1/namespaces", plain)).status == 201
    # A Namespace is judged by its own labels.
    assert [r["name"] for r in hooks.requests("/ns")] == ["watched"]
    for ns in ("watched", "plain"):
        reply = await http.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("c", ns))
        assert reply.status == 201
    assert [r["namespace"] for r in hooks.requests("/ns")[1:]] == ["watched"]
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv"},
        },
    }
    # Cluster-scoped objects are never excluded by a namespaceSelector.
    assert (await http.post("/api/v1/persistentvolumes", volume)).status == 201
    assert hooks.requests("/ns")[-1]["name"] == "pv"


async def test_object_selector_matches_the_new_or_the_old_object(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    await install(
        http,
        validating(
            "objects",
            webhook(
                "objects.example.com",
                hooks,
                "/objects",
                [rule(["configmaps"], operations=["*"])],
                objectSelector={"matchLabels": {"watch": "yes"}},
            ),
        ),
    )
    assert (await http.post(CONFIGMAPS, configmap("quiet"))).status == 201
    watched = configmap("loud")
    watched["metadata"]["labels"] = {"watch": "yes"}
    assert (await http.post(CONFIGMAPS, watched)).status == 201
    assert [r["name"] for r in hooks.requests("/objects")] == ["loud"]
    # Removing the label is still seen: the old object matches.
    reply = await http.patch(
        f"{CONFIGMAPS}/loud", {"metadata": {"labels": None}}, "application/merge-patch+json"
    )
    assert reply.status == 200
    assert hooks.requests("/objects")[-1]["operation"] == "UPDATE"
    assert (await http.delete(f"{CONFIGMAPS}/quiet")).status == 200
    assert len(hooks.requests("/objects")) == 2


async def test_match_conditions_select_and_fail_by_failure_policy(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    conditions = [
        {"name": "named-yes", "expression": "object.metadata.name.startsWith('yes')"},
        {"name": "creating", "expression": "request.operation == 'CREATE'"},
        {
            "name": "may-create",
            "expression": "authorizer.group('').resource('configmaps').check('create').allowed()",
        },
    ]
    broken = [{"name": "broken", "expression": "object.data.missing == 'x'"}]
    await install(
        http,
        validating(
            "conditions",
            webhook(
                "cel.example.com", hooks, "/cel", [rule(["configmaps"])], matchConditions=conditions
            ),
            webhook(
                "broken.example.com",
                hooks,
                "/broken",
                [rule(["configmaps"])],
                matchConditions=broken,
                objectSelector={"matchLabels": {"broken": "fail"}},
            ),
            webhook(
                "ignored.example.com",
                hooks,
                "/ignored",
                [rule(["configmaps"])],
                matchConditions=broken,
                failurePolicy="Ignore",
            ),
        ),
    )
    assert (await http.post(CONFIGMAPS, configmap("yes-1", data={}))).status == 201
    assert (await http.post(CONFIGMAPS, configmap("no-1", data={}))).status == 201
    assert [r["name"] for r in hooks.requests("/cel")] == ["yes-1"]
    assert hooks.requests("/ignored") == []  # an error under Ignore skips the webhook
    # With a key in data: an empty map is not stored (omitempty), and `object.data` would
    # then be the missing key.
    failing = configmap("fails", data={"present": "x"})
    failing["metadata"]["labels"] = {"broken": "fail"}
    reply = await http.post(CONFIGMAPS, failing)
    assert reply.status == 403
    assert reply.json()["message"] == (
        "configmaps \"fails\" is forbidden: expression 'object.data.missing == 'x'' resulted "
        "in error: no such key: missing"
    )
    assert hooks.requests("/broken") == []


async def test_configurations_take_effect_at_once_and_are_never_admitted(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route("/deny", lambda req: deny("closed"))
    # A webhook for everything that refuses everything, and one nobody answers.
    everything = rule(["*/*"], operations=["*"], groups=["*"], versions=["*"])
    await install(
        http, validating("lockout", webhook("deny.example.com", hooks, "/deny", [everything]))
    )
    assert (await http.post(CONFIGMAPS, configmap("a"))).status == 403
    unreachable = webhook("gone.example.com", hooks, "/gone", [everything])
    unreachable["clientConfig"]["url"] = f"https://127.0.0.1:{free_port()}/gone"
    await install(http, mutating("gone", unreachable))
    assert (await http.post(CONFIGMAPS, configmap("a"))).status == 500
    # The configurations themselves can still be changed and removed.
    reply = await http.get(f"{VALIDATING}/lockout")
    config = reply.json()
    config["webhooks"][0]["rules"] = [rule(["secrets"])]
    assert (await http.put(f"{VALIDATING}/lockout", config)).status == 200
    assert (await http.delete(f"{MUTATING}/gone")).status == 200
    assert (await http.post(CONFIGMAPS, configmap("a"))).status == 201
    assert (await http.delete(f"{VALIDATING}/lockout")).status == 200
    assert not any(r["kind"]["group"] == GROUP for r in hooks.requests("/deny"))


async def test_webhook_configurations_are_validated(http: HTTPClient, hooks: WebhookServer) -> None:
    good = webhook("ok.example.com", hooks, "/ok", [rule(["pods"])])
    cases = [
        (
            {**good, "admissionReviewVersions": ["v2"]},
            'webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at '
            "least one of v1, v1beta1",
        ),
        (
            {**good, "clientConfig": {"url": "http://127.0.0.1/x"}},
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed "
            "URL scheme; desired format: https://host[/path]",
        ),
        (
            {
                **good,
                "clientConfig": {
                    "url": "https://a.example.com/x",
                    "service": {"name": "s", "namespace": "n"},
                },
            },
            "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
        ),
        (
            {**good, "rules": [rule(["*", "pods"])]},
            'webhooks[0].rules[0].resources: Invalid value: []string{"*", "pods"}: if \'*\' is '
            "present, must not specify other resources without subresources",
        ),
        (
            {**good, "name": "short"},
            'webhooks[0].name: Invalid value: "short": should be a domain with at least three '
            "segments separated by dots",
        ),
        (
            {**good, "timeoutSeconds": 31},
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 "
            "and 30 seconds",
        ),
        (
            {**good, "matchConditions": [{"name": "c", "expression": "object.x =="}]},
            'webhooks[0].matchConditions[0].expression: Invalid value: "object.x ==": '
            "compilation failed: ERROR:",
        ),
        (
            {**good, "matchConditions": [{"name": "c", "expression": "params.x == 1"}]},
            "undeclared reference to 'params'",
        ),
    ]
    for hook, message in cases:
        reply = await http.post(VALIDATING, validating("bad", hook))
        assert reply.status == 422, (hook, reply.body)
        assert message in reply.json()["message"], reply.json()["message"]
    defaulted = (await http.post(MUTATING, mutating("ok", good))).json()["webhooks"][0]
    assert defaulted["timeoutSeconds"] == 10
    assert defaulted["failurePolicy"] == "Fail"
    assert defaulted["matchPolicy"] == "Equivalent"
    assert defaulted["reinvocationPolicy"] == "Never"
    assert defaulted["rules"][0]["scope"] == "*"


# -- mutation ----------------------------------------------------------------------------------


async def test_patched_objects_are_validated_again_and_nothing_is_stored(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route(
        "/badkey", lambda req: patch({"op": "add", "path": "/data", "value": {"bad key!": "x"}})
    )
    hooks.route(
        "/badtype",
        lambda req: patch({"op": "replace", "path": "/spec/replicas", "value": "many"}),
    )
    hooks.route(
        "/unknown",
        lambda req: patch({"op": "add", "path": "/spec/notAField", "value": 1}),
    )
    hooks.route("/broken", lambda req: patch({"op": "remove", "path": "/spec/missing"}))
    hooks.route(
        "/float", lambda req: patch({"op": "replace", "path": "/spec/replicas", "value": 2.0})
    )
    await install(
        http,
        mutating(
            "breakers",
            webhook("badkey.example.com", hooks, "/badkey", [rule(["configmaps"])]),
            webhook(
                "badtype.example.com",
                hooks,
                "/badtype",
                [rule(["deployments"], groups=["apps"])],
                objectSelector={"matchLabels": {"break": "type"}},
            ),
            webhook(
                "unknown.example.com",
                hooks,
                "/unknown",
                [rule(["deployments"], groups=["apps"])],
                objectSelector={"matchLabels": {"break": "unknown"}},
            ),
            webhook(
                "broken.example.com",
                hooks,
                "/broken",
                [rule(["deployments"], groups=["apps"])],
                objectSelector={"matchLabels": {"break": "patch"}},
            ),
            webhook(
                "float.example.com",
                hooks,
                "/float",
                [rule(["deployments"], groups=["apps"])],
                objectSelector={"matchLabels": {"break": "float"}},
            ),
        ),
    )
    reply = await http.post(CONFIGMAPS, configmap("cm"))
    assert reply.status == 422
    assert reply.json()["message"].startswith(
        'ConfigMap "cm" is invalid: data[bad key!]: Invalid value'
    )
    assert (await http.get(f"{CONFIGMAPS}/cm")).status == 404

    def labelled(name: str, value: str) -> dict[str, Any]:
        body = deployment(name)
        body["metadata"]["labels"] = {"break": value}
        return body

    reply = await http.post(DEPLOYMENTS, labelled("typed", "type"))
    assert reply.status == 500  # a patch a typed decoder cannot read is the webhook's fault
    assert reply.json()["reason"] == "InternalError"
    assert "cannot unmarshal string" in reply.json()["message"]
    assert (await http.get(f"{DEPLOYMENTS}/typed")).status == 404

    # A JSON patch keeps its literal 2.0, which Go's decoder cannot put into an int32.
    reply = await http.post(DEPLOYMENTS, labelled("floated", "float"))
    assert reply.status == 500
    assert "cannot unmarshal number 2.0 into Go struct field" in reply.json()["message"]
    assert (await http.get(f"{DEPLOYMENTS}/floated")).status == 404

    reply = await http.post(DEPLOYMENTS, labelled("pruned", "unknown"))
    assert reply.status == 201, reply.body
    assert "notAField" not in reply.json()["spec"]  # decoded again: unknown fields dropped

    reply = await http.post(DEPLOYMENTS, labelled("unpatched", "patch"))
    assert reply.status == 500
    assert reply.json()["message"].startswith("Internal error occurred: ")
    assert (await http.get(f"{DEPLOYMENTS}/unpatched")).status == 404


def defaulted_crd() -> dict[str, Any]:
    """Widgets whose schema defaults spec.size and spec.mode."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.defaults.kubeforge.dev"},
        "spec": {
            "group": "defaults.kubeforge.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "default": {},
                                    "properties": {
                                        "size": {"type": "integer", "default": 3},
                                        "mode": {"type": "string", "default": "fast"},
                                        "note": {"type": "string"},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


async def test_mutating_webhooks_see_the_object_already_defaulted(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    # kube-apiserver defaults an object as it decodes the request, before admission; and a
    # custom object patched by a mutating webhook is defaulted again (the CRD docs'
    # "Defaulting" section).
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await http.post(crds, defaulted_crd())).status == 201
    widgets = "/apis/defaults.kubeforge.dev/v1/namespaces/default/widgets"

    async def served() -> bool:
        return (await http.get(widgets)).status == 200

    await eventually(served)
    hooks.route("/widgets", lambda req: patch({"op": "remove", "path": "/spec/mode"}))
    hooks.route("/pods", allow)
    widget_rule = rule(["widgets"], ["CREATE", "UPDATE"], ["defaults.kubeforge.dev"])
    await install(
        http,
        mutating(
            "defaulted",
            webhook("widgets.example.com", hooks, "/widgets", [widget_rule]),
            webhook("pods.example.com", hooks, "/pods", [rule(["pods"])]),
        ),
    )

    body = {
        "apiVersion": "defaults.kubeforge.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"note": "hello"},
    }
    reply = await http.post(widgets, body)
    assert reply.status == 201, reply.body
    (request,) = hooks.requests("/widgets")
    assert request["object"]["spec"] == {"note": "hello", "size": 3, "mode": "fast"}
    # The patch removed spec.mode; defaulting put it back.
    assert reply.json()["spec"] == {"note": "hello", "size": 3, "mode": "fast"}

    # An update without spec at all: the schema's defaults fill it before the webhook.
    del body["spec"]
    body["metadata"]["resourceVersion"] = reply.json()["metadata"]["resourceVersion"]
    reply = await http.put(f"{widgets}/w", body)
    assert reply.status == 200, reply.body
    update = hooks.requests("/widgets")[1]
    assert update["operation"] == "UPDATE"
    assert update["object"]["spec"] == {"size": 3, "mode": "fast"}
    assert update["oldObject"]["spec"] == {"note": "hello", "size": 3, "mode": "fast"}

    # A built-in kind: the Pod's defaults are in what the webhook receives.
    assert (await http.post(PODS, pod("p"))).status == 201
    (request,) = hooks.requests("/pods")
    spec = request["object"]["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePolicy"] == "File"


async def test_mutating_webhooks_run_in_name_order_and_are_reinvoked_once(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    def append(mark: str) -> Any:
        def answer(request: dict[str, Any]) -> dict[str, Any]:
            annotations = request["object"]["metadata"].get("annotations") or {}
            trail = annotations.get("trail", "")
            value = f"{trail},{mark}" if trail else mark
            return patch(
                {
                    "op": "add",
                    "path": "/metadata/annotations",
                    "value": {**annotations, "trail": value},
                }
            )

        return answer

    hooks.route("/a", append("a"))
    hooks.route("/b", append("b"))
    hooks.route("/c", lambda req: {"allowed": True})
    # Configurations are taken by name: "first" runs before "second" though created after.
    await install(
        http, mutating("second", webhook("b.example.com", hooks, "/b", [rule(["configmaps"])]))
    )
    await install(
        http,
        mutating(
            "first",
            webhook(
                "a.example.com", hooks, "/a", [rule(["configmaps"])], reinvocationPolicy="IfNeeded"
            ),
            webhook(
                "c.example.com", hooks, "/c", [rule(["configmaps"])], reinvocationPolicy="IfNeeded"
            ),
        ),
    )
    reply = await http.post(CONFIGMAPS, configmap("trail"))
    assert reply.status == 201, reply.body
    # b changed the object after a ran: a (IfNeeded) runs once more; c changed nothing and is
    # reinvoked too, b is not (reinvocationPolicy Never).
    assert hooks.calls == ["/a", "/c", "/b", "/a", "/c"]
    assert reply.json()["metadata"]["annotations"]["trail"] == "a,b,a"


async def test_a_patch_on_delete_is_refused(http: HTTPClient, hooks: WebhookServer) -> None:
    hooks.route("/del", lambda req: patch({"op": "add", "path": "/metadata/labels", "value": {}}))
    assert (await http.post(CONFIGMAPS, configmap("keep"))).status == 201
    await install(
        http,
        mutating(
            "del", webhook("del.example.com", hooks, "/del", [rule(["configmaps"], ["DELETE"])])
        ),
    )
    reply = await http.delete(f"{CONFIGMAPS}/keep")
    assert reply.status == 500
    assert reply.json()["message"] == (
        'Internal error occurred: admission webhook "del.example.com" attempted to modify the '
        "object, which is not supported for this operation"
    )
    assert (await http.get(f"{CONFIGMAPS}/keep")).status == 200


# -- validating webhooks ----------------------------------------------------------------------


async def test_validating_webhooks_are_called_in_parallel(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    second_called = asyncio.Event()

    async def first(request: dict[str, Any]) -> dict[str, Any]:
        # Answers only once the other webhook was called: one at a time would time out.
        await second_called.wait()
        return {"allowed": True}

    def second(request: dict[str, Any]) -> dict[str, Any]:
        second_called.set()
        return {"allowed": True}

    hooks.route("/first", first)
    hooks.route("/second", second)
    await install(
        http,
        validating(
            "parallel",
            webhook("first.example.com", hooks, "/first", [rule(["configmaps"])], timeoutSeconds=5),
            webhook("second.example.com", hooks, "/second", [rule(["configmaps"])]),
        ),
    )
    reply = await http.post(CONFIGMAPS, configmap("both"))
    assert reply.status == 201, reply.body


# -- failures ----------------------------------------------------------------------------------


async def test_failure_policy_on_hanging_refusing_and_garbage_webhooks(
    server: APIServer, http: HTTPClient, hooks: WebhookServer
) -> None:
    async def garbage(request: dict[str, Any]) -> web.Response:
        return web.Response(body=b"garbage", content_type="application/json")

    async def error(request: dict[str, Any]) -> web.Response:
        return web.Response(status=500, text="boom")

    def wrong_uid(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "uid": "not-the-uid"}

    hooks.route("/hang", never)
    hooks.route("/garbage", garbage)
    hooks.route("/error", error)
    hooks.route("/uid", wrong_uid)
    closed = free_port()
    cases = {
        "hang": ("/hang", 'Post "{url}?timeout=1s": context deadline exceeded'),
        "refused": (
            "/refused",
            f'Post "{{url}}?timeout=1s": dial tcp 127.0.0.1:{closed}: connect: connection refused',
        ),
        "garbage": (
            "/garbage",
            "couldn't get version/kind; json parse error: invalid character 'g' looking for "
            "beginning of value",
        ),
        "error": (
            "/error",
            'an error on the server ("boom") has prevented the request from succeeding',
        ),
        "uid": ("/uid", 'received invalid webhook response: expected response.uid="'),
    }
    hook_list = []
    for name, (path, _) in cases.items():
        for policy in ("Fail", "Ignore"):
            hook = webhook(
                f"{name}-{policy.lower()}.example.com",
                hooks,
                path,
                [rule(["configmaps"])],
                failurePolicy=policy,
                timeoutSeconds=1,
                objectSelector={"matchLabels": {"case": f"{name}-{policy.lower()}"}},
            )
            if name == "refused":
                hook["clientConfig"]["url"] = f"https://127.0.0.1:{closed}/refused"
            hook_list.append(hook)
    await install(http, validating("failures", *hook_list))

    async def attempt(name: str, policy: str) -> Any:
        body = configmap(f"{name}-{policy.lower()}")
        body["metadata"]["labels"] = {"case": f"{name}-{policy.lower()}"}
        return name, policy, await http.post(CONFIGMAPS, body)

    results = await asyncio.gather(
        *(attempt(name, policy) for name in cases for policy in ("Fail", "Ignore"))
    )
    for name, policy, reply in results:
        if policy == "Ignore":
            assert reply.status == 201, (name, reply.body)
            continue
        path, detail = cases[name]
        url = f"https://127.0.0.1:{closed}{path}" if name == "refused" else hooks.url(path)
        status = reply.json()
        assert reply.status == 500, (name, reply.body)
        assert status["reason"] == "InternalError"
        prefix = f'Internal error occurred: failed calling webhook "{name}-fail.example.com": '
        assert status["message"].startswith(prefix), status["message"]
        assert detail.format(url=url) in status["message"], status["message"]
        assert status["details"]["causes"][0]["message"] == status["message"].removeprefix(
            "Internal error occurred: "
        )
        assert (await http.get(f"{CONFIGMAPS}/{name}-fail")).status == 404


async def test_a_webhook_whose_certificate_the_ca_bundle_does_not_sign_is_not_called(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    async with webhook_server() as other:
        hook = webhook("tls.example.com", hooks, "/tls", [rule(["configmaps"])])
        hook["clientConfig"]["caBundle"] = other.ca_bundle
        await install(http, validating("tls", hook))
    reply = await http.post(CONFIGMAPS, configmap("tls"))
    assert reply.status == 500
    assert reply.json()["message"].endswith(
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    assert hooks.requests("/tls") == []


async def test_service_references_reach_this_machine_at_the_target_port(
    http: HTTPClient,
) -> None:
    async with webhook_server(("webhook-service.system.svc",)) as hooks:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "system"}}
        assert (await http.post("/api/v1/namespaces", namespace)).status == 201
        hook = webhook("svc.example.com", hooks, "/validate", [rule(["configmaps"])])
        hook["clientConfig"] = {
            "service": {"namespace": "system", "name": "webhook-service", "path": "/validate"},
            "caBundle": hooks.ca_bundle,
        }
        await install(http, validating("svc", hook))
        reply = await http.post(CONFIGMAPS, configmap("early"))
        assert reply.status == 500
        assert reply.json()["message"].endswith(
            'failed to call webhook: Post "https://webhook-service.system.svc:443/validate'
            '?timeout=10s": service "webhook-service" not found'
        )
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "webhook-service", "namespace": "system"},
            "spec": {"ports": [{"port": 443, "targetPort": hooks.port}]},
        }
        assert (await http.post("/api/v1/namespaces/system/services", service)).status == 201
        reply = await http.post(CONFIGMAPS, configmap("late"))
        assert reply.status == 201, reply.body
        assert [r["name"] for r in hooks.requests("/validate")] == ["late"]


# -- dry run -----------------------------------------------------------------------------------


async def test_dry_run_calls_webhooks_without_side_effects_and_refuses_the_others(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, hooks: WebhookServer
) -> None:
    hooks.route(
        "/m", lambda req: patch({"op": "add", "path": "/metadata/labels", "value": {"m": "1"}})
    )
    await install(
        http,
        mutating(
            "dry",
            webhook(
                "m.example.com", hooks, "/m", [rule(["configmaps"])], sideEffects="NoneOnDryRun"
            ),
        ),
    )
    result = await kubectl.run(
        "create", "configmap", "dry", "--dry-run=server", "-o", "jsonpath={.metadata.labels.m}"
    )
    assert result.out == "1"
    (request,) = hooks.requests("/m")
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]
    assert (await http.get(f"{CONFIGMAPS}/dry")).status == 404

    # sideEffects Some can no longer be created, but a configuration stored by an older server
    # may have it: a dry run then fails whatever the failure policy.
    legacy = validating(
        "legacy",
        webhook(
            "some.example.com",
            hooks,
            "/some",
            [rule(["configmaps"])],
            sideEffects="Some",
            failurePolicy="Ignore",
        ),
    )
    assert (await http.post(VALIDATING, legacy)).status == 422
    # Written as an older server left it:
    raw = validating(
        "legacy",
        webhook(
            "some.example.com",
            hooks,
            "/some",
            [rule(["configmaps"])],
            sideEffects="Some",
            failurePolicy="Ignore",
            timeoutSeconds=10,
            matchPolicy="Equivalent",
            namespaceSelector={},
            objectSelector={},
        ),
    )
    raw["metadata"].update({"uid": "legacy", "creationTimestamp": "2020-01-01T00:00:00Z"})
    server.store.create(GroupResource(GROUP, "validatingwebhookconfigurations"), raw)
    server.admission.reload()
    reply = await http.post(CONFIGMAPS + "?dryRun=All", configmap("dry2"))
    assert reply.status == 400
    assert (
        reply.json()["message"] == 'admission webhook "some.example.com" does not support dry run'
    )
    assert (await http.post(CONFIGMAPS, configmap("wet"))).status == 201
    assert [r["name"] for r in hooks.requests("/some")] == ["wet"]


# -- other entry points ------------------------------------------------------------------------


async def test_connect_requests_are_admitted(
    http: HTTPClient, kubectl: Kubectl, hooks: WebhookServer
) -> None:
    hooks.route("/exec", lambda req: deny("no shells here"))
    assert (await http.post(PODS, pod("target"))).status == 201
    await install(
        http,
        validating(
            "connect",
            webhook("exec.example.com", hooks, "/exec", [rule(["pods/exec"], ["CONNECT"])]),
        ),
    )
    result = await kubectl.run("exec", "target", "--", "sh", "-c", "true", check=False)
    assert result.code != 0
    assert 'admission webhook "exec.example.com" denied the request: no shells here' in result.err
    request = hooks.requests("/exec")[0]
    assert request["operation"] == "CONNECT"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert request["subResource"] == "exec"
    assert request["object"]["command"] == ["sh", "-c", "true"]
    assert request["options"] is None


async def test_collection_deletes_are_admitted_one_object_at_a_time(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route(
        "/del",
        lambda req: deny("kept") if req["oldObject"]["metadata"]["name"] == "b" else allow(req),
    )
    for name in ("a", "b", "c"):
        assert (await http.post(CONFIGMAPS, configmap(name))).status == 201
    await install(
        http,
        validating(
            "del", webhook("del.example.com", hooks, "/del", [rule(["configmaps"], ["DELETE"])])
        ),
    )
    reply = await http.delete(CONFIGMAPS)
    assert reply.status == 403
    requests = hooks.requests("/del")
    assert [r["oldObject"]["metadata"]["name"] for r in requests] == ["a", "b"]
    assert all("name" not in r for r in requests)
    remaining = (await http.get(CONFIGMAPS)).json()["items"]
    assert sorted(i["metadata"]["name"] for i in remaining) == ["b", "c"]


async def test_review_versions_v1beta1_is_spoken_when_asked(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route("/beta", lambda req: {"allowed": True, "uid": "anything"})
    await install(
        http,
        validating(
            "beta",
            webhook(
                "beta.example.com",
                hooks,
                "/beta",
                [rule(["configmaps"])],
                admissionReviewVersions=["v1beta1", "v1"],
            ),
        ),
    )
    assert (await http.post(CONFIGMAPS, configmap("beta"))).status == 201
    assert hooks.reviews["/beta"][0]["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_server_side_apply_is_admitted_as_create_then_update(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    await install(
        http,
        validating(
            "apply",
            webhook(
                "apply.example.com", hooks, "/apply", [rule(["configmaps"], ["CREATE", "UPDATE"])]
            ),
        ),
    )
    path = f"{CONFIGMAPS}/applied?fieldManager=tool"
    for value in ("1", "2"):
        reply = await http.patch(
            path, configmap("applied", data={"k": value}), "application/apply-patch+yaml"
        )
        assert reply.status in (200, 201), reply.body
    create, update = hooks.requests("/apply")
    assert (create["operation"], create["options"]["kind"]) == ("CREATE", "CreateOptions")
    assert (update["operation"], update["options"]["kind"]) == ("UPDATE", "UpdateOptions")
    assert update["options"]["fieldManager"] == "tool"
    assert update["oldObject"]["data"] == {"k": "1"}


async def test_a_write_landing_while_a_webhook_runs_makes_the_admitted_one_a_conflict(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    async def meddle(request: dict[str, Any]) -> dict[str, Any]:
        if request["object"]["data"]["v"] == "slow":
            reply = await http.patch(
                f"{CONFIGMAPS}/race", {"data": {"v": "fast"}}, "application/merge-patch+json"
            )
            assert reply.status == 200, reply.body
        return {"allowed": True}

    hooks.route("/meddle", meddle)
    assert (await http.post(CONFIGMAPS, configmap("race", data={"v": "0"}))).status == 201
    await install(
        http,
        validating(
            "meddle",
            webhook("meddle.example.com", hooks, "/meddle", [rule(["configmaps"], ["UPDATE"])]),
        ),
    )
    reply = await http.patch(
        f"{CONFIGMAPS}/race", {"data": {"v": "slow"}}, "application/merge-patch+json"
    )
    assert reply.status == 409
    assert reply.json()["reason"] == "Conflict"
    stored = (await http.get(f"{CONFIGMAPS}/race")).json()
    assert stored["data"] == {"v": "fast"}


async def test_the_cel_authorizer_asks_the_servers_authorizer_for_the_requesting_user(
    server: APIServer, http: HTTPClient, hooks: WebhookServer
) -> None:
    asked: list[tuple[str, dict[str, str]]] = []

    def authorize(user: Any, attributes: Any) -> tuple[bool, str]:
        asked.append((user.name, dict(attributes)))
        return attributes.get("namespace") != "default", "only elsewhere"

    server.admission.authorize = authorize
    condition = {
        "name": "may-delete",
        "expression": "authorizer.group('').resource('secrets').namespace(request.namespace)"
        ".check('delete').allowed()",
    }
    await install(
        http,
        validating(
            "authz",
            webhook(
                "authz.example.com",
                hooks,
                "/authz",
                [rule(["configmaps"])],
                matchConditions=[condition],
            ),
        ),
    )
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    assert (await http.post("/api/v1/namespaces", other)).status == 201
    assert (await http.post(CONFIGMAPS, configmap("here"))).status == 201
    reply = await http.post("/api/v1/namespaces/other/configmaps", configmap("there", "other"))
    assert reply.status == 201
    assert [r["namespace"] for r in hooks.requests("/authz")] == ["other"]
    assert asked[0] == (
        "kubeforge-admin",
        {"apiGroup": "", "resource": "secrets", "namespace": "default", "verb": "delete"},
    )
