"""Authentication and RBAC in the embedded API server, driven with kubectl and raw requests
as a cluster user would see them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeforge.apiserver import APIServer
from kubeforge.apiserver.kubeconfig import write_kubeconfig
from kubeforge.apiserver.server import ServerConfig
from kubeforge.testing import Kubectl
from tests.support import HTTPClient, connect

pytestmark = pytest.mark.kubectl

ROBOT = "system:serviceaccount:default:robot"
ROBOT_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:default" "system:authenticated"]'


def whoami(out: str) -> dict[str, str]:
    """`kubectl auth whoami`'s table as attribute -> value."""
    rows = [line.split(None, 1) for line in out.splitlines()[1:] if line.strip()]
    table = {}
    for line in out.splitlines()[1:]:
        if line.startswith("Extra: "):
            key, value = line[len("Extra: ") :].rsplit(None, 1)
            table[f"Extra: {key.strip()}"] = value
        elif line.strip():
            key, value = line.split(None, 1)
            table[key] = value.strip()
    assert rows
    return table


def as_token(server: APIServer, token: str, tmp_path: Path, name: str) -> Kubectl:
    cache = tmp_path / f"cache-{name}"
    cache.mkdir()
    path = write_kubeconfig(tmp_path / f"kubeconfig-{name}", server.url, server.ca_pem, token, name)
    return Kubectl(path, cache_dir=cache, env={"HOME": str(cache)})


async def robot(server: APIServer, kubectl: Kubectl, tmp_path: Path, *grants: str) -> Kubectl:
    """A `robot` service account in default, allowed to get and list pods there."""
    await kubectl.run("create", "serviceaccount", "robot")
    await kubectl.run("create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    await kubectl.run(
        "create",
        "rolebinding",
        "robot-reads",
        "--role=pod-reader",
        "--serviceaccount=default:robot",
    )
    token = (await kubectl.run("create", "token", "robot")).out.strip()
    return as_token(server, token, tmp_path, "robot")


async def test_a_service_account_token_gets_exactly_what_its_roles_allow(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    bot = await robot(server, kubectl, tmp_path)
    await kubectl.run("run", "web", "--image=nginx")
    listed = await bot.run("get", "pods", "-o", "name")
    assert listed.out.split() == ["pod/web"]
    assert (await bot.run("get", "pod", "web", "-o", "name")).out.strip() == "pod/web"

    refused = await bot.run("get", "pods", "-n", "kube-system", check=False)
    assert refused.code == 1
    assert refused.err.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "{ROBOT}" cannot list '
        'resource "pods" in API group "" in the namespace "kube-system"'
    )
    deleting = await bot.run("delete", "pod", "web", check=False)
    assert (
        f'pods "web" is forbidden: User "{ROBOT}" cannot delete resource "pods" in API group '
        '"" in the namespace "default"'
    ) in deleting.err
    deployments = await bot.run("get", "deployments", check=False)
    assert 'cannot list resource "deployments" in API group "apps"' in deployments.err
    nodes = await bot.run("get", "nodes", check=False)
    assert 'cannot list resource "nodes" in API group "" at the cluster scope' in nodes.err
    logs = await bot.run("logs", "web", check=False)
    assert 'cannot get resource "pods/log" in API group ""' in logs.err
    watch = await bot.run("get", "pods", "-w", "--request-timeout=2s", check=False)
    assert 'cannot watch resource "pods"' in watch.err


async def test_forbidden_answers_carry_the_resource_in_their_details(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, tmp_path: Path
) -> None:
    await robot(server, kubectl, tmp_path)
    token = (await kubectl.run("create", "token", "robot")).out.strip()
    reply = await http.get(
        "/apis/apps/v1/namespaces/default/deployments/web",
        headers={"Authorization": f"Bearer {token}"},
        auth=False,
    )
    assert reply.status == 403
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'deployments.apps "web" is forbidden: User "{ROBOT}" cannot get resource '
        '"deployments" in API group "apps" in the namespace "default"',
        "reason": "Forbidden",
        "details": {"name": "web", "group": "apps", "kind": "deployments"},
        "code": 403,
    }
    # The scheme is matched case-insensitively, as kube-apiserver does.
    lower = await http.get(
        "/api/v1/namespaces/default/pods", headers={"Authorization": f"bearer {token}"}, auth=False
    )
    assert lower.status == 200
    path = await http.get("/metrics", headers={"Authorization": f"Bearer {token}"}, auth=False)
    assert path.status == 403
    assert path.json()["message"] == f'forbidden: User "{ROBOT}" cannot get path "/metrics"'


