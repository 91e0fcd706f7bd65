"""The clusters a provider engaged: started before they are engaged, disengaged before they
are stopped, one name replacing another, a cluster that fails to engage stopped again."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge.multicluster import Cluster, ClusterNotFound, ClusterSet


class FakeCluster:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def start(self) -> None:
        self.log.append(f"start {self.name}")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")


class Recorder:
    def __init__(self, log: list[str], refuse: str | None = None) -> None:
        self.log = log
        self.refuse = refuse

    async def engage(self, name: str, cluster: Any) -> None:
        if cluster.name == self.refuse:
            raise RuntimeError("refused")
        self.log.append(f"engage {name}={cluster.name}")

    async def disengage(self, name: str) -> None:
        self.log.append(f"disengage {name}")


def fake(name: str, log: list[str]) -> Cluster:
    return FakeCluster(name, log)  # type: ignore[return-value]


async def test_clusters_start_engage_disengage_and_stop_in_order() -> None:
    log: list[str] = []
    aware = Recorder(log)
    clusters = ClusterSet()
    first = fake("one", log)
    await clusters.add("a", first, aware)
    await clusters.add("a", first, aware)  # the same cluster again: nothing
    await clusters.add("b", fake("two", log), aware)
    assert log == ["start one", "engage a=one", "start two", "engage b=two"]
    assert clusters.names() == ["a", "b"] and "a" in clusters and len(clusters) == 2
    assert clusters.get("a") is first
    log.clear()
    # Another under a taken name: the first goes before the second comes.
    await clusters.add("a", fake("three", log), aware)
    assert log == ["disengage a", "stop one", "start three", "engage a=three"]
    log.clear()
    assert await clusters.remove("a", aware)
    assert not await clusters.remove("a", aware)
    assert log == ["disengage a", "stop three"]
    with pytest.raises(ClusterNotFound):
        clusters.get("a")
    log.clear()
    await clusters.clear(aware)
    assert log == ["disengage b", "stop two"]
    assert clusters.names() == []


async def test_a_cluster_that_fails_to_engage_is_stopped_and_not_kept() -> None:
    log: list[str] = []
    clusters = ClusterSet()
    with pytest.raises(RuntimeError, match="refused"):
        await clusters.add("a", fake("bad", log), Recorder(log, refuse="bad"))
    assert log == ["start bad", "stop bad"]
    assert "a" not in clusters
