"""Kinds named every way a cached read accepts map to one key; anything else is refused."""

from __future__ import annotations

import pytest

from kubeforge._api.meta import GroupVersionKind
from kubeforge._runtime.cache import kind_key
from kubeforge.models import ConfigMap, Deployment


def test_every_spelling_of_a_kind_has_one_key() -> None:
    for _ in range(2):  # the second round is answered from the memo
        assert kind_key(ConfigMap) == "v1/ConfigMap"
        assert kind_key("v1/ConfigMap") == "v1/ConfigMap"
        assert kind_key(GroupVersionKind("apps", "v1", "Deployment")) == "apps/v1/Deployment"
        assert kind_key(Deployment) == "apps/v1/Deployment"
        assert kind_key("apps/v1/Deployment") == "apps/v1/Deployment"


@pytest.mark.parametrize("kind", [["v1", "ConfigMap"], 42, "ConfigMap"])
def test_things_that_are_not_kinds_are_refused(kind: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        kind_key(kind)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError)):
        kind_key(kind)  # type: ignore[arg-type]
