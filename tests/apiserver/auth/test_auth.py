"""Authentication and RBAC in the embedded API server, driven with kubectl and raw requests
as a cluster user would see them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import orjson
import pytest
import yaml

from kubeforge._apiserver.auth.tokens import LEEWAY
from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.kubeconfig import write_kubeconfig
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl
from tests.support import HTTPClient, connect

pytestmark = pytest.mark.kubectl

ROBOT = "system:serviceaccount:default:robot"
ACCOUNT = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}
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


async def test_an_expired_token_is_refused_and_an_early_one_too(
    server: APIServer, http: HTTPClient, kubectl: Kubectl, tmp_path: Path
) -> None:
    # The server's token clock is moved rather than waited on: TokenRequest dates the token
    # by it, and every later request judges `exp` and `nbf` by it (with upstream's minute of
    # leeway for clock skew).
    now = time.time()
    issuer = server.auth.issuer
    issuer.clock = lambda: now
    await robot(server, kubectl, tmp_path)
    token = (await kubectl.run("create", "token", "robot", "--duration=10m")).out.strip()
    short = as_token(server, token, tmp_path, "short")
    auth = {"Authorization": f"Bearer {token}"}
    pods = "/api/v1/namespaces/default/pods"
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }
    reviews = "/apis/authentication.k8s.io/v1/tokenreviews"
    assert (await short.run("get", "pods", "-o", "name")).code == 0  # now remembered

    issuer.clock = lambda: now + 600 + LEEWAY - 1  # past exp, within the leeway
    assert (await http.get(pods, headers=auth, auth=False)).status == 200
    issuer.clock = lambda: now + 600 + LEEWAY + 1
    expired = await http.get(pods, headers=auth, auth=False)
    assert expired.status == 401
    assert expired.json()["reason"] == "Unauthorized"
    answer = (await http.post(reviews, review)).json()["status"]
    assert answer == {"user": {}, "error": "service account token has expired"}
    refused = await short.run("get", "pods", check=False)
    assert refused.code == 1
    assert "You must be logged in to the server (Unauthorized)" in refused.err

    # A token dated ahead of the server's clock (beyond the leeway) is not valid yet.
    issuer.clock = lambda: now
    early = (await kubectl.run("create", "token", "robot")).out.strip()
    issuer.clock = lambda: now - LEEWAY - 1
    too_soon = await http.get(pods, headers={"Authorization": f"Bearer {early}"}, auth=False)
    assert too_soon.status == 401
    review["spec"] = {"token": early}
    answer = (await http.post(reviews, review)).json()["status"]
    assert answer == {"user": {}, "error": "service account token is not valid yet"}
    issuer.clock = lambda: now
    assert (await http.post(reviews, review)).json()["status"]["authenticated"] is True


async def test_a_token_issued_in_the_future_is_refused(server: APIServer, http: HTTPClient) -> None:
    # kube-apiserver's validator (pkg/serviceaccount/claims.go) refuses an `iat` later than
    # its clock plus go-jose's minute of leeway, after checking nbf and exp.
    account = await http.post("/api/v1/namespaces/default/serviceaccounts", ACCOUNT)
    uid = account.json()["metadata"]["uid"]
    issuer = server.auth.issuer
    now = time.time()
    issuer.clock = lambda: now

    def signed(iat: float, exp: float) -> str:
        claims = {
            "aud": [issuer.issuer],
            "exp": int(exp),
            "iat": int(iat),
            "iss": issuer.issuer,
            "jti": f"future-{iat}",
            "kubernetes.io": {
                "namespace": "default",
                "serviceaccount": {"name": "robot", "uid": uid},
            },
            "nbf": int(now) - 10,
            "sub": ROBOT,
        }
        return jwt.encode(claims, issuer.key, algorithm="ES256", headers={"kid": issuer.key_id})

    async def review(token: str) -> dict[str, Any]:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        reply = await http.post("/apis/authentication.k8s.io/v1/tokenreviews", body)
        status: dict[str, Any] = reply.json()["status"]
        return status

    within = signed(now + LEEWAY - 1, now + 600)
    assert (await review(within))["authenticated"] is True
    future = signed(now + LEEWAY + 1, now + 600)
    assert await review(future) == {
        "user": {},
        "error": "service account token is issued in the future",
    }
    refused = await http.get(
        "/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {future}"}, auth=False
    )
    assert refused.status == 401
    assert refused.json()["reason"] == "Unauthorized"
    # Expiry is judged first.
    stale = signed(now + LEEWAY + 1, now - LEEWAY - 1)
    assert (await review(stale))["error"] == "service account token has expired"
    # The same token once the clock has caught up.
    issuer.clock = lambda: now + 2
    assert (await review(future))["authenticated"] is True


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
    # One group per header line, a comma inside a group's name included, as Go reads them.
    as_two = await kubectl.run(
        "auth", "whoami", "--as", "alice", "--as-group", "team-a,b", "--as-group", "team-c"
    )
    assert whoami(as_two.out)["Groups"] == "[team-a,b team-c system:authenticated]"

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


async def test_impersonating_a_uid_or_extras_needs_the_verb_on_each(
    server: APIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    # As kube-apiserver's impersonation filter: a uid is checked as `uids` and each extra
    # value as `userextras/<key>` (both in authentication.k8s.io, the value as the name).
    bot = await robot(server, kubectl, tmp_path)
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
    token = (await kubectl.run("create", "token", "robot")).out.strip()
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    reviews = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    as_alice = {"Authorization": f"Bearer {token}", "Impersonate-User": "alice"}
    async with connect(server) as raw:
        uid = await raw.post(
            reviews, review, headers={**as_alice, "Impersonate-Uid": "alice-1"}, auth=False
        )
        assert uid.status == 403
        assert uid.json()["message"] == (
            f'uids.authentication.k8s.io "alice-1" is forbidden: User "{ROBOT}" cannot '
            'impersonate resource "uids" in API group "authentication.k8s.io" at the cluster '
            "scope"
        )
        extra = await raw.post(
            reviews, review, headers={**as_alice, "Impersonate-Extra-Scopes": "view"}, auth=False
        )
        assert extra.status == 403
        assert extra.json()["message"] == (
            f'userextras.authentication.k8s.io "view" is forbidden: User "{ROBOT}" cannot '
            'impersonate resource "userextras/scopes" in API group "authentication.k8s.io" '
            "at the cluster scope"
        )
        alone = await raw.post(reviews, review, headers=as_alice, auth=False)
        assert alone.json()["status"]["userInfo"] == {
            "username": "alice",
            "groups": ["system:authenticated"],
        }

    await kubectl.apply(
        """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: impersonate-alice-details
