"""OpenAPI v3 documents: their shape, and real kubectl reading them from a small fake server."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from kubeforge._apiserver.discovery import documents
from kubeforge._apiserver.discovery.openapi import OpenAPIV3, crd_schema_name, gv_path
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import ResourceType, Subresource
from kubeforge.testing import Kubectl
from tests.support import kubectl_for

SCHEMAS = "#/components/schemas/"
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A widget of the example fleet.",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What the widget should look like.",
            "properties": {
                "size": {"type": "integer", "description": "How many sprockets the widget has."},
                "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}]},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def widget_type(version: str = "v1", schema: dict[str, Any] | None = None) -> ResourceType:
    return ResourceType(
        group="example.com",
        version=version,
        kind="Widget",
        plural="widgets",
        singular="widget",
        namespaced=True,
        subresources=(
            Subresource("status", "Widget", ("get", "patch", "update")),
            Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1"),
        ),
        schema=schema or WIDGET_SCHEMA,
        crd_name="widgets.example.com",
    )


@pytest.fixture(scope="module")
def schemas() -> BuiltinSchemas:
    return BuiltinSchemas.for_version("1.33")


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.add(widget_type())
    return reg


@pytest.fixture
def openapi(registry: Registry, schemas: BuiltinSchemas) -> OpenAPIV3:
    return OpenAPIV3(registry, schemas)


def load(openapi: OpenAPIV3, gv: str) -> dict[str, Any]:
    data = openapi.document(gv)
    assert data is not None
    doc: dict[str, Any] = orjson.loads(data)
    return doc


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# The index ----------------------------------------------------------------------------------


def test_index_lists_every_group_version_with_its_content_hash(openapi: OpenAPIV3) -> None:
    paths = openapi.index()["paths"]
    assert list(paths)[:3] == ["api/v1", "apis/apiregistration.k8s.io/v1", "apis/apps/v1"]
    assert "apis/example.com/v1" in paths
    for gv, entry in paths.items():
        data = openapi.document(gv)
        assert data is not None
        digest = hashlib.sha512(data).hexdigest().upper()
        assert entry == {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
        assert openapi.document_hash(gv) == digest


def test_unknown_group_versions(openapi: OpenAPIV3) -> None:
    assert openapi.document("apis/nope/v1") is None
    assert openapi.document_hash("apis/nope/v1") is None
    assert openapi.document("/api/v1") == openapi.document("api/v1")


def test_documents_follow_registry_changes(registry: Registry, openapi: OpenAPIV3) -> None:
    before = openapi.document("apis/example.com/v1")
    core = openapi.document("api/v1")
    changed = {**WIDGET_SCHEMA, "description": "Changed."}
    registry.remove_crd("widgets.example.com")
    registry.add(widget_type(schema=changed))
    registry.add(widget_type("v2"))
    after = openapi.document("apis/example.com/v1")
    assert after is not None
    assert after != before
    assert b'"Changed."' in after
    assert openapi.document("api/v1") is core  # untouched group-versions stay cached
    assert "apis/example.com/v2" in openapi.index()["paths"]
    registry.remove_crd("widgets.example.com")
    assert openapi.document("apis/example.com/v1") is None
    assert "apis/example.com/v1" not in openapi.index()["paths"]


def test_other_servers_reuse_built_documents(schemas: BuiltinSchemas) -> None:
    first = OpenAPIV3(Registry(), schemas).document("apis/apps/v1")
    second = OpenAPIV3(Registry(), schemas).document("apis/apps/v1")
    assert first is second


# Paths and operations --------------------------------------------------------------------


def test_resource_paths_and_operations(openapi: OpenAPIV3) -> None:
    doc = load(openapi, "apis/apps/v1")
    assert doc["openapi"] == "3.0.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "v1.33.0"}
    paths = doc["paths"]
    collection = paths["/apis/apps/v1/namespaces/{namespace}/deployments"]
    assert collection["get"]["operationId"] == "listAppsV1NamespacedDeployment"
    assert collection["get"]["x-kubernetes-action"] == "list"
    assert collection["post"]["x-kubernetes-action"] == "post"
    assert collection["delete"]["x-kubernetes-action"] == "deletecollection"
    item = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert set(item) == {"get", "put", "patch", "delete", "parameters"}
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]
    assert item["put"]["operationId"] == "replaceAppsV1NamespacedDeployment"
    gvk = {"group": "apps", "kind": "Deployment", "version": "v1"}
    assert item["patch"]["x-kubernetes-group-version-kind"] == gvk
    body = item["put"]["requestBody"]["content"]["*/*"]["schema"]
    assert body == {"$ref": SCHEMAS + "io.k8s.api.apps.v1.Deployment"}
    listed = paths["/apis/apps/v1/deployments"]["get"]
    assert listed["operationId"] == "listAppsV1DeploymentForAllNamespaces"
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]
    status = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]
    assert status["get"]["operationId"] == "readAppsV1NamespacedDeploymentStatus"
    assert "/apis/apps/v1/watch/namespaces/{namespace}/deployments" in paths


def test_core_and_cluster_scoped_paths(openapi: OpenAPIV3) -> None:
    paths = load(openapi, "api/v1")["paths"]
    assert paths["/api/v1/namespaces/{namespace}/configmaps"]["get"]["operationId"] == (
        "listCoreV1NamespacedConfigMap"
    )
    namespace = paths["/api/v1/namespaces/{name}"]
    assert namespace["patch"]["operationId"] == "patchCoreV1Namespace"
    assert [p["name"] for p in namespace["parameters"]] == ["name", "pretty"]
    log = paths["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]
    assert "text/plain" in log["responses"]["200"]["content"]
    eviction = paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]
    assert eviction["x-kubernetes-group-version-kind"]["kind"] == "Eviction"
    exec_ = paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"]
    assert exec_["post"]["x-kubernetes-action"] == "connect"


def test_every_patch_operation_declares_field_validation(openapi: OpenAPIV3) -> None:
    # kubectl takes server-side field validation as supported only when the PATCH operation
    # of the kind has a `fieldValidation` query parameter.
    for gv in openapi.group_versions():
        patches = [op for _, method, op in operations(load(openapi, gv)) if method == "patch"]
        for op in patches:
            if op["x-kubernetes-action"] == "connect":  # proxying, not an object patch
                continue
            names = {(p["name"], p["in"]) for p in op["parameters"]}
            assert ("fieldValidation", "query") in names, op["operationId"]
            assert ("force", "query") in names


def test_strategic_merge_patch_only_for_builtin_kinds(openapi: OpenAPIV3) -> None:
    builtin = load(openapi, "api/v1")["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    assert list(builtin["patch"]["requestBody"]["content"]) == [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ]
    custom = load(openapi, "apis/example.com/v1")
    for _, method, op in operations(custom):
        if method == "patch":
            assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]


def test_explain_finds_the_kind_through_the_list_operation(openapi: OpenAPIV3) -> None:
    # kubectl explain reads the GVK from GET on the collection path, then searches schemas.
    for gv, path, kind in [
        ("apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments", "Deployment"),
        ("api/v1", "/api/v1/nodes", "Node"),
        ("apis/example.com/v1", "/apis/example.com/v1/namespaces/{namespace}/widgets", "Widget"),
    ]:
        doc = load(openapi, gv)
        gvk = doc["paths"][path]["get"]["x-kubernetes-group-version-kind"]
        assert gvk["kind"] == kind
        matches = [
            name
            for name, schema in doc["components"]["schemas"].items()
            if gvk in schema.get("x-kubernetes-group-version-kind", [])
        ]
        assert len(matches) == 1


# Schemas ------------------------------------------------------------------------------------


def test_schemas_are_complete_and_in_published_form(openapi: OpenAPIV3) -> None:
    for gv in openapi.group_versions():
        doc = load(openapi, gv)
        names = set(doc["components"]["schemas"])
        for node in walk(doc):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith(SCHEMAS), ref
                assert ref[len(SCHEMAS) :] in names, (gv, ref)
                assert set(node) == {"$ref"}
        for schema in doc["components"]["schemas"].values():
            for node in walk(schema):
                assert not isinstance(node.get("type"), list)


def test_converted_schemas(openapi: OpenAPIV3) -> None:
    schemas = load(openapi, "apis/apps/v1")["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["type"] == "object"
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deployment["properties"]["apiVersion"]["type"] == "string"
    assert "enum" not in deployment["properties"]["kind"]
    spec = deployment["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": SCHEMAS + "io.k8s.api.apps.v1.DeploymentSpec"}]
    assert spec["description"]
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["type"] == "integer"
    assert replicas["format"] == "int32"
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    }
    assert schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [
        {"type": "string"},
        {"type": "number"},
    ]
    conditions = schemas["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"]
    assert conditions["x-kubernetes-patch-merge-key"] == "type"
    assert conditions["x-kubernetes-list-type"] == "map"


def test_crd_kinds_publish_their_schema(openapi: OpenAPIV3) -> None:
    assert crd_schema_name("example.com", "v1", "Widget") == "com.example.v1.Widget"
    assert gv_path("example.com", "v1") == "apis/example.com/v1"
    doc = load(openapi, "apis/example.com/v1")
    schemas = doc["components"]["schemas"]
    widget = schemas["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ]
    assert widget["properties"]["spec"] == WIDGET_SCHEMA["properties"]["spec"]
    assert widget["properties"]["metadata"]["allOf"] == [
        {"$ref": SCHEMAS + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert widget["properties"]["kind"]["type"] == "string"
    listed = schemas["com.example.v1.WidgetList"]
    assert listed["properties"]["items"]["items"] == {"$ref": SCHEMAS + "com.example.v1.Widget"}
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta" in schemas
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert item["patch"]["operationId"] == "patchExampleComV1NamespacedWidget"
    assert WIDGET_SCHEMA["properties"]["spec"].get("x-kubernetes-group-version-kind") is None


# Real kubectl ---------------------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes


@dataclass
class FakeServer:
    """Discovery, OpenAPI and a dictionary of objects: just what kubectl needs here."""

    registry: Registry
    openapi: OpenAPIV3
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    port: int = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            Seen(request.method, request.path, dict(request.query), request.content_type, body)
        )
        path = request.path.rstrip("/")
        if path == "/version":
            return self.json({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})
        if path == "/api":
            return self.json(documents.api_versions("127.0.0.1"))
        if path == "/apis":
            return self.json(documents.api_group_list(self.registry))
        if path == "/openapi/v3":
            return self.json(self.openapi.index())
        if path.startswith("/openapi/v3/"):
            data = self.openapi.document(path[len("/openapi/v3/") :])
            if data is not None:
                return web.Response(body=data, content_type="application/json")
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            return self.maybe(documents.api_resource_list(self.registry, "", parts[1]))
        if parts[0] == "apis" and len(parts) == 3:
            return self.maybe(documents.api_resource_list(self.registry, parts[1], parts[2]))
        if request.method == "POST":
            obj = orjson.loads(body)
            self.objects[f"{path}/{obj['metadata']['name']}"] = obj
            return self.json(obj, 201)
        if request.method == "PUT" and path in self.objects:
            self.objects[path] = orjson.loads(body)
        if request.method in ("GET", "PATCH", "PUT") and path in self.objects:
            return self.json(self.objects[path])
        return self.json({"kind": "Status", "status": "Failure", "code": 404}, 404)

    def maybe(self, doc: dict[str, Any] | None) -> web.Response:
        return self.json(doc) if doc is not None else self.json({"code": 404}, 404)

    @staticmethod
    def json(doc: Any, status: int = 200) -> web.Response:
        return web.Response(body=orjson.dumps(doc), status=status, content_type="application/json")

    def requests(self, method: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method]


@pytest.fixture
async def fake(registry: Registry, openapi: OpenAPIV3) -> AsyncIterator[FakeServer]:
    server = FakeServer(registry, openapi)
    runner = web.AppRunner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.port = runner.addresses[0][1]
    yield server
    await runner.cleanup()


@pytest.fixture(params=["1.29", "1.33"])
def kubectl(request: pytest.FixtureRequest, fake: FakeServer, tmp_path: Path) -> Kubectl:
    port = fake.port
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "me", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "me"}}],
        "current-context": "fake",
    }
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(orjson.dumps(config))
    return kubectl_for(kubeconfig, tmp_path / "cache", request.param)


CONFIGMAP_YAML = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  colour: blue
"""

