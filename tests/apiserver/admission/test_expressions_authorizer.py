"""The CEL `authorizer` of admission expressions asks the API server's own RBAC about the
requesting user: the same expression decides differently for the administrator and for a
ServiceAccount without the permission."""

from __future__ import annotations

from typing import Any

from kubeforge.apiserver import APIServer
from tests.support import HTTPClient
from tests.support.admission import (
    BINDINGS,
    POLICIES,
    VALIDATING,
    WebhookServer,
    configmap,
    deny,
    rule,
    validating,
    webhook,
    webhook_server,
)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ROBOT = "system:serviceaccount:default:robot"
# May the requesting user delete secrets where it writes?
MAY_DELETE_SECRETS = (
    "authorizer.group('').resource('secrets').namespace(request.namespace)"
    ".check('delete').allowed()"
)


async def created(http: HTTPClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(path, body)
    assert reply.status == 201, reply.body
    result: dict[str, Any] = reply.json()
    return result


async def robot_token(http: HTTPClient) -> dict[str, str]:
    """A ServiceAccount that may create ConfigMaps in default, and nothing about Secrets."""
    await created(
        http,
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    )
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    await created(
        http,
        f"{rbac}/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "configmap-writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
        },
    )
    await created(
        http,
        f"{rbac}/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "robot-writes-configmaps"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "configmap-writer",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
        },
    )
    issued = await created(
        http,
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return {"Authorization": f"Bearer {issued['status']['token']}"}


async def test_a_match_condition_with_the_authorizer_tells_the_admin_from_a_service_account(
    server: APIServer, http: HTTPClient
) -> None:
    robot = await robot_token(http)
    async with webhook_server() as hooks:
        await review_only_those_who_may_not_delete_secrets(http, hooks)

        # The administrator may delete secrets: the condition is false, no call, stored.
        await created(http, CONFIGMAPS, configmap("by-admin"))
        assert hooks.requests("/restrict") == []

        # The ServiceAccount may not: the webhook is called for it, and refuses.
        reply = await http.post(CONFIGMAPS, configmap("by-robot"), headers=robot, auth=False)
        assert reply.status == 403, reply.body
        assert reply.json()["message"] == (
            'admission webhook "restrict.example.com" denied the request: only for those '
            "who may delete secrets"
        )
        [request] = hooks.requests("/restrict")
        assert request["userInfo"]["username"] == ROBOT
        assert (await http.get(f"{CONFIGMAPS}/by-robot")).status == 404

        # Granted the permission, the same user no longer matches.
        await grant_secret_deletion(http)
        reply = await http.post(CONFIGMAPS, configmap("by-robot"), headers=robot, auth=False)
        assert reply.status == 201, reply.body
        assert len(hooks.requests("/restrict")) == 1


async def review_only_those_who_may_not_delete_secrets(
    http: HTTPClient, hooks: WebhookServer
) -> None:
    hooks.route("/restrict", lambda request: deny("only for those who may delete secrets"))
    config = validating(
        "restrict",
        webhook(
            "restrict.example.com",
            hooks,
            "/restrict",
            [rule(["configmaps"])],
            failurePolicy="Fail",
            matchConditions=[{"name": "may-not-delete", "expression": f"!{MAY_DELETE_SECRETS}"}],
        ),
    )
    await created(http, VALIDATING, config)


async def grant_secret_deletion(http: HTTPClient) -> None:
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    await created(
        http,
        f"{rbac}/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "secret-deleter"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}],
        },
    )
    await created(
        http,
        f"{rbac}/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "robot-deletes-secrets"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "secret-deleter",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
        },
    )


async def test_a_policy_with_the_authorizer_tells_the_admin_from_a_service_account(
    server: APIServer, http: HTTPClient
) -> None:
    robot = await robot_token(http)
    await created(
        http,
        POLICIES,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "secret-managers-only"},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ]
                },
                "validations": [
                    {"expression": MAY_DELETE_SECRETS, "message": "secret managers only"}
                ],
            },
        },
    )
    await created(
        http,
        BINDINGS,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "secret-managers-only"},
            "spec": {"policyName": "secret-managers-only", "validationActions": ["Deny"]},
        },
    )
    await created(http, CONFIGMAPS, configmap("by-admin"))
    reply = await http.post(CONFIGMAPS, configmap("by-robot"), headers=robot, auth=False)
    assert reply.status == 422, reply.body  # a validation's reason defaults to Invalid
    assert reply.json()["message"].endswith(
        "ValidatingAdmissionPolicy 'secret-managers-only' with binding 'secret-managers-only' "
        "denied request: secret managers only"
    )