async def test_token_requests_honour_expiry_audiences_and_bound_objects(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, tmp_path: Path
) -> None:
    await robot(server, kubectl, tmp_path)
    short = await kubectl.run("create", "token", "robot", "--duration=5m", check=False)
    assert "may not specify a duration less than 10 minutes" in short.err

    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
    reply = await http.post(
        path, {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "spec": {}}
    )
    assert reply.status == 201
    status = reply.json()["status"]
    assert reply.json()["spec"]["expirationSeconds"] == 3600
    assert status["expirationTimestamp"].endswith("Z")

    # A token for another audience is not accepted by the API server, but a TokenReview
    # for that audience authenticates it.
    other = (await kubectl.run("create", "token", "robot", "--audience=vault")).out.strip()
    pods = "/api/v1/namespaces/default/pods"
    refused = await http.get(pods, headers={"Authorization": f"Bearer {other}"}, auth=False)
    assert refused.status == 401
    review = await http.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": other, "audiences": ["vault"]},
        },
    )
    assert review.status == 201
    assert review.json()["status"]["authenticated"] is True
    assert review.json()["status"]["audiences"] == ["vault"]
    user = review.json()["status"]["user"]
    assert user["username"] == ROBOT
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]

    # Bound to a Secret: valid while the Secret exists.
    await kubectl.run("create", "secret", "generic", "holder", "--from-literal=a=b")
    bound = (
        await kubectl.run(
            "create", "token", "robot", "--bound-object-kind=Secret", "--bound-object-name=holder"
        )
    ).out.strip()
    ok = await http.get(pods, headers={"Authorization": f"Bearer {bound}"}, auth=False)
    assert ok.status == 200
    await kubectl.run("delete", "secret", "holder")
    gone = await http.get(pods, headers={"Authorization": f"Bearer {bound}"}, auth=False)
    assert gone.status == 401
    review = await http.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": bound}},
    )
    assert review.json()["status"] == {
        "user": {},
        "error": "service account token has been invalidated",
    }

    # Deleting the account invalidates every token it had.
    plain = (await kubectl.run("create", "token", "robot")).out.strip()
    await kubectl.run("delete", "serviceaccount", "robot")
    after = await http.get(pods, headers={"Authorization": f"Bearer {plain}"}, auth=False)
    assert after.status == 401
    assert after.json()["reason"] == "Unauthorized"


