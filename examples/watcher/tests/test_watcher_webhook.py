"""The Watcher webhooks, called as the API server's admission would call them (the same
webhooks through a cluster and kubectl: tests/test_webhooks.py)."""

from __future__ import annotations

from typing import Any

import kubeforge
import pytest
from kubeforge import webhook
from kubeforge.models import Container, VolumeMount

from api.v1alpha1 import Watcher, WatcherSpec
from webhooks.v1alpha1.watcher import WatcherValidator


def sample(**spec: Any) -> Watcher:
    return Watcher(
        metadata=kubeforge.ObjectMeta(name="watcher-sample", namespace="default"),
        spec=WatcherSpec(container=Container(name="watcher", image="busybox"), **spec),
    )


def test_the_validator_admits_a_valid_watcher() -> None:
    validator = WatcherValidator()
    assert validator.validate_create(sample()) is None
    assert validator.validate_update(sample(), sample()) is None
    assert validator.validate_delete(sample()) is None


def test_the_validator_refuses_every_problem_of_the_config_map_by_field() -> None:
    clash = sample(config_data={"k": "text", "a/b": "x"}, config_binary_data={"k": "AA=="})
    with pytest.raises(webhook.InvalidObject) as refused:
        WatcherValidator().validate_update(sample(), clash)
    assert [(e.field, e.type.value) for e in refused.value.errors] == [
        ("spec.configData[a/b]", "FieldValueInvalid"),
        ("spec.configBinaryData[k]", "FieldValueInvalid"),
    ]


def test_the_validator_warns_about_a_mount_the_watcher_does_not_bring() -> None:
    container = Container(
        name="watcher", image="busybox", volume_mounts=[VolumeMount(name="data", mount_path="/d")]
    )
    watcher = sample()
    watcher.spec.container = container
    assert WatcherValidator().validate_create(watcher) == [
        'spec.container.volumeMounts[0].name: volume "data" is not the Watcher\'s spec.volume; '
        "pods asking for this Watcher must have it themselves"
    ]
