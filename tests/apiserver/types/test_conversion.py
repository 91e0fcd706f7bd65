"""The API server converts custom objects through their CRD's conversion webhook.

Gadgets (tests/support/conversion.py) are stored in v1 and served in v1 and v2, which name their
fields differently; the webhook converts and records every ConversionReview.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeforge._apiserver.config import ServerConfig
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually
from tests.support import HTTPClient, connect, free_port
from tests.support.admission import WebhookServer, never, webhook_server
from tests.support.conversion import (
    CRD_NAME,
    CRDS,
    GROUP,
    PATH,
    V1,
    V2,
    Converter,
    gadget,
    gadget_crd,
)

MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
async def hook() -> AsyncIterator[WebhookServer]:
    async with webhook_server() as srv:
        yield srv


@pytest.fixture
async def converter(http: HTTPClient, hook: WebhookServer) -> Converter:
    conv = Converter(hook)
    await install(http, gadget_crd(hook))
    return conv


async def install(http: HTTPClient, crd: dict[str, Any]) -> None:
    r = await http.post(CRDS, crd)
    assert r.status == 201, r.body

    async def served() -> bool:
        return (await http.get(V2)).status == 200

    await eventually(served)


async def create(http: HTTPClient, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    r = await http.post(path, obj)
    assert r.status == 201, r.body
    created: dict[str, Any] = r.json()
    return created


async def test_an_object_stored_in_v1_reads_as_v2_through_the_webhook(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("one", "v1", "red", 3))
    assert converter.reviews == []  # written in the storage version: nothing to convert

    got = (await http.get(f"{V2}/one")).json()
    assert got["apiVersion"] == f"{GROUP}/v2"
    assert got["spec"] == {"colour": "red", "copies": 3}
    (review,) = converter.reviews
    assert review["apiVersion"] == "apiextensions.k8s.io/v1"
    assert review["kind"] == "ConversionReview"
    request = review["request"]
    assert request["desiredAPIVersion"] == f"{GROUP}/v2"
    assert [o["apiVersion"] for o in request["objects"]] == [f"{GROUP}/v1"]
    assert request["objects"][0]["metadata"]["name"] == "one"

    # Reading it in the version it is stored in calls nothing.
    assert (await http.get(f"{V1}/one")).json()["spec"] == {"color": "red", "replicas": 3}
    assert len(converter.reviews) == 1


async def test_a_write_in_v2_is_stored_in_v1_and_answered_in_v2(
    http: HTTPClient, converter: Converter
) -> None:
    created = await create(http, V2, gadget("two", "v2", "blue", 2))
    assert created["apiVersion"] == f"{GROUP}/v2"
    assert created["spec"] == {"colour": "blue", "copies": 2}
    # To the storage version, then the stored object back to v2.
    desired = [r["desiredAPIVersion"] for r in converter.requests()]
    assert desired == [f"{GROUP}/v1", f"{GROUP}/v2"]
    stored = (await http.get(f"{V1}/two")).json()
    assert stored["spec"] == {"color": "blue", "replicas": 2}
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]


async def test_a_list_is_one_review_of_the_objects_stored_in_another_version(
    http: HTTPClient, converter: Converter
) -> None:
    for i in range(5):
        await create(http, V1, gadget(f"g{i}", "v1", count=i))
    await create(http, V2, gadget("native", "v2"))  # stored in v1 too
    before = len(converter.reviews)

    listed = (await http.get(V2)).json()
    assert listed["kind"] == "GadgetList" and listed["apiVersion"] == f"{GROUP}/v2"
    assert [i["spec"]["copies"] for i in listed["items"][:5]] == [0, 1, 2, 3, 4]
    assert all(i["apiVersion"] == f"{GROUP}/v2" for i in listed["items"])
    (request,) = converter.requests()[before:]
    assert len(request["objects"]) == 6

    # Pages are converted one review each.
    page = (await http.get(f"{V2}?limit=4")).json()
    assert len(page["items"]) == 4 and page["metadata"]["continue"]
    assert [len(r["objects"]) for r in converter.requests()[before + 1 :]] == [4]


async def test_a_list_in_the_storage_version_calls_nothing(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("a", "v1"))
    await create(http, V1, gadget("b", "v1"))
    assert len((await http.get(V1)).json()["items"]) == 2
    assert converter.reviews == []


async def test_a_watch_in_either_version_sees_writes_in_the_other(
    http: HTTPClient, converter: Converter
) -> None:
    rv = (await http.get(V1)).json()["metadata"]["resourceVersion"]

    async def watch(path: str) -> list[dict[str, Any]]:
        return await http.watch_lines(
            f"{path}?watch=true&resourceVersion={rv}", lambda events: len(events) >= 2
        )

    v1_watch = asyncio.create_task(watch(V1))
    v2_watch = asyncio.create_task(watch(V2))
    await asyncio.sleep(0.2)  # both watches registered (they replay from rv anyway)
    await create(http, V2, gadget("w", "v2", "green", 1))
    r = await http.patch(f"{V1}/w", {"spec": {"color": "teal"}}, MERGE)
    assert r.status == 200, r.body

    seen_v1, seen_v2 = await asyncio.gather(v1_watch, v2_watch)
    assert [(e["type"], e["object"]["spec"]) for e in seen_v1] == [
        ("ADDED", {"color": "green", "replicas": 1}),
        ("MODIFIED", {"color": "teal", "replicas": 1}),
    ]
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["spec"]) for e in seen_v2] == [
        ("ADDED", f"{GROUP}/v2", {"colour": "green", "copies": 1}),
        ("MODIFIED", f"{GROUP}/v2", {"colour": "teal", "copies": 1}),
    ]


async def test_a_patch_applies_to_the_object_in_the_requests_version(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("p", "v1", "red", 1))
    r = await http.patch(f"{V2}/p", {"spec": {"colour": "blue"}}, MERGE)
    assert r.status == 200, r.body
    assert r.json()["spec"] == {"colour": "blue", "copies": 1}
    assert (await http.get(f"{V1}/p")).json()["spec"] == {"color": "blue", "replicas": 1}

    # A field of the other version is unknown here, and pruned.
    r = await http.patch(f"{V2}/p", {"spec": {"color": "green"}}, MERGE)
    assert r.status == 200
    assert r.json()["spec"] == {"colour": "blue", "copies": 1}


async def test_server_side_apply_in_v2_records_the_manager_in_v2(
    http: HTTPClient, converter: Converter
) -> None:
    applied = {**gadget("s", "v2", "red", 2)}
    r = await http.patch(f"{V2}/s?fieldManager=tool", applied, APPLY)
    assert r.status == 201, r.body
    (entry,) = [e for e in r.json()["metadata"]["managedFields"] if e["manager"] == "tool"]
    assert entry["apiVersion"] == f"{GROUP}/v2"
    assert "f:colour" in entry["fieldsV1"]["f:spec"]
    assert (await http.get(f"{V1}/s")).json()["spec"] == {"color": "red", "replicas": 2}

    again = {**gadget("s", "v2", "red", 5)}
    r = await http.patch(f"{V2}/s?fieldManager=tool", again, APPLY)
    assert r.status == 200, r.body
    assert r.json()["spec"]["copies"] == 5


async def test_a_delete_of_an_object_stored_in_another_version(
    http: HTTPClient, converter: Converter
) -> None:
    created = await create(http, V1, gadget("d", "v1", "red", 1))
    r = await http.delete(f"{V2}/d")
    assert r.status == 200, r.body
    # Custom objects' deletions answer a Status (no conversion needed for that).
    assert r.json()["kind"] == "Status"
    assert r.json()["details"]["uid"] == created["metadata"]["uid"]
    assert (await http.get(f"{V1}/d")).status == 404
    assert converter.reviews == []


async def test_finalizers_keep_a_deleting_object_readable_in_both_versions(
    http: HTTPClient, converter: Converter
) -> None:
    held = gadget("f", "v2", "red", 1)
    held["metadata"]["finalizers"] = ["conv.kubeforge.dev/hold"]
    await create(http, V2, held)
    r = await http.delete(f"{V2}/f")
    assert r.status == 200, r.body
    assert r.json()["metadata"]["deletionTimestamp"]
    assert r.json()["spec"] == {"colour": "red", "copies": 1}
    r = await http.patch(f"{V1}/f", {"metadata": {"finalizers": None}}, MERGE)
    assert r.status == 200, r.body
    assert (await http.get(f"{V2}/f")).status == 404


async def test_status_and_scale_are_read_and_written_in_the_requests_version(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("st", "v1", "red", 2))
    r = await http.patch(f"{V2}/st/status", {"status": {"phase": "Ready", "ready": 2}}, MERGE)
    assert r.status == 200, r.body
    assert r.json()["apiVersion"] == f"{GROUP}/v2"
    got = (await http.get(f"{V2}/st/status")).json()
    assert got["status"] == {"phase": "Ready", "ready": 2} and "copies" in got["spec"]

    # Each version's scale path: spec.copies in v2, spec.replicas in v1.
    scale = (await http.get(f"{V2}/st/scale")).json()
    assert scale["spec"]["replicas"] == 2 and scale["status"]["replicas"] == 2
    r = await http.patch(f"{V2}/st/scale", {"spec": {"replicas": 7}}, MERGE)
    assert r.status == 200, r.body
    assert r.json()["spec"]["replicas"] == 7
    assert (await http.get(f"{V1}/st")).json()["spec"]["replicas"] == 7


async def test_tables_show_the_columns_of_the_requested_version(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("t", "v1", "red", 1))
    table = (await http.get(V2, headers={"Accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]][:2] == ["Name", "Colour"]
    assert table["rows"][0]["cells"][:2] == ["t", "red"]
    one = (await http.get(f"{V2}/t", headers={"Accept": TABLE})).json()
    assert one["rows"][0]["cells"][:2] == ["t", "red"]


async def test_selectors_read_the_objects_in_the_requested_version(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("red", "v1", "red"))
    await create(http, V1, gadget("blue", "v1", "blue"))
    listed = (await http.get(f"{V2}?fieldSelector=spec.colour%3Dblue")).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["blue"]
    # spec.color is v1's field, not v2's.
    r = await http.get(f"{V2}?fieldSelector=spec.color%3Dblue")
    assert r.status == 400

    # A label a conversion adds is what a v2 selector sees.
    def label(request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        for obj in body["response"]["convertedObjects"]:
            if obj["apiVersion"].endswith("/v2") and obj["metadata"]["name"] == "blue":
                obj["metadata"].setdefault("labels", {})["converted"] = "yes"
        return body

    converter.adjust = label
    listed = (await http.get(f"{V2}?labelSelector=converted%3Dyes")).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["blue"]
    assert (await http.get(f"{V1}?labelSelector=converted%3Dyes")).json()["items"] == []

    events = await http.watch_lines(
        f"{V2}?watch=true&fieldSelector=spec.colour%3Dred", lambda events: len(events) >= 1
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["red"]


async def test_a_webhook_that_cannot_be_reached_fails_reads_and_stores_nothing(
    server: APIServer, http: HTTPClient
) -> None:
    unreachable = WebhookServer()
    port = free_port()
    unreachable.port = port
    crd = gadget_crd(unreachable)
    await install(http, crd)
    await create(http, V1, gadget("x", "v1"))

    r = await http.get(f"{V2}/x")
    assert r.status == 500
    status = r.json()
    assert "reason" not in status
    assert status["code"] == 500
    assert status["message"] == (
        f"conversion webhook for {GROUP}/v1, Kind=Gadget failed: Post "
        f'"https://127.0.0.1:{port}{PATH}?timeout=30s": dial tcp 127.0.0.1:{port}: connect: '
        "connection refused"
    )
    r = await http.get(V2)
    assert r.status == 500
    assert r.json()["message"].startswith(f"conversion webhook for {GROUP}/v2, Kind=GadgetList")

    revision = server.store.revision
    r = await http.post(V2, gadget("y", "v2"))
    assert r.status == 500
    assert r.json()["message"].startswith(f"conversion webhook for {GROUP}/v2, Kind=Gadget failed")
    r = await http.patch(f"{V2}/x", {"spec": {"colour": "blue"}}, MERGE)
    assert r.status == 500
    assert server.store.revision == revision
    assert (await http.get(f"{V1}/y")).status == 404
    assert (await http.get(f"{V1}/x")).json()["spec"]["color"] == "red"


async def test_a_webhook_that_hangs_fails_at_the_timeout_and_stores_nothing() -> None:
    # kube-apiserver gives a conversion webhook 30 seconds; this server is given 1.
    async with webhook_server() as hook:
        hook.route(PATH, never)
        server = APIServer(ServerConfig(conversion_webhook_timeout=1))
        async with server, connect(server) as http:
            await install(http, gadget_crd(hook))
            await create(http, V1, gadget("x", "v1"))
            deadline = f'Post "{hook.url(PATH)}?timeout=1s": context deadline exceeded'

            started = asyncio.get_running_loop().time()
            r = await http.get(f"{V2}/x")
            assert asyncio.get_running_loop().time() - started < 10
            assert r.status == 500
            status = r.json()
            assert "reason" not in status
            assert status["message"] == (
                f"conversion webhook for {GROUP}/v1, Kind=Gadget failed: {deadline}"
            )

            revision = server.store.revision
            r = await http.post(V2, gadget("y", "v2"))
            assert r.status == 500
            assert r.json()["message"] == (
                f"conversion webhook for {GROUP}/v2, Kind=Gadget failed: {deadline}"
            )
            assert server.store.revision == revision
            assert (await http.get(f"{V1}/y")).status == 404
        assert len(hook.reviews[PATH]) == 2


@pytest.mark.parametrize(
    ("adjust", "message"),
    [
        (
            lambda req, body: {**body, "response": {**body["response"], "uid": "other"}},
            'failed: expected response.uid="{uid}", got "other"',
        ),
        (
            lambda req, body: {**body, "apiVersion": "apiextensions.k8s.io/v1beta1"},
            "failed: expected webhook response of apiextensions.k8s.io/v1, "
            "Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview",
        ),
        (
            lambda req, body: {
                **body,
                "response": {
                    "uid": req["uid"],
                    "result": {"status": "Failure", "message": "no colour for you"},
                },
            },
            "failed: no colour for you",
        ),
        (
            lambda req, body: {
                **body,
                "response": {"uid": req["uid"], "result": {"status": "Failure"}},
            },
            "failed: response.result.status was 'Failure', not 'Success'",
        ),
        (
            lambda req, body: {**body, "response": None},
            "failed: no response provided",
        ),
        (
            lambda req, body: {
                **body,
                "response": {**body["response"], "convertedObjects": []},
            },
            "returned 0 objects, expected 1",
        ),
    ],
)
async def test_answers_that_are_not_a_successful_review_fail_the_request(
    http: HTTPClient, converter: Converter, adjust: Any, message: str
) -> None:
    await create(http, V1, gadget("m", "v1"))
    converter.adjust = adjust
    r = await http.get(f"{V2}/m")
    assert r.status == 500, r.body
    uid = converter.requests()[-1]["uid"]
    expected = f"conversion webhook for {GROUP}/v1, Kind=Gadget " + message.format(uid=uid)
    assert r.json()["message"] == expected


def _first(body: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = body["response"]["convertedObjects"][0]
    return obj


@pytest.mark.parametrize(
    ("change", "single", "listed"),
    [
        (
            lambda obj: obj.update(apiVersion=f"{GROUP}/v1"),
            f"returned invalid object at index 0: invalid groupVersion (expected {GROUP}/v2, "
            f"received {GROUP}/v1)",
            f"returned invalid converted object at index 0: invalid groupVersion (expected "
            f"{GROUP}/v2, received {GROUP}/v1)",
        ),
        (
            lambda obj: obj.update(kind="Widget"),
            "returned invalid object at index 0: invalid kind (expected Gadget, received Widget)",
            "returned invalid converted object at index 0: invalid kind (expected Gadget, "
            "received Widget)",
        ),
        (
            lambda obj: obj["metadata"].update(name="other"),
            "returned invalid object: must have the same name: m != other",
            "returned invalid converted object at index 0: must have the same name: m != other",
        ),
        (
            lambda obj: obj["metadata"].update(uid="not-it"),
            "returned invalid object: must have the same UID: {uid} != not-it",
            "returned invalid converted object at index 0: must have the same UID: {uid} != not-it",
        ),
        (
            lambda obj: obj["metadata"].update(labels={"bad key!": "x"}),
            'returned invalid metadata: metadata.labels: Invalid value: "bad key!": name part '
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "returned invalid metadata in object at index 0: metadata.labels: Invalid value: "
            '"bad key!": name part must consist of alphanumeric characters',
        ),
    ],
)
async def test_converted_objects_are_held_to_what_was_sent(
    http: HTTPClient, converter: Converter, change: Any, single: str, listed: str
) -> None:
    created = await create(http, V1, gadget("m", "v1"))
    uid = created["metadata"]["uid"]

    def adjust(request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        change(_first(body))
        return body

    converter.adjust = adjust
    r = await http.get(f"{V2}/m")
    assert r.status == 500
    lead = f"conversion webhook for {GROUP}/v1, Kind=Gadget "
    assert r.json()["message"] == lead + single.format(uid=uid)
    r = await http.get(V2)
    assert r.status == 500
    lead = f"conversion webhook for {GROUP}/v2, Kind=GadgetList "
    assert r.json()["message"].startswith(lead + listed.format(uid=uid))


async def test_a_webhook_may_change_labels_and_annotations_but_no_other_metadata(
    http: HTTPClient, converter: Converter
) -> None:
    created = await create(http, V1, gadget("meta", "v1"))

    def adjust(request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        meta = _first(body)["metadata"]
        meta["labels"] = {"converted": "true"}
        meta["annotations"] = {"note": "from the webhook"}
        meta["generation"] = 99
        meta["finalizers"] = ["sneaky/finalizer"]
        return body

    converter.adjust = adjust
    got = (await http.get(f"{V2}/meta")).json()
    assert got["metadata"]["labels"] == {"converted": "true"}
    assert got["metadata"]["annotations"] == {"note": "from the webhook"}
    assert got["metadata"]["generation"] == created["metadata"]["generation"]
    assert "finalizers" not in got["metadata"]
    assert got["metadata"]["managedFields"] == created["metadata"]["managedFields"]


async def test_unknown_fields_a_webhook_returns_are_pruned(
    http: HTTPClient, converter: Converter
) -> None:
    await create(http, V1, gadget("prune", "v1"))

    def adjust(request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        _first(body)["spec"]["colour_extra"] = "dropped"
        return body

    converter.adjust = adjust
    got = (await http.get(f"{V2}/prune")).json()
    assert "colour_extra" not in got["spec"]


async def test_v1beta1_reviews_when_only_v1beta1_is_listed(
    http: HTTPClient, hook: WebhookServer
) -> None:
    converter = Converter(hook)
    await install(http, gadget_crd(hook, review_versions=["v1beta1"]))
    await create(http, V1, gadget("old", "v1"))
    assert (await http.get(f"{V2}/old")).json()["spec"]["colour"] == "red"
    assert converter.reviews[0]["apiVersion"] == "apiextensions.k8s.io/v1beta1"

    # v1beta1 answers are not held to the uid.
    converter.adjust = lambda req, body: {**body, "response": {**body["response"], "uid": "x"}}
    assert (await http.get(f"{V2}/old")).status == 200


async def test_a_ca_bundle_that_did_not_sign_the_webhooks_certificate_fails(
    http: HTTPClient, hook: WebhookServer
) -> None:
    Converter(hook)
    crd = gadget_crd(hook)
    other = WebhookServer()
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = other.ca_bundle
    await install(http, crd)
    await create(http, V1, gadget("tls", "v1"))
    r = await http.get(f"{V2}/tls")
    assert r.status == 500
    assert r.json()["message"].endswith(
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )


async def test_a_service_reference_is_called_on_this_machine(http: HTTPClient) -> None:
    # The webhook's certificate names the service's DNS name, which is what is verified.
    async with webhook_server(("127.0.0.1", "gadget-webhook.default.svc")) as hook:
        converter = Converter(hook)
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "gadget-webhook", "namespace": "default"},
            "spec": {"ports": [{"port": 443, "targetPort": hook.port}]},
        }
        assert (await http.post("/api/v1/namespaces/default/services", service)).status == 201
        crd = gadget_crd(hook)
        crd["spec"]["conversion"]["webhook"]["clientConfig"] = {
            "service": {"name": "gadget-webhook", "namespace": "default", "path": PATH},
            "caBundle": hook.ca_bundle,
        }
        await install(http, crd)
        await create(http, V1, gadget("svc", "v1"))
        assert (await http.get(f"{V2}/svc")).json()["spec"]["colour"] == "red"
        assert len(converter.reviews) == 1


async def test_a_service_reference_leads_where_the_servers_resolver_says() -> None:
    # The development cluster's resolver sends a Service to the port of this machine a pod
    # run as a local process was given; conversion calls follow it as admission calls do.
    async with webhook_server(("127.0.0.1", "gadget-webhook.default.svc")) as hook:
        converter = Converter(hook)
        asked: list[tuple[str, str, int]] = []

        def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
            asked.append((namespace, name, port))
            return "127.0.0.1", hook.port

        # No Service at all: only the resolver knows where the webhook is.
        server = APIServer(ServerConfig(resolve_service=resolve))
        async with server, connect(server) as http:
            crd = gadget_crd(hook)
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = {
                "service": {
                    "name": "gadget-webhook",
                    "namespace": "default",
                    "path": PATH,
                    "port": 8443,
                },
                "caBundle": hook.ca_bundle,
            }
            await install(http, crd)
            await create(http, V1, gadget("routed", "v1", "green"))
            got = (await http.get(f"{V2}/routed")).json()
            assert got["spec"]["colour"] == "green"
        assert asked and set(asked) == {("default", "gadget-webhook", 8443)}
        assert len(converter.reviews) == 1


async def test_objects_stay_in_the_version_they_were_stored_in_until_rewritten(
    server: APIServer, http: HTTPClient, converter: Converter
) -> None:
    old = await create(http, V1, gadget("old", "v1", "red", 1))
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    assert crd["status"]["storedVersions"] == ["v1"]

    # v2 becomes the storage version: v1's objects stay readable, in both versions.
    for version in crd["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    r = await http.put(f"{CRDS}/{CRD_NAME}", crd)
    assert r.status == 200, r.body
    assert r.json()["status"]["storedVersions"] == ["v1", "v2"]
    new = await create(http, V1, gadget("new", "v1", "blue", 2))
    assert server.store.get(_gr(), "default", "new").obj["apiVersion"] == f"{GROUP}/v2"
    assert server.store.get(_gr(), "default", "old").obj["apiVersion"] == f"{GROUP}/v1"
    assert (await http.get(f"{V2}/old")).json()["spec"] == {"colour": "red", "copies": 1}
    assert (await http.get(f"{V1}/new")).json()["spec"] == {"color": "blue", "replicas": 2}

    # v1 cannot leave spec.versions while objects may still be stored in it.
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v2"]
    r = await http.put(f"{CRDS}/{CRD_NAME}", crd)
    assert r.status == 422
    assert r.json()["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "{CRD_NAME}" is invalid: '
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was '
        "previously a storage version, and must remain in spec.versions until a storage "
        "migration ensures no data remains persisted in v1 and removes v1 from "
        "status.storedVersions"
    )

    # An unchanged object stored in v1 is written again in v2 (a new resourceVersion); one
    # already stored in v2 is left alone.
    r = await http.put(f"{V1}/old", (await http.get(f"{V1}/old")).json())
    assert r.status == 200, r.body
    assert r.json()["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert server.store.get(_gr(), "default", "old").obj["apiVersion"] == f"{GROUP}/v2"
    r = await http.put(f"{V1}/new", (await http.get(f"{V1}/new")).json())
    assert r.json()["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]


def _gr() -> Any:
    from kubeforge._apiserver.types.resource import GroupResource

    return GroupResource(GROUP, "gadgets")


async def test_an_unchanged_object_in_an_old_version_is_rewritten_without_a_webhook_too(
    server: APIServer, http: HTTPClient
) -> None:
    hook = WebhookServer()
    crd = gadget_crd(hook)
    crd["spec"]["conversion"] = {"strategy": "None"}
    # Under the None strategy the versions must hold the same fields.
    crd["spec"]["versions"][1] = {**crd["spec"]["versions"][0], "name": "v2", "storage": False}
    await install(http, crd)
    old = await create(http, V1, gadget("old", "v1"))
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    for version in crd["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    assert (await http.put(f"{CRDS}/{CRD_NAME}", crd)).status == 200

    # Read through v2 it is a v2 object; an unchanged update stores it as one.
    current = (await http.get(f"{V2}/old")).json()
    r = await http.put(f"{V2}/old", current)
    assert r.json()["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert server.store.get(_gr(), "default", "old").obj["apiVersion"] == f"{GROUP}/v2"
    r = await http.put(f"{V2}/old", r.json())
    assert (
        r.json()["metadata"]["resourceVersion"]
        == (server.store.get(_gr(), "default", "old").obj["metadata"]["resourceVersion"])
    )


async def test_a_changed_crd_ends_the_watches_on_its_objects(
    http: HTTPClient, converter: Converter, hook: WebhookServer
) -> None:
    # A watch keeps the conversion settings it started with; a changed CRD ends it, and the
    # watch that follows converts with the new ones.
    await create(http, V1, gadget("w", "v1"))
    rv = (await http.get(V2)).json()["metadata"]["resourceVersion"]
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = hook.url("/moved")
    hook.route("/moved", converter.answer)

    async def change() -> None:
        await asyncio.sleep(0.2)
        assert (await http.put(f"{CRDS}/{CRD_NAME}", crd)).status == 200

    changing = asyncio.create_task(change())
    ended = await http.watch_lines(f"{V2}?watch=true&resourceVersion={rv}", lambda e: False)
    await changing
    assert ended == []  # the server ended the watch
    r = await http.patch(f"{V1}/w", {"spec": {"color": "blue"}}, MERGE)
    assert r.status == 200
    events = await http.watch_lines(
        f"{V2}?watch=true&resourceVersion={rv}", lambda events: len(events) >= 1
    )
    assert events[0]["object"]["spec"]["colour"] == "blue"
    assert hook.reviews.get("/moved")


async def test_a_dry_run_in_another_version_converts_and_stores_nothing(
    server: APIServer, http: HTTPClient, converter: Converter
) -> None:
    revision = server.store.revision
    r = await http.post(f"{V2}?dryRun=All", gadget("dry", "v2", "blue", 2))
    assert r.status == 201, r.body
    assert r.json()["spec"] == {"colour": "blue", "copies": 2}
    assert [q["desiredAPIVersion"] for q in converter.requests()] == [f"{GROUP}/v1"]
    assert server.store.revision == revision
    assert (await http.get(f"{V1}/dry")).status == 404


async def test_garbage_collection_rewrites_converted_dependents(
    gc_server: APIServer, gc_http: HTTPClient, hook: WebhookServer
) -> None:
    # A dependent stored in v1 while v2 is the storage version: dropping the reference to
    # a deleted owner reads and writes it through the conversion webhook.
    converter = Converter(hook)
    await install(gc_http, gadget_crd(hook))
    owners = []
    for name in ("keep", "drop"):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        created = (await gc_http.post("/api/v1/namespaces/default/configmaps", cm)).json()
        owners.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": name,
                "uid": created["metadata"]["uid"],
            }
        )
    dependent = gadget("dep", "v1")
    dependent["metadata"]["ownerReferences"] = owners
    await create(gc_http, V1, dependent)
    crd = (await gc_http.get(f"{CRDS}/{CRD_NAME}")).json()
    for version in crd["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    assert (await gc_http.put(f"{CRDS}/{CRD_NAME}", crd)).status == 200

    r = await gc_http.delete("/api/v1/namespaces/default/configmaps/drop")
    assert r.status == 200

    async def one_owner_left() -> bool:
        got = (await gc_http.get(f"{V1}/dep")).json()
        return [o["name"] for o in got["metadata"]["ownerReferences"]] == ["keep"]

    await eventually(one_owner_left)
    assert any(r["desiredAPIVersion"] == f"{GROUP}/v2" for r in converter.requests())
    stored = gc_server.store.get(_gr(), "default", "dep")
    assert stored is not None and stored.obj["apiVersion"] == f"{GROUP}/v2"
