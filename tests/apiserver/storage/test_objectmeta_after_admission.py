"""What a mutating webhook answers is held to the rules a client's own write is held to: the
metadata the server owns is restored or refused as kube-apiserver's BeforeCreate and
BeforeUpdate do it (k8s.io/apiserver pkg/registry/rest/create.go and update.go)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support import HTTPClient
from tests.support.admission import (
    MUTATING,
    WebhookServer,
    allow,
    configmap,
    deployment,
    mutating,
    patch,
    rule,
    webhook,
    webhook_server,
)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
FORGED_TIME = "2000-01-01T00:00:00Z"
INVALID_MANAGED_FIELDS = (
    ".metadata.managedFields was in an invalid state after admission; this could be caused by "
    "an outdated mutating admission controller; please fix your requests: "
)

# What the webhook writes into metadata, by the name the object's `forge` label gives.
FORGERIES: dict[str, Any] = {
    "uid": "forged-uid",
    "creationTimestamp": FORGED_TIME,
    "deletionTimestamp": FORGED_TIME,
    "deletionGracePeriodSeconds": 5,
    "generation": 42,
    "resourceVersion": "1",
    "selfLink": "/forged",
    "managedFields": [
        {"manager": "forger", "operation": "Forge", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    ],
}


def forge(request: dict[str, Any]) -> dict[str, Any]:
    """Set (or, for `remove-<field>`, remove) the metadata field the object's label names."""
    labels = (request["object"].get("metadata") or {}).get("labels") or {}
    field = labels.get("forge", "")
    if field.startswith("remove-"):
        return patch({"op": "remove", "path": f"/metadata/{field[len('remove-') :]}"})
    if field not in FORGERIES:
        return allow(request)
    return patch({"op": "add", "path": f"/metadata/{field}", "value": FORGERIES[field]})


@pytest.fixture
async def forger(http: HTTPClient) -> AsyncIterator[WebhookServer]:
    async with webhook_server() as hooks:
        hooks.route("/forge", forge)
        rules = [
            rule(["configmaps"], operations=["CREATE", "UPDATE"]),
            rule(["deployments"], operations=["CREATE", "UPDATE"], groups=["apps"]),
        ]
        config = mutating("forger", webhook("forge.example.com", hooks, "/forge", rules))
        assert (await http.post(MUTATING, config)).status == 201
        yield hooks


def labelled(obj: dict[str, Any], field: str) -> dict[str, Any]:
    obj["metadata"]["labels"] = {"forge": field}
    return obj


async def relabel(http: HTTPClient, path: str, field: str) -> Any:
    return await http.patch(path, {"metadata": {"labels": {"forge": field}}}, MERGE)


async def test_a_webhook_cannot_forge_server_metadata_on_create(
    http: HTTPClient, forger: WebhookServer
) -> None:
    for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        reply = await http.post(CONFIGMAPS, labelled(configmap(f"cm-{field.lower()}"), field))
        assert reply.status == 201, reply.body
        stored = (await http.get(f"{CONFIGMAPS}/cm-{field.lower()}")).json()["metadata"]
        assert stored.get(field) != FORGERIES[field], field
        # A new object: fresh uid and creation time, nothing deleting about it.
        assert stored["uid"] != "forged-uid"
        assert stored["creationTimestamp"] != FORGED_TIME
        assert "deletionTimestamp" not in stored
        assert "deletionGracePeriodSeconds" not in stored

    reply = await http.post(CONFIGMAPS, labelled(configmap("cm-selflink"), "selfLink"))
    assert reply.status == 201
    assert "selfLink" not in reply.json()["metadata"]

    created = await http.post(DEPLOYMENTS, labelled(deployment("web"), "generation"))
    assert created.status == 201, created.body
    assert created.json()["metadata"]["generation"] == 1

    # A resourceVersion on a new object is refused whoever set it.
    reply = await http.post(CONFIGMAPS, labelled(configmap("cm-rv"), "resourceVersion"))
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == "resourceVersion should not be set on objects to be created"
    assert (await http.get(f"{CONFIGMAPS}/cm-rv")).status == 404

    # Managed fields a webhook broke are put back as they were, with kube's warning.
    reply = await http.post(
        CONFIGMAPS + "?fieldManager=tester", labelled(configmap("cm-mf"), "managedFields")
    )
    assert reply.status == 201, reply.body
    assert reply.headers["Warning"].startswith(f'299 - "{INVALID_MANAGED_FIELDS}')
    managers = [e["manager"] for e in reply.json()["metadata"]["managedFields"]]
    assert managers == ["tester"]