WIDGET_YAML = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: 3
"""


@pytest.mark.kubectl
async def test_kubectl_explain_builtin_fields(kubectl: Kubectl, fake: FakeServer) -> None:
    out = (await kubectl.run("explain", "deployment.spec.replicas")).out
    assert "KIND:" in out
    assert "Deployment" in out
    assert "replicas" in out
    assert "<integer>" in out
    assert "Number of desired pods" in out
    out = (await kubectl.run("explain", "configmap")).out
    assert "ConfigMap holds configuration data for pods to consume" in out
    assert "binaryData" in out
    assert "immutable" in out
    assert not [s for s in fake.seen if s.path.startswith("/openapi/v2")]


@pytest.mark.kubectl
async def test_kubectl_explain_custom_fields(kubectl: Kubectl) -> None:
    out = (await kubectl.run("explain", "widgets.spec")).out
    assert "What the widget should look like." in out
    assert "How many sprockets the widget has." in out


@pytest.mark.kubectl
async def test_kubectl_create_and_replace_pass_strict_validation(
    kubectl: Kubectl, fake: FakeServer
) -> None:
    args = ("create", "-f", "-", "--dry-run=server", "--validate=strict", "-v=6")
    await kubectl.run(*args, stdin=CONFIGMAP_YAML)
    [post] = fake.requests("POST")
    assert post.path == "/api/v1/namespaces/default/configmaps"
    assert post.query["fieldValidation"] == "Strict"
    assert post.query["dryRun"] == "All"
    await kubectl.run("create", "-f", "-", "--validate=strict", stdin=WIDGET_YAML)
    custom = fake.requests("POST")[-1]
    assert custom.path == "/apis/example.com/v1/namespaces/default/widgets"
    assert custom.query["fieldValidation"] == "Strict"
    await kubectl.run("replace", "-f", "-", stdin=WIDGET_YAML.replace("3", "5"))
    [put] = fake.requests("PUT")
    assert put.path == "/apis/example.com/v1/namespaces/default/widgets/w1"
    assert put.query["fieldValidation"] == "Strict"
    assert orjson.loads(put.body)["spec"] == {"size": 5}
    assert not [s for s in fake.seen if s.path.startswith("/openapi/v2")]


@pytest.mark.kubectl
async def test_kubectl_apply_chooses_the_patch_type(kubectl: Kubectl, fake: FakeServer) -> None:
    await kubectl.run("apply", "-f", "-", stdin=CONFIGMAP_YAML)
    await kubectl.run("apply", "-f", "-", stdin=CONFIGMAP_YAML.replace("blue", "red"))
    await kubectl.run("apply", "-f", "-", stdin=WIDGET_YAML)
    await kubectl.run("apply", "-f", "-", stdin=WIDGET_YAML.replace("3", "4"))
    builtin, custom = fake.requests("PATCH")
    assert builtin.path == "/api/v1/namespaces/default/configmaps/settings"
    assert builtin.content_type == "application/strategic-merge-patch+json"
    assert builtin.query["fieldValidation"] == "Strict"
    assert orjson.loads(builtin.body)["data"] == {"colour": "red"}
    assert custom.path == "/apis/example.com/v1/namespaces/default/widgets/w1"
    assert custom.content_type == "application/merge-patch+json"
    assert orjson.loads(custom.body)["spec"] == {"size": 4}
