"""CRD generation from resource classes: versions, names, subresources, YAML, and the server."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import yaml
from pydantic import Field

import kubeforge
from kubeforge._api import markers as mk
from kubeforge._api.crd import crd_filename, crd_for, dump_yaml, group_crds
from kubeforge._api.machinery.structural import structural_errors
from kubeforge._api.meta import Condition, ObjectMeta, PrinterColumn, Scale, WebhookConversion
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource, resource
from kubeforge._api.schema import API_VERSION_DESCRIPTION, KIND_DESCRIPTION
from tests.support import HTTPClient

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"


# The example from the issue --------------------------------------------------------------------


class MachineSpec(Model):
    switch_position: Annotated[str, mk.Enum("up", "down")] = "down"
    switches: Annotated[int, mk.Minimum(1), mk.Maximum(16)] = 1


class MachineStatus(Model):
    seen_at: datetime | None = None
    positions: str = ""


@resource(
    group="useless.container.training",
    version="v1alpha1",
    scope="Namespaced",
    short_names=["mach"],
    categories=["all"],
    printer_columns=[PrinterColumn("Position", ".spec.switchPosition")],
)
class Machine(Resource[MachineSpec, MachineStatus]):
    """A useless machine: whatever you do, it turns its switch back off."""


def test_machine_crd() -> None:
    assert crd_for([Machine]) == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "machines.useless.container.training",
            "annotations": {"kubeforge.dev/version": kubeforge.__version__},
        },
        "spec": {
            "group": "useless.container.training",
            "names": {
                "kind": "Machine",
                "listKind": "MachineList",
                "plural": "machines",
                "singular": "machine",
                "shortNames": ["mach"],
                "categories": ["all"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [
                        {"name": "Position", "type": "string", "jsonPath": ".spec.switchPosition"}
                    ],
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": (
                                "A useless machine: whatever you do, it turns its switch back off."
                            ),
                            "properties": {
                                "apiVersion": {
                                    "type": "string",
                                    "description": API_VERSION_DESCRIPTION,
                                },
                                "kind": {"type": "string", "description": KIND_DESCRIPTION},
                                "metadata": {"type": "object"},
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "switchPosition": {
                                            "type": "string",
                                            "enum": ["up", "down"],
                                            "default": "down",
                                        },
                                        "switches": {
                                            "type": "integer",
                                            "default": 1,
                                            "minimum": 1,
                                            "maximum": 16,
                                        },
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "seenAt": {"type": "string", "format": "date-time"},
                                        "positions": {"type": "string", "default": ""},
                                    },
                                },
                            },
                            "required": ["spec"],
                        }
                    },
                }
            ],
        },
    }


# Several versions of one kind ---------------------------------------------------------------------


class WidgetSpec(Model):
    """WidgetSpec is the desired widget."""

    size: Annotated[int, mk.Minimum(1)] = 1
    replicas: int = 1


class WidgetStatus(Model):
    replicas: int = 0
    selector: str = ""


def widget(version: str, **options: Any) -> type:
    options.setdefault("scope", "Cluster")

    @resource(group="gen.kubeforge.dev", version=version, kind="Widget", **options)
    class Widget(Resource[WidgetSpec, WidgetStatus]):
        """A widget."""

    Widget.__qualname__ = f"Widget{version}"
    return Widget


HOOK = WebhookConversion(service_name="widget-webhook", service_namespace="widgets", port=9443)


def widget_versions() -> list[type]:
    return [
        widget("v1alpha1", storage=False, served=False),
        widget("v2", storage=False, conversion=HOOK),
        widget(
            "v1beta1",
            storage=False,
            deprecated=True,
            deprecation_warning="gen.kubeforge.dev/v1beta1 Widget is deprecated; use v1",
        ),
        widget(
            "v1",
            short_names=["wd"],
            categories=["gadgets"],
            printer_columns=[
                PrinterColumn("Size", ".spec.size", type="integer", description="How big"),
                PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
                PrinterColumn("Selector", ".status.selector", priority=1, format="byte"),
            ],
            scale=Scale(label_selector_path=".status.selector"),
            selectable_fields=[".spec.size"],
            conversion=HOOK,
            crd_labels={"team": "widgets"},
            crd_annotations={"note": "stored as v1"},
        ),
    ]


def test_versions_in_priority_order_with_one_storage_version() -> None:
    classes = widget_versions()
    crd = crd_for(classes)
    spec = crd["spec"]
    versions = spec["versions"]
    assert [v["name"] for v in versions] == ["v2", "v1", "v1beta1", "v1alpha1"]
    assert [v["storage"] for v in versions] == [False, True, False, False]
    assert [v["served"] for v in versions] == [True, True, True, False]
    assert versions[2]["deprecated"] is True
    assert versions[2]["deprecationWarning"] == (
        "gen.kubeforge.dev/v1beta1 Widget is deprecated; use v1"
    )
    assert "deprecated" not in versions[1]
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "kind": "Widget",
        "listKind": "WidgetList",
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "categories": ["gadgets"],
    }
    stored = versions[1]
    assert stored["additionalPrinterColumns"] == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "How big"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {
            "name": "Selector",
            "type": "string",
            "jsonPath": ".status.selector",
            "format": "byte",
            "priority": 1,
        },
    ]
    assert stored["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert stored["selectableFields"] == [{"jsonPath": ".spec.size"}]
    assert "additionalPrinterColumns" not in versions[0]
    assert spec["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "widget-webhook",
                    "namespace": "widgets",
                    "path": "/convert",
                    "port": 9443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert crd["metadata"] == {
        "name": "widgets.gen.kubeforge.dev",
        "annotations": {"kubeforge.dev/version": kubeforge.__version__, "note": "stored as v1"},
        "labels": {"team": "widgets"},
    }
    for i, version in enumerate(versions):
        schema = version["schema"]["openAPIV3Schema"]
        path = f"spec.versions[{i}].schema.openAPIV3Schema"
        assert structural_errors(schema, path) == []


def test_storage_version_rules() -> None:
    with pytest.raises(ValueError, match=r"Widgetv1, Widgetv2: exactly one version .*: Widgetv1, "):
        crd_for([widget("v1"), widget("v2")])
    with pytest.raises(ValueError, match=r"marked as storage: none"):
        crd_for([widget("v1", storage=False), widget("v2", storage=False)])
    # A lone version is the storage version whatever it says.
    crd = crd_for([widget("v1", storage=False)])
    assert crd["spec"]["versions"][0]["storage"] is True


def test_inconsistent_classes_are_refused() -> None:
    @resource(group="other.kubeforge.dev", version="v2", kind="Widget")
    class Elsewhere(Resource[WidgetSpec, WidgetStatus]):
        pass

    with pytest.raises(ValueError, match="must share group and kind"):
        crd_for([widget("v1"), Elsewhere])
    with pytest.raises(ValueError, match="declared only once"):
        crd_for([widget("v1"), widget("v1", storage=False)])
    with pytest.raises(ValueError, match="disagree on namespaced"):
        crd_for([widget("v1"), widget("v2", storage=False, scope="Namespaced")])
    other_hook = WebhookConversion(service_name="another")
    with pytest.raises(ValueError, match="different conversion webhooks"):
        crd_for([widget("v1", conversion=HOOK), widget("v2", storage=False, conversion=other_hook)])
    with pytest.raises(ValueError, match="at least one"):
        crd_for([])
    with pytest.raises(TypeError, match="WidgetSpec is not a custom resource class"):
        crd_for([WidgetSpec])


def test_no_conversion_and_no_subresources_when_not_asked_for() -> None:
    crd = crd_for([widget("v1", status=False)])
    assert "conversion" not in crd["spec"]
    assert "subresources" not in crd["spec"]["versions"][0]
    assert "labels" not in crd["metadata"]


# Everything a schema can say ----------------------------------------------------------------------


class Endpoint(Model):
    """Where to reach the service."""

    name: str
    port: Annotated[int, mk.Minimum(1), mk.Maximum(65535)] = 80
    protocol: Literal["TCP", "UDP"] = "TCP"


class Window(Model):
    start: Annotated[int, mk.Minimum(0)] = 0
    end: Annotated[int, mk.Maximum(24)] = 24


class Payload(Model):
    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    data: dict[str, str] = Field(default_factory=dict)


class ContainerStandIn(Model):
    __kubeforge_definition__ = "io.k8s.api.core.v1.Container"


class TemplateStandIn(Model):
    __kubeforge_definition__ = "io.k8s.api.core.v1.PodTemplateSpec"


class ValidationStandIn(Model):
    __kubeforge_definition__ = (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceValidation"
    )


@mk.on_class(
    mk.Rule(
        "!has(self.window) || self.window.start <= self.window.end",
        message="the window must not end before it starts",
        field_path=".window",
        reason="FieldValueInvalid",
    ),
    mk.AtMostOneOf("image", "template"),
)
class ServiceSpec(Model):
    """ServiceSpec describes the service to run."""

    image: Annotated[str, mk.MinLength(1), mk.Pattern("^[a-z0-9./:-]+$")] | None = None
    """The image to run."""
    mode: Literal["active", "standby"] = "active"
    tier: Annotated[str, mk.Enum("gold", "silver")] = "silver"
    size: Annotated[float, mk.Minimum(0, exclusive=True), mk.MultipleOf(0.5)] = 1.0
    name: Annotated[str, mk.Immutable(), mk.MaxLength(20)] = Field(
        "svc", description="The name, fixed once set."
    )
    replicas: Annotated[int, mk.Rule("self >= oldSelf", message="replicas may only grow")] = 1
    port: int | str = "http"
    endpoints: Annotated[list[Endpoint], mk.ListMapKeys("name"), mk.MaxItems(8)] = Field(
        default_factory=list
    )
    tags: Annotated[list[str], mk.UniqueItems(), mk.Items(mk.MinLength(1))] = Field(
        default_factory=list
    )
    labels: Annotated[dict[str, str], mk.MaxProperties(4), mk.MapType("granular")] = Field(
        default_factory=dict
    )
    window: Window | None = None
    note: Annotated[str | None, mk.Nullable()] = None
    settings: Annotated[dict[str, Any], mk.PreserveUnknownFields()] = Field(default_factory=dict)
    payload: Annotated[Payload, mk.EmbeddedResource()] | None = None
    anything: Annotated[dict[str, Any], mk.EmbeddedResource()] | None = None
    container: ContainerStandIn | None = None
    template: TemplateStandIn | None = None
    validation: ValidationStandIn | None = None
    email: Annotated[str, mk.Format("email"), mk.Title("Email"), mk.Example("a@b.c")] | None = None
    forced: Annotated[bool, mk.Required()] = False
    contact: Annotated[str, mk.Optional()]


class ServiceStatus(Model):
    conditions: Annotated[list[Condition], mk.ListMapKeys("type")] = Field(default_factory=list)
    replicas: int = 0
    selector: str = ""


@resource(
    group="gen.kubeforge.dev",
    version="v1",
    scale=Scale(label_selector_path=".status.selector"),
    printer_columns=[PrinterColumn("Mode", ".spec.mode")],
)
class Service(Resource[ServiceSpec, ServiceStatus]):
    """A service of the kitchen-sink kind."""


def test_kitchen_sink_schema_is_structural() -> None:
    crd = crd_for([Service])
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert structural_errors(schema, "spec.versions[0].schema.openAPIV3Schema") == []
    spec = schema["properties"]["spec"]
    assert spec["required"] == ["forced"]
    assert [r["rule"] for r in spec["x-kubernetes-validations"]] == [
        "!has(self.window) || self.window.start <= self.window.end",
        "(has(self.image) ? 1 : 0) + (has(self.template) ? 1 : 0) <= 1",
    ]
    payload = spec["properties"]["payload"]
    assert payload["x-kubernetes-embedded-resource"] is True
    assert payload["required"] == ["apiVersion", "kind"]
    assert payload["properties"]["metadata"] == {"type": "object"}
    assert spec["properties"]["tags"]["items"] == {"type": "string", "minLength": 1}


# YAML ---------------------------------------------------------------------------------------------


def test_yaml_is_deterministic_and_controller_gen_shaped() -> None:
    first = dump_yaml(crd_for(widget_versions()))
    second = dump_yaml(crd_for(widget_versions()))
    assert first == second
    assert first.startswith(
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    )
    assert yaml.safe_load(first) == crd_for(widget_versions())
    lines = first.splitlines()
    # Lists sit at their key's indentation; keys are sorted; nothing is wrapped.
    assert "  versions:" in lines
    assert "  - additionalPrinterColumns:" in lines
    assert "      status: {}" in lines
    assert "  - name: v1alpha1" in lines
    assert '                default: ""' in lines
    service = dump_yaml(crd_for([Service]))
    assert "            description: |-" in service.splitlines()
    assert (
        "              More info: https://git.k8s.io/community/contributors/devel/"
        "sig-architecture/api-conventions.md#resources"
    ) in service.splitlines()
    keys = [line.split(":")[0] for line in lines if line and not line.startswith((" ", "-"))]
    assert keys == ["apiVersion", "kind", "metadata", "spec"]


def test_group_crds_and_files(tmp_path: Path) -> None:
    classes = [Machine, *widget_versions(), Service]
    crds = group_crds(classes)
    assert [c["metadata"]["name"] for c in crds] == [
        "machines.useless.container.training",
        "services.gen.kubeforge.dev",
        "widgets.gen.kubeforge.dev",
    ]
    assert [crd_filename(c) for c in crds] == [
        "useless.container.training_machines.yaml",
        "gen.kubeforge.dev_services.yaml",
        "gen.kubeforge.dev_widgets.yaml",
    ]
    # Byte-for-byte deterministic: generating again gives the same text.
    again = group_crds(classes)
    assert [dump_yaml(c) for c in again] == [dump_yaml(c) for c in crds]


# The embedded API server accepts the CRDs and serves their kinds ----------------------------------


async def test_the_server_accepts_the_crds_and_serves_the_kinds(http: HTTPClient) -> None:
    for crd in group_crds([Machine, *widget_versions(), Service]):
        reply = await http.post(CRDS, crd)
        assert reply.status == 201, reply.body

    machines = "/apis/useless.container.training/v1alpha1/namespaces/default/machines"
    reply = await http.post(
        machines,
        {
            "apiVersion": "useless.container.training/v1alpha1",
            "kind": "Machine",
            "metadata": {"name": "m1"},
            "spec": {},
        },
    )
    assert reply.status == 201, reply.body
    machine = Machine.from_dict(reply.json())
    assert machine.spec.switch_position == "down"
    assert machine.spec.switches == 1
    reply = await http.post(
        machines,
        {
            "apiVersion": "useless.container.training/v1alpha1",
            "kind": "Machine",
            "metadata": {"name": "m2"},
            "spec": {"switches": 17, "switchPosition": "left"},
        },
    )
    assert reply.status == 422
    causes = {c["field"]: c["message"] for c in reply.json()["details"]["causes"]}
    assert set(causes) == {"spec.switches", "spec.switchPosition"}
    assert "should be less than or equal to 16" in causes["spec.switches"]

    widgets = "/apis/gen.kubeforge.dev/v1/widgets"
    reply = await http.post(
        widgets,
        {
            "apiVersion": "gen.kubeforge.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 3},
        },
    )
    assert reply.status == 201, reply.body
    assert reply.json()["spec"] == {"size": 3, "replicas": 1}
    scale = await http.get(f"{widgets}/w/scale")
    assert scale.status == 200, scale.body
    assert scale.json()["spec"]["replicas"] == 1

    services = "/apis/gen.kubeforge.dev/v1/namespaces/default/services"
    body = {
        "apiVersion": "gen.kubeforge.dev/v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {
            "forced": True,
            "contact": "ops",
            "endpoints": [{"name": "web"}],
            "container": {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]},
            "payload": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
            "validation": {"openAPIV3Schema": {"type": "object", "properties": {"a": {}}}},
            "unknown": "pruned",
        },
    }
    reply = await http.post(services, body)
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert "unknown" not in spec
    assert spec["endpoints"] == [{"name": "web", "port": 80, "protocol": "TCP"}]
    assert spec["container"]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert spec["mode"] == "active" and spec["replicas"] == 1
    assert spec["validation"]["openAPIV3Schema"]["properties"] == {"a": {}}
    typed = Service.from_dict(reply.json())
    assert typed.spec.contact == "ops"

    shrink = await http.patch(f"{services}/s", {"spec": {"replicas": 0}}, MERGE)
    assert shrink.status == 422
    assert "replicas may only grow" in shrink.body.decode()
    rename = await http.patch(f"{services}/s", {"spec": {"name": "other"}}, MERGE)
    assert rename.status == 422
    assert "field is immutable" in rename.body.decode()
    window = await http.patch(f"{services}/s", {"spec": {"window": {"start": 9, "end": 3}}}, MERGE)
    assert window.status == 422
    assert "the window must not end before it starts" in window.body.decode()
    missing = dict(body, metadata={"name": "s2"})
    missing["spec"] = {"endpoints": [{"port": 8080}]}
    reply = await http.post(services, missing)
    assert reply.status == 422
    causes = reply.json()["details"]["causes"]
    assert (causes[0]["type"], causes[0]["field"]) == (
        "FieldValueRequired",
        "spec.endpoints[0].name",
    )