async def test_whoami_and_can_i_answer_truthfully(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    bot = await robot(server, kubectl, tmp_path)
    me = whoami((await bot.run("auth", "whoami")).out)
    assert me["Username"] == ROBOT
    assert me["Groups"] == (
        "[system:serviceaccounts system:serviceaccounts:default system:authenticated]"
    )
    assert me["Extra: authentication.kubernetes.io/credential-id"].startswith("[JTI=")

    assert (await bot.run("auth", "can-i", "list", "pods")).out.strip() == "yes"
    no = await bot.run("auth", "can-i", "create", "pods", check=False)
    assert (no.code, no.out.strip()) == (1, "no")

    as_robot = ("--as", ROBOT)
    assert (await kubectl.run("auth", "can-i", "get", "pods", *as_robot)).out.strip() == "yes"
    elsewhere = await kubectl.run(
        "auth", "can-i", "get", "pods", "-n", "kube-system", *as_robot, check=False
    )
    assert (elsewhere.code, elsewhere.out.strip()) == (1, "no")
    listing = (await kubectl.run("auth", "can-i", "--list", *as_robot)).out.splitlines()
    pods = [line.split() for line in listing if line.startswith("pods ")]
    assert pods == [["pods", "[]", "[]", "[get", "list]"]]
    assert any(line.startswith("selfsubjectaccessreviews.authorization.k8s.io") for line in listing)
    assert not any(line.startswith("*.*") for line in listing)
    admin = (await kubectl.run("auth", "can-i", "--list")).out.splitlines()
    assert any(line.split()[:1] == ["*.*"] for line in admin)


async def test_impersonation_needs_the_impersonate_verb(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    bot = await robot(server, kubectl, tmp_path)
    # The admin may impersonate anyone; the impersonated user is what RBAC sees.
    refused = await kubectl.run("get", "configmaps", "--as", ROBOT, check=False)
    assert f'User "{ROBOT}" cannot list resource "configmaps"' in refused.err
    as_alice = await kubectl.run("auth", "whoami", "--as", "alice", "--as-group", "team-a")
    assert whoami(as_alice.out) == {
        "Username": "alice",
        "Groups": "[team-a system:authenticated]",
    }

    # kubectl turns refused discovery into "unknown": the answer itself, as a client sees it.
    token = (await kubectl.run("create", "token", "robot")).out.strip()
    async with connect(server) as raw:
        denied = await raw.get(
            "/api/v1/namespaces/default/pods",
            headers={"Authorization": f"Bearer {token}", "Impersonate-User": "alice"},
            auth=False,
        )
        assert denied.status == 403
        assert denied.json()["message"] == (
            f'users "alice" is forbidden: User "{ROBOT}" cannot impersonate resource "users" '
            'in API group "" at the cluster scope'
        )
        account = await raw.get(
            "/api/v1/namespaces/default/pods",
            headers={
                "Authorization": f"Bearer {token}",
                "Impersonate-User": "system:serviceaccount:kube-system:default",
            },
            auth=False,
        )
        assert account.json()["message"] == (
            f'serviceaccounts "default" is forbidden: User "{ROBOT}" cannot impersonate '
            'resource "serviceaccounts" in API group "" in the namespace "kube-system"'
        )
        no_user = await raw.get("/api", headers={"Impersonate-Group": "system:masters"}, auth=True)
        assert no_user.status == 400
        assert "without impersonating a user" in no_user.json()["message"]
        extra = await raw.get(
            "/api",
            headers={
                "Authorization": f"Bearer {token}",
                "Impersonate-User": "alice",
                "Impersonate-Extra-Scopes": "view",
            },
            auth=False,
        )
        assert extra.status == 403
    await kubectl.run(
        "create",
        "clusterrole",
        "impersonate-alice",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=alice",
    )
    await kubectl.run(
        "create",
        "clusterrolebinding",
        "robot-impersonates",
        "--clusterrole=impersonate-alice",
        "--serviceaccount=default:robot",
    )
    assert whoami((await bot.run("auth", "whoami", "--as", "alice")).out)["Username"] == "alice"
    async with connect(server) as raw:
        group = await raw.get(
            "/api",
            headers={
                "Authorization": f"Bearer {token}",
                "Impersonate-User": "alice",
                "Impersonate-Group": "admins",
            },
            auth=False,
        )
        assert group.json()["message"] == (
            f'groups "admins" is forbidden: User "{ROBOT}" cannot impersonate resource '
            '"groups" in API group "" at the cluster scope'
        )


async def test_granting_what_one_does_not_hold_is_refused(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    bot = await robot(server, kubectl, tmp_path)
    await kubectl.run(
        "create", "role", "rbac-writer", "--verb=create,get,update", "--resource=roles,rolebindings"
    )
    await kubectl.run(
        "create",
        "rolebinding",
        "robot-writes-rbac",
        "--role=rbac-writer",
        "--serviceaccount=default:robot",
    )
    # Rules the robot holds itself may be handed on.
    await bot.run("create", "role", "reader-too", "--verb=get", "--resource=pods")
    escalation = await bot.run(
        "create", "role", "secret-remover", "--verb=delete,get", "--resource=secrets", check=False
    )
    assert escalation.code == 1
    assert escalation.err.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "secret-remover" is '
        f'forbidden: user "{ROBOT}" (groups={ROBOT_GROUPS}) is attempting to grant RBAC '
        "permissions not currently held:\n"
        '{APIGroups:[""], Resources:["secrets"], Verbs:["delete" "get"]}'
    )
    binding = await bot.run(
        "create",
        "rolebinding",
        "robot-admin",
        "--clusterrole=cluster-admin",
        "--serviceaccount=default:robot",
        check=False,
    )
    assert 'rolebindings.rbac.authorization.k8s.io "robot-admin" is forbidden' in binding.err
    assert "is attempting to grant RBAC permissions not currently held" in binding.err
    # Binding a role it holds is fine; so is any role once it may `bind` it.
    await bot.run(
        "create", "rolebinding", "robot-again", "--role=pod-reader", "--serviceaccount=default:x"
    )
    await kubectl.run(
        "create",
        "role",
        "binder",
        "--verb=bind",
        "--resource=clusterroles",
        "--resource-name=cluster-admin",
    )
    await kubectl.run(
        "create", "rolebinding", "robot-binds", "--role=binder", "--serviceaccount=default:robot"
    )
    await bot.run(
        "create",
        "rolebinding",
        "robot-admin",
        "--clusterrole=cluster-admin",
        "--serviceaccount=default:robot",
    )
    # ... which now lets it do anything in default, but still nothing cluster-wide.
    assert (await bot.run("auth", "can-i", "delete", "secrets")).out.strip() == "yes"
    cluster = await bot.run("get", "nodes", check=False)
    assert 'cannot list resource "nodes" in API group "" at the cluster scope' in cluster.err


async def test_client_certificates_name_the_user_and_groups(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    import yaml

    config = tmp_path / "alice.yaml"
    config.write_text(yaml.safe_dump(server.user_kubeconfig_dict("alice", ("team-a", "qa"))))
    cache = tmp_path / "alice-cache"
    cache.mkdir()
    alice = Kubectl(config, cache_dir=cache, env={"HOME": str(cache)})
    assert whoami((await alice.run("auth", "whoami")).out) == {
        "Username": "alice",
        "Groups": "[team-a qa system:authenticated]",
    }
    refused = await alice.run("get", "configmaps", check=False)
    assert 'User "alice" cannot list resource "configmaps"' in refused.err
    await kubectl.run(
        "create", "rolebinding", "team-a-views", "--clusterrole=cluster-admin", "--group=team-a"
    )
    await alice.run("get", "configmaps")


async def test_anonymous_requests_get_what_the_bootstrap_roles_grant(tmp_path: Path) -> None:
    async with APIServer(ServerConfig(anonymous_paths=None)) as server, connect(server) as raw:
        assert (await raw.get("/healthz", auth=False)).status == 200
        version = await raw.get("/version", auth=False)
        assert version.status == 200
        assert version.json()["gitVersion"].startswith("v1.")
        discovery = await raw.get("/api", auth=False)
        assert discovery.status == 403
        assert discovery.json()["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/api"'
        )
        pods = await raw.get("/api/v1/namespaces/default/pods", auth=False)
        assert pods.status == 403
        wrong = await raw.get("/healthz", headers={"Authorization": "Bearer nope"}, auth=False)
        assert wrong.status == 401


async def test_access_reviews_check_their_input(http: HTTPClient) -> None:
    base = "/apis/authorization.k8s.io/v1"
    sar = await http.post(
        f"{base}/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
        },
    )
    assert sar.status == 422
    allowed = await http.post(
        f"{base}/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "someone",
                "groups": ["system:authenticated"],
                "nonResourceAttributes": {"verb": "get", "path": "/version"},
            },
        },
    )
    assert allowed.json()["status"]["allowed"] is True
    assert allowed.json()["status"]["reason"] == (
        'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole '
        '"system:discovery" to Group "system:authenticated"'
    )
    local = await http.post(
        f"{base}/namespaces/default/localsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "LocalSubjectAccessReview",
            "spec": {
                "user": "someone",
                "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"},
            },
        },
    )
    assert local.status == 400
    assert local.json()["message"] == (
        "spec.resourceAttributes.namespace must match namespace: default"
    )
    missing_role = await http.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "dangling"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "nothing",
            },
            "subjects": [{"kind": "User", "name": "someone"}],
        },
    )
    assert missing_role.status == 201
    denied = await http.post(
        f"{base}/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": "someone", "resourceAttributes": {"verb": "get", "resource": "pods"}},
        },
    )
    assert denied.json()["status"] == {
        "allowed": False,
        "reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "nothing" not found',
    }


