"""The Watcher webhooks, called as the API server's admission would call them."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Container

from api.v1alpha1 import Watcher, WatcherSpec
from webhooks.v1alpha1.watcher import WatcherDefaulter, WatcherValidator


def sample() -> Watcher:
    return Watcher(
        metadata=kubeforge.ObjectMeta(name="watcher-sample", namespace="default"),
        spec=WatcherSpec(container=Container(name="watcher", image="busybox")),
    )


async def test_the_defaulter_keeps_what_the_author_set() -> None:
    watcher = sample()
    await WatcherDefaulter().default(watcher)
    # The Watcher's defaults are yet to be written: nothing the author set changes.
    assert watcher == sample()


async def test_the_validator_admits_a_valid_watcher() -> None:
    validator = WatcherValidator()
    # TODO(user): check that invalid objects are refused with kubeforge.InvalidObject.
    assert await validator.validate_create(sample()) is None
    assert await validator.validate_update(sample(), sample()) is None
    assert await validator.validate_delete(sample()) is None
