"""Typed objects read from the server: a class reading objects that carry more than it
declares (a CRD with fields the class does not know, installed by a newer version of the
operator) loads them, keeps them, and writes them back; references and times of built-in
objects round-trip as typed values."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

import kubeforge
from kubeforge import Client
from kubeforge.models import (
    Container,
    CronJob,
    CronJobSpec,
    Job,
    JobSpec,
    JobTemplateSpec,
    PodSpec,
    PodTemplateSpec,
)
from kubeforge.models.batch_v1 import CronJobStatus


class GadgetSpec(kubeforge.Model):
    size: int


@kubeforge.resource(group="reads.example.com", version="v1")
class Gadget(kubeforge.Resource[GadgetSpec, None]):
    """A gadget, as an older build of its operator declares it."""


def gadget_crd() -> dict[str, Any]:
    spec = {
        "type": "object",
        "properties": {
            "size": {"type": "integer"},
            "colorScheme": {"type": "string"},
            "parts": {"type": "array", "items": {"type": "string"}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.reads.example.com"},
        "spec": {
            "group": "reads.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


async def test_fields_the_class_does_not_declare_are_kept_through_read_and_update(
    api: Client,
) -> None:
    await api.create(gadget_crd())
    await api.wait_established(["gadgets.reads.example.com"])
    await api.create(
        {
            "apiVersion": "reads.example.com/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"size": 1, "colorScheme": "dark", "parts": ["a", "b"]},
        },
        namespace="default",
    )
    gadget = await api.get(Gadget, "g", namespace="default")
    assert gadget.spec.size == 1
    assert gadget.spec.model_extra == {"colorScheme": "dark", "parts": ["a", "b"]}
    gadget.spec.size = 2
    await api.update(gadget)
    stored = await api.get("reads.example.com/v1/Gadget", "g", namespace="default")
    assert stored["spec"] == {"size": 2, "colorScheme": "dark", "parts": ["a", "b"]}
    listed = await api.list(Gadget, namespace="default")
    assert [g.spec.model_extra for g in listed] == [{"colorScheme": "dark", "parts": ["a", "b"]}]
    # A constructor, though, takes only what the class declares.
    with pytest.raises(ValidationError, match="colorScheme"):
        GadgetSpec(size=1, colorScheme="dark")  # type: ignore[call-arg]


async def test_a_reference_to_a_job_goes_into_a_cron_job_status(api: Client) -> None:
    """What the CronJob tutorial does with reference.GetReference: status.active lists the
    running Jobs."""
    template = PodTemplateSpec(
        spec=PodSpec(containers=[Container(name="c", image="busybox")], restart_policy="Never")
    )
    job = await api.create(
        Job(metadata=kubeforge.ObjectMeta(name="run-1"), spec=JobSpec(template=template)),
        namespace="default",
    )
    ref = kubeforge.get_reference(job)
    assert ref.to_dict() == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "namespace": "default",
        "name": "run-1",
        "uid": job.metadata.uid,
        "resourceVersion": job.metadata.resource_version,
    }
    cron = await api.create(
        CronJob(
            metadata=kubeforge.ObjectMeta(name="nightly"),
            spec=CronJobSpec(
                schedule="@daily", job_template=JobTemplateSpec(spec=JobSpec(template=template))
            ),
        ),
        namespace="default",
    )
    cron.status = CronJobStatus(active=[ref], last_schedule_time=job.metadata.creation_timestamp)
    await api.update_status(cron)
    stored = await api.get(CronJob, "nightly", namespace="default")
    assert stored.status is not None and stored.status.active == [ref]
    assert stored.status.last_schedule_time == job.metadata.creation_timestamp