async def test_a_webhook_cannot_forge_server_metadata_on_update(
    http: HTTPClient, forger: WebhookServer
) -> None:
    assert (await http.post(CONFIGMAPS, configmap("cm", data={"a": "1"}))).status == 201
    path = f"{CONFIGMAPS}/cm"
    original = (await http.get(path)).json()["metadata"]

    # Refused, as a client's own attempt is: the uid and the deletion state are immutable.
    for field in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds"):
        reply = await relabel(http, path, field)
        assert reply.status == 422, (field, reply.body)
        assert reply.json()["reason"] == "Invalid"
        (cause,) = reply.json()["details"]["causes"]
        assert cause["field"] == f"metadata.{field}"
        assert cause["message"].endswith("field is immutable"), cause
    # The message shows the value as kube-apiserver's field errors print it.
    reply = await relabel(http, path, "deletionTimestamp")
    assert reply.json()["message"] == (
        'ConfigMap "cm" is invalid: metadata.deletionTimestamp: Invalid value: '
        "2000-01-01 00:00:00 +0000 UTC: field is immutable"
    )
    reply = await relabel(http, path, "deletionGracePeriodSeconds")
    assert reply.json()["message"] == (
        'ConfigMap "cm" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 5: '
        "field is immutable"
    )
    # A resourceVersion the object no longer has is a conflict.
    reply = await relabel(http, path, "resourceVersion")
    assert reply.status == 409, reply.body
    assert reply.json()["reason"] == "Conflict"
    stored = (await http.get(path)).json()["metadata"]
    assert stored["resourceVersion"] == original["resourceVersion"]
    assert "deletionTimestamp" not in stored

    # Restored: the creation time, and what a webhook removes that the server keeps.
    for field in ("creationTimestamp", "remove-creationTimestamp", "remove-uid", "selfLink"):
        reply = await relabel(http, path, field)
        assert reply.status == 200, (field, reply.body)
        meta = reply.json()["metadata"]
        assert meta["uid"] == original["uid"]
        assert meta["creationTimestamp"] == original["creationTimestamp"]
        assert "selfLink" not in meta

    reply = await relabel(http, path, "managedFields")
    assert reply.status == 200, reply.body
    assert reply.headers["Warning"].startswith(f'299 - "{INVALID_MANAGED_FIELDS}')
    assert all(
        e["operation"] in ("Apply", "Update") for e in reply.json()["metadata"]["managedFields"]
    )

    # Generation: only the server moves it, and only when the spec changes.
    assert (await http.post(DEPLOYMENTS, deployment("web"))).status == 201
    web = f"{DEPLOYMENTS}/web"
    reply = await relabel(http, web, "generation")
    assert reply.status == 200, reply.body
    assert reply.json()["metadata"]["generation"] == 1
    reply = await http.patch(
        web, {"metadata": {"labels": {"forge": "generation"}}, "spec": {"replicas": 3}}, MERGE
    )
    assert reply.json()["metadata"]["generation"] == 2
    # A PUT is held to the same rules as a patch.
    current = (await http.get(web)).json()
    current["metadata"]["labels"] = {"forge": "generation", "put": "yes"}
    reply = await http.put(web, current)
    assert reply.status == 200, reply.body
    assert reply.json()["metadata"]["generation"] == 2


async def test_a_webhook_cannot_undo_or_move_a_deletion(
    http: HTTPClient, forger: WebhookServer
) -> None:
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert (await http.post(CONFIGMAPS, held)).status == 201
    path = f"{CONFIGMAPS}/held"
    assert (await http.delete(path)).status == 200
    deleting = (await http.get(path)).json()["metadata"]
    assert deleting["deletionTimestamp"]

    # Removing or replacing the deletion timestamp leaves it as it was.
    for field in (
        "remove-deletionTimestamp",
        "deletionTimestamp",
        "remove-deletionGracePeriodSeconds",
    ):
        reply = await relabel(http, path, field)
        assert reply.status == 200, (field, reply.body)
        meta = reply.json()["metadata"]
        assert meta["deletionTimestamp"] == deleting["deletionTimestamp"]
        assert meta["deletionGracePeriodSeconds"] == deleting["deletionGracePeriodSeconds"]
    # A different grace period is refused.
    reply = await relabel(http, path, "deletionGracePeriodSeconds")
    assert reply.status == 422, reply.body
    assert reply.json()["details"]["causes"][0]["field"] == "metadata.deletionGracePeriodSeconds"

    # The object still leaves once its finalizer goes.
    reply = await http.patch(path, {"metadata": {"finalizers": None}}, MERGE)
    assert reply.status == 200, reply.body
    assert (await http.get(path)).status == 404
