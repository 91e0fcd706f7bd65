"""Typed handlers called directly: decoding into the kind's class, patches of built-in kinds,
what defaulters and validators may return."""

from __future__ import annotations

from typing import Any

import pytest

import kubeforge
import kubeforge.webhook
from kubeforge._apiserver.storage.patch import apply_json_patch
from kubeforge._webhook.typed import DefaultingHandler, ValidatingHandler
from kubeforge.models.core_v1 import Pod


def request(
    operation: str, obj: Any, old: Any = None, kind: str = "Pod"
) -> kubeforge.webhook.AdmissionRequest:
    return kubeforge.webhook.AdmissionRequest.model_validate(
        {
            "uid": "u",
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": kind.lower() + "s"},
            "operation": operation,
            "object": obj,
            "oldObject": old,
        }
    )


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
}


async def test_a_built_in_kinds_defaulter_patches_only_its_change() -> None:
    def label(pod: Pod) -> str:
        pod.metadata.labels = {"team": "a"}
        return "labelled"

    response = await DefaultingHandler(Pod, label).handle(request("CREATE", POD))
    # The Pod model has many defaults; none of them may reach the object.
    assert response.patch == [{"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}]
    assert response.warnings == ["labelled"]
    assert apply_json_patch(POD, response.patch)["metadata"]["labels"] == {"team": "a"}


async def test_an_object_the_class_cannot_read_is_a_bad_request() -> None:
    broken = {**POD, "spec": {"containers": "not a list"}}
    response = await DefaultingHandler(Pod, lambda pod: None).handle(request("CREATE", broken))
    assert response.allowed is False
    assert response.status is not None and response.status["code"] == 400
    assert "cannot read the object as Pod: spec.containers" in response.status["message"]


async def test_warnings_must_be_strings() -> None:
    class Odd(kubeforge.webhook.Validator[Pod]):
        def validate_create(self, obj: Pod) -> Any:
            return {"not": "warnings"}

    with pytest.raises(TypeError, match=r"Odd.validate_create returned .*expected warnings"):
        await ValidatingHandler(Pod, Odd()).handle(request("CREATE", POD))


async def test_a_validator_sees_typed_old_and_new_objects() -> None:
    seen: list[tuple[str, str]] = []

    class Recording(kubeforge.webhook.Validator[Pod]):
        async def validate_update(self, old: Pod, new: Pod) -> list[str]:
            assert isinstance(old, Pod) and isinstance(new, Pod)
            seen.append((old.spec.containers[0].image or "", new.spec.containers[0].image or ""))
            return []

    newer = {**POD, "spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}
    response = await ValidatingHandler(Pod, Recording()).handle(request("UPDATE", newer, POD))
    assert response.allowed is True and response.warnings is None
    assert seen == [("nginx", "nginx:2")]
