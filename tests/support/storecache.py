"""A cache of one kind over a bare Store, for the tests of helpers that read a controller's
cache (`cache.informer_for(kind).store`) without a cluster."""

from __future__ import annotations

from dataclasses import dataclass

from kubeforge._runtime.store import Store


@dataclass
class StoreInformer:
    store: Store


class StoreCache:
    """Answers `informer_for(kind)` for its one kind with an informer over `store`."""

    def __init__(self, kind: str, store: Store | None = None) -> None:
        self.kind = kind
        self.informer = StoreInformer(store if store is not None else Store())

    def informer_for(self, kind: str) -> StoreInformer:
        assert kind == self.kind, f"asked for {kind}, holds {self.kind}"
        return self.informer
