"""Escalation checks on RBAC writes that only a user holding some rights can make: changing a
ClusterRole's aggregationRule, and the `escalate` verb limited to some role names."""

from __future__ import annotations

from tests.support import RBAC, HTTPClient, Reply, cluster_role, grant

CLUSTERROLES = f"{RBAC}/clusterroles"
MERGE = "application/merge-patch+json"
AGGREGATION_REFUSED = "must have cluster-admin privileges to use the aggregationRule"


def as_user(user: str) -> dict[str, str]:
    return {"Impersonate-User": user}


def refused(reply: Reply, name: str, why: str) -> None:
    assert reply.status == 403, reply.body
    assert reply.json()["message"] == (
        f'clusterroles.rbac.authorization.k8s.io "{name}" is forbidden: {why}'
    )


EDIT_CLUSTERROLES = {
    "apiGroups": ["rbac.authorization.k8s.io"],
    "resources": ["clusterroles"],
    "verbs": ["get", "create", "update", "patch"],
}


async def test_changing_or_removing_an_aggregation_rule_needs_full_authority(
    http: HTTPClient,
) -> None:
    await grant(http, "alice", [EDIT_CLUSTERROLES])
    alice = as_user("alice")
    view = (await http.get(f"{CLUSTERROLES}/view")).json()

    # Detaching `view` from aggregation (or `admin`, `edit`) is refused, as changing it is.
    detach = await http.patch(
        f"{CLUSTERROLES}/view", {"aggregationRule": None}, MERGE, headers=alice
    )
    refused(detach, "view", AGGREGATION_REFUSED)
    replaced = {"clusterRoleSelectors": [{"matchLabels": {"mine": "true"}}]}
    change = await http.patch(
        f"{CLUSTERROLES}/view", {"aggregationRule": replaced}, MERGE, headers=alice
    )
    refused(change, "view", AGGREGATION_REFUSED)
    put = dict(view)
    del put["aggregationRule"]
    refused(await http.put(f"{CLUSTERROLES}/view", put, headers=alice), "view", AGGREGATION_REFUSED)
    assert (await http.get(f"{CLUSTERROLES}/view")).json()["aggregationRule"] == view[
        "aggregationRule"
    ]
    # Creating an aggregated role is refused too, with the role's name.
    created = await http.post(
        CLUSTERROLES, cluster_role("gathering", [], aggregationRule=replaced), headers=alice
    )
    refused(created, "gathering", AGGREGATION_REFUSED)
    # Roles without one stay hers to write.
    plain = await http.post(CLUSTERROLES, cluster_role("plain", []), headers=alice)
    assert plain.status == 201, plain.body
    labelled = await http.patch(
        f"{CLUSTERROLES}/plain", {"metadata": {"labels": {"a": "b"}}}, MERGE, headers=alice
    )
    assert labelled.status == 200, labelled.body

    # Holding every right (cluster-admin, without being system:masters) is enough ...
    await grant(
        http,
        "root",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    )
    detached = await http.patch(
        f"{CLUSTERROLES}/edit", {"aggregationRule": None}, MERGE, headers=as_user("root")
    )
    assert detached.status == 200, detached.body
    assert "aggregationRule" not in detached.json()
    # ... and so is the `escalate` verb on clusterroles.
    await grant(http, "carol", [{**EDIT_CLUSTERROLES, "verbs": ["patch", "escalate"]}])
    detached = await http.patch(
        f"{CLUSTERROLES}/view", {"aggregationRule": None}, MERGE, headers=as_user("carol")
    )
    assert detached.status == 200, detached.body


async def test_escalate_limited_to_a_name_does_not_create_a_role_of_that_name(
    http: HTTPClient,
) -> None:
    # kube-apiserver asks about `escalate` with the request's name, which a create has not.
    escalate_one = {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["clusterroles"],
        "resourceNames": ["limited"],
        "verbs": ["escalate"],
    }
    await grant(http, "bob", [EDIT_CLUSTERROLES, escalate_one])
    bob = as_user("bob")
    secrets = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}]
    created = await http.post(CLUSTERROLES, cluster_role("limited", secrets), headers=bob)
    assert created.status == 403, created.body
    assert (
        "is attempting to grant RBAC permissions not currently held" in (created.json()["message"])
    )
    assert (await http.get(f"{CLUSTERROLES}/limited")).status == 404

    # Once the role exists, the verb lets him change that role, and no other.
    assert (await http.post(CLUSTERROLES, cluster_role("limited", []))).status == 201
    assert (await http.post(CLUSTERROLES, cluster_role("other", []))).status == 201
    changed = await http.patch(f"{CLUSTERROLES}/limited", {"rules": secrets}, MERGE, headers=bob)
    assert changed.status == 200, changed.body
    other = await http.patch(f"{CLUSTERROLES}/other", {"rules": secrets}, MERGE, headers=bob)
    assert other.status == 403, other.body