async def test_resource_names_allow_a_watch_of_one_object_only(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, tmp_path: Path
) -> None:
    await kubectl.run("create", "serviceaccount", "one")
    await kubectl.run(
        "create",
        "role",
        "one-map",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "--resource-name=settings",
    )
    await kubectl.run(
        "create", "rolebinding", "one-map", "--role=one-map", "--serviceaccount=default:one"
    )
    await kubectl.run("create", "configmap", "settings", "--from-literal=a=b")
    token = (await kubectl.run("create", "token", "one")).out.strip()
    auth = {"Authorization": f"Bearer {token}"}
    base = "/api/v1/namespaces/default/configmaps"
    assert (await http.get(f"{base}/settings", headers=auth, auth=False)).status == 200
    assert (await http.get(f"{base}/other", headers=auth, auth=False)).status == 403
    assert (await http.get(base, headers=auth, auth=False)).status == 403
    one = await http.get(f"{base}?fieldSelector=metadata.name%3Dsettings", headers=auth, auth=False)
    assert one.status == 200
    assert [i["metadata"]["name"] for i in one.json()["items"]] == ["settings"]


async def test_node_bound_tokens_end_with_their_node(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, tmp_path: Path
) -> None:
    await kubectl.run("create", "serviceaccount", "agent")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker"}}
    assert (await http.post("/api/v1/nodes", node)).status == 201
    reply = await http.post(
        "/api/v1/namespaces/default/serviceaccounts/agent/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "worker"}},
        },
    )
    assert reply.status == 201
    token = reply.json()["status"]["token"]
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }
    answer = (await http.post("/apis/authentication.k8s.io/v1/tokenreviews", review)).json()
    assert answer["status"]["user"]["extra"]["authentication.kubernetes.io/node-name"] == ["worker"]
    assert (await http.delete("/api/v1/nodes/worker")).status == 200
    answer = (await http.post("/apis/authentication.k8s.io/v1/tokenreviews", review)).json()
    assert answer["status"] == {"user": {}, "error": "service account token has been invalidated"}
