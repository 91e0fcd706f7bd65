"""ObjectMeta embedded in a custom kind (a job template's, a pod template's, a model's own):
a bare object by default, so the API server prunes what it holds, as with controller-gen;
with `@resource(embedded_object_meta=True)` its name, namespace, labels, annotations and
finalizers are kept, as with controller-gen's crd:generateEmbeddedObjectMeta=true."""

from __future__ import annotations

from typing import Any

import kubeforge
from kubeforge import Client
from kubeforge._api.crd import crd_for
from kubeforge.models import JobTemplateSpec, PodTemplateSpec


class WorkerTemplate(kubeforge.Model):
    metadata: kubeforge.ObjectMeta | None = None
    image: str = "busybox"


class CrewSpec(kubeforge.Model):
    job_template: JobTemplateSpec
    pod_template: PodTemplateSpec | None = None
    worker: WorkerTemplate | None = None


@kubeforge.resource(group="embedded.example.com", version="v1", embedded_object_meta=True)
class Crew(kubeforge.Resource[CrewSpec, None]):
    """Keeps the metadata of its templates."""


@kubeforge.resource(group="embedded.example.com", version="v1")
class Gang(kubeforge.Resource[CrewSpec, None]):
    """Keeps only the templates' specs (the default)."""


TEMPLATE_META = {
    "name": "job",
    "generateName": "job-",
    "namespace": "default",
    "labels": {"app": "crew"},
    "annotations": {"note": "kept"},
    "finalizers": ["example.com/done"],
    "uid": "not-a-field-here",
}
KEPT = {k: v for k, v in TEMPLATE_META.items() if k not in ("generateName", "uid")}


def spec() -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    return {
        "jobTemplate": {"metadata": TEMPLATE_META, "spec": {"template": {"spec": pod}}},
        "podTemplate": {"metadata": TEMPLATE_META, "spec": pod},
        "worker": {"metadata": TEMPLATE_META},
    }


async def create(api: Client, cls: type[Any]) -> dict[str, Any]:
    crd = crd_for([cls])
    await api.create(crd)
    await api.wait_established([crd["metadata"]["name"]])
    info = cls.__kubeforge__
    body = {"apiVersion": info.gvk.api_version, "kind": info.gvk.kind, "spec": spec()}
    created: dict[str, Any] = await api.create(
        {**body, "metadata": {"name": "one", "labels": {"top": "level"}}}, namespace="default"
    )
    return created


async def test_embedded_metadata_keeps_its_labels_with_the_option(api: Client) -> None:
    created = await create(api, Crew)
    stored = await api.get(Crew, "one", namespace="default")
    assert stored.spec.job_template.metadata is not None
    assert stored.spec.job_template.metadata.labels == {"app": "crew"}
    data = stored.to_dict()
    assert data == created
    assert data["spec"]["jobTemplate"]["metadata"] == KEPT
    assert data["spec"]["podTemplate"]["metadata"] == KEPT
    assert data["spec"]["worker"]["metadata"] == KEPT
    assert data["metadata"]["labels"] == {"top": "level"}


async def test_embedded_metadata_is_pruned_without_it(api: Client) -> None:
    created = await create(api, Gang)
    for path in ("jobTemplate", "podTemplate", "worker"):
        assert created["spec"][path]["metadata"] == {}, path
    assert created["metadata"]["labels"] == {"top": "level"}