rules:
- apiGroups: [authentication.k8s.io]
  resources: [uids]
  resourceNames: [alice-1]
  verbs: [impersonate]
- apiGroups: [authentication.k8s.io]
  resources: [userextras/scopes, userextras/example.com/team]
  verbs: [impersonate]
"""
    )
    await kubectl.run(
        "create",
        "clusterrolebinding",
        "robot-impersonates-details",
        "--clusterrole=impersonate-alice-details",
        "--serviceaccount=default:robot",
    )
    me = whoami((await bot.run("auth", "whoami", "--as", "alice", "--as-uid", "alice-1")).out)
    assert me == {"Username": "alice", "UID": "alice-1", "Groups": "[system:authenticated]"}
    async with connect(server) as raw:
        # The grant names one uid; a key of extras not granted stays refused.
        other = await raw.post(
            reviews, review, headers={**as_alice, "Impersonate-Uid": "bob-1"}, auth=False
        )
        assert other.json()["message"].startswith(
            'uids.authentication.k8s.io "bob-1" is forbidden: '
        )
        project = await raw.post(
            reviews,
            review,
            headers={
                **as_alice,
                "Impersonate-Extra-Scopes": "view",
                "Impersonate-Extra-Project": "x",
            },
            auth=False,
        )
        assert project.json()["message"] == (
            f'userextras.authentication.k8s.io "x" is forbidden: User "{ROBOT}" cannot '
            'impersonate resource "userextras/project" in API group "authentication.k8s.io" '
            "at the cluster scope"
        )

    # kubectl sends a kubeconfig's extras one header per value, the key path-escaped; the
    # server sees the key lower-cased and unescaped, as kube-apiserver does.
    config = yaml.safe_load((tmp_path / "kubeconfig-robot").read_text())
    config["users"][0]["user"].update(
        {"as": "alice", "as-user-extra": {"Scopes": ["view", "edit"], "example.com/team": ["a"]}}
    )
    extras_config = tmp_path / "kubeconfig-extras"
    extras_config.write_text(yaml.safe_dump(config))
    extras = Kubectl(extras_config, cache_dir=tmp_path / "cache-robot")
    created = ("create", "--validate=false", "-f", "-", "-o", "json")
    shown = await extras.run(*created, stdin=orjson.dumps(review).decode())
    assert orjson.loads(shown.out)["status"]["userInfo"] == {
        "username": "alice",
        "groups": ["system:authenticated"],
        "extra": {"scopes": ["view", "edit"], "example.com/team": ["a"]},
    }


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


async def test_openapi_is_authorized_as_a_non_resource_url(tmp_path: Path) -> None:
    # Upstream's bootstrap policy: system:discovery (bound to system:authenticated) grants
    # `get` on /openapi and /openapi/*; system:public-info-viewer, which anonymous users
    # also hold, covers only health and version. So the documents need a signed-in user
    # holding a nonResourceURLs rule for their path.
    documents = ("/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1")
    async with APIServer(ServerConfig(anonymous_paths=None)) as server, connect(server) as raw:
        for path in documents:
            anonymous = await raw.get(path, auth=False)
            assert anonymous.status == 403, path
            assert anonymous.json()["message"] == (
                f'forbidden: User "system:anonymous" cannot get path "{path}"'
            )

        assert (await raw.post("/api/v1/namespaces/default/serviceaccounts", ACCOUNT)).status == 201
        reply = await raw.post("/api/v1/namespaces/default/serviceaccounts/robot/token", {})
        auth = {"Authorization": f"Bearer {reply.json()['status']['token']}"}
        for path in documents:
            assert (await raw.get(path, headers=auth, auth=False)).status == 200, path

        # Without system:discovery's binding the robot is refused, as any user without a rule
        # for the path; a rule for /openapi/v2 alone then opens that document and no other.
        binding = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:discovery"
        assert (await raw.delete(binding)).status == 200
        for path in documents:
            refused = await raw.get(path, headers=auth, auth=False)
            assert refused.status == 403, path
            assert (
                refused.json()["message"] == f'forbidden: User "{ROBOT}" cannot get path "{path}"'
            )
        assert (await raw.get("/version", headers=auth, auth=False)).status == 200
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        role = {
            "metadata": {"name": "openapi-v2"},
            "rules": [{"nonResourceURLs": ["/openapi/v2"], "verbs": ["get"]}],
        }
        assert (await raw.post(f"{rbac}/clusterroles", role)).status == 201
        grant = {
            "metadata": {"name": "robot-reads-openapi-v2"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "openapi-v2",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
        }
        assert (await raw.post(f"{rbac}/clusterrolebindings", grant)).status == 201
        assert (await raw.get("/openapi/v2", headers=auth, auth=False)).status == 200
        assert (await raw.get("/openapi/v3", headers=auth, auth=False)).status == 403


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
    # As ValidateLocalSubjectAccessReview: a local review asks about its own namespace.
    assert local.status == 422
    assert local.json()["message"] == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: '
        'spec.resourceAttributes.namespace: Invalid value: "other": must match '
        "metadata.namespace"
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


async def test_a_local_access_review_asks_about_resources_only(http: HTTPClient) -> None:
    # ValidateLocalSubjectAccessReview refuses nonResourceAttributes: a namespace's admin
    # (who may create local reviews there) must not learn about paths through one.
    local = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews"

    def review(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "LocalSubjectAccessReview",
            "spec": {"user": "someone", **spec},
        }
        if meta:
            body["metadata"] = meta
        return body

    path = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    reply = await http.post(local, review(path))
    assert reply.status == 422, reply.body
    status = reply.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: '
        "spec.nonResourceAttributes: Invalid value: "
        'authorization.NonResourceAttributes{Path:"/metrics", Verb:"get"}: disallowed on this '
        "kind of request"
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.nonResourceAttributes"]
    # Together with resourceAttributes, both rules are reported.
    both = {
        **path,
        "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"},
    }
    reply = await http.post(local, review(both))
    assert reply.status == 422
    assert [c["field"] for c in reply.json()["details"]["causes"]] == [
        "spec.nonResourceAttributes",
        "spec.nonResourceAttributes",
    ]
    # A cluster-wide review may ask about paths; a local one about its namespace's resources.
    cluster = await http.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {**review(path), "kind": "SubjectAccessReview"},
    )
    assert cluster.status == 201, cluster.body
    pods = {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}
    assert (await http.post(local, review(pods))).status == 201
    elsewhere = await http.post(local, review(pods, namespace="other"))
    assert elsewhere.status == 400
    assert elsewhere.json()["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


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
