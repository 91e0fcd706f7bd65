"""A two-version CRD whose conversion webhook a test controls: gadgets.conv.kubeforge.dev.

v1 (the storage version unless a test moves it) has `spec.color` and `spec.replicas`; v2
calls them `spec.colour` and `spec.copies`, so every conversion is visible. Each version has
its own printer column, selectable field and scale path. The webhook (an HTTPS server from
tests.support.admission) converts both ways and records every ConversionReview it gets.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from tests.support.admission import WebhookServer

GROUP = "conv.kubeforge.dev"
CRD_NAME = f"gadgets.{GROUP}"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1 = f"/apis/{GROUP}/v1/namespaces/default/gadgets"
V2 = f"/apis/{GROUP}/v2/namespaces/default/gadgets"
PATH = "/convert"

_RENAMES = {"v1": ("color", "replicas"), "v2": ("colour", "copies")}


def _version_schema(version: str) -> dict[str, Any]:
    colour, count = _RENAMES[version]
    return {
        "name": version,
        "served": True,
        "storage": version == "v1",
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            colour: {"type": "string"},
                            count: {"type": "integer", "minimum": 0},
                        },
                    },
                    "status": {
                        "type": "object",
                        "properties": {
                            "phase": {"type": "string"},
                            "ready": {"type": "integer"},
                        },
                    },
                },
            }
        },
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": f".spec.{count}",
                "statusReplicasPath": ".status.ready",
            },
        },
        "additionalPrinterColumns": [
            {"name": colour.capitalize(), "type": "string", "jsonPath": f".spec.{colour}"}
        ],
        "selectableFields": [{"jsonPath": f".spec.{colour}"}],
    }


def gadget_crd(server: WebhookServer, review_versions: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [_version_schema("v1"), _version_schema("v2")],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": server.url(PATH), "caBundle": server.ca_bundle},
                    "conversionReviewVersions": review_versions or ["v1"],
                },
            },
        },
    }


def gadget(name: str, version: str = "v1", colour: str = "red", count: int = 1) -> dict[str, Any]:
    colour_field, count_field = _RENAMES[version]
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {colour_field: colour, count_field: count},
    }


def convert_object(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """What a correct webhook answers for one object."""
    out = copy.deepcopy(obj)
    source = obj["apiVersion"].rpartition("/")[2]
    target = desired.rpartition("/")[2]
    spec = out.get("spec") or {}
    renamed = {}
    for old, new in zip(_RENAMES[source], _RENAMES[target], strict=True):
        if old in spec:
            renamed[new] = spec.pop(old)
    spec.update(renamed)
    out["apiVersion"] = desired
    return out


Adjust = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


class Converter:
    """The conversion webhook's behaviour: converts correctly, unless `adjust` (given the
    request and the review's response) changes what is answered."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server
        self.adjust: Adjust | None = None
        server.route(PATH, self.answer)

    @property
    def reviews(self) -> list[dict[str, Any]]:
        return self.server.reviews.get(PATH, [])

    def requests(self) -> list[dict[str, Any]]:
        return [review["request"] for review in self.reviews]

    def answer(self, request: dict[str, Any]) -> web.Response:
        # The review this request came in (whichever path it was posted to).
        review = next(
            r
            for reviews in self.server.reviews.values()
            for r in reviews
            if r["request"] is request
        )
        desired = request["desiredAPIVersion"]
        response: dict[str, Any] = {
            "uid": request["uid"],
            "convertedObjects": [convert_object(o, desired) for o in request["objects"]],
            "result": {"status": "Success"},
        }
        body: dict[str, Any] = {
            "apiVersion": review["apiVersion"],
            "kind": "ConversionReview",
            "response": response,
        }
        if self.adjust is not None:
            body = self.adjust(request, body)
        return web.Response(body=orjson.dumps(body), content_type="application/json")
