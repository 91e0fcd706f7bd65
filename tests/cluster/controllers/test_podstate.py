"""A pod's state as the workload controllers judge it (_cluster/controllers/_podstate.py), and
its `PodSummary`, which must judge a pod exactly as the functions over the pod do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from kubeforge._cluster.controllers._podstate import (
    PodSummary,
    is_pod_active,
    is_pod_ready,
    seconds_until_available,
)

AT = datetime(2030, 1, 1, tzinfo=UTC)
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u-1"}


def pod(
    *,
    phase: str = "Running",
    ready: str | None = "True",
    since: timedelta = timedelta(seconds=5),
    deleting: bool = False,
    owner: bool = True,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-1", "namespace": "default", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{**OWNER, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [
            {
                "type": "Ready",
                "status": ready,
                "lastTransitionTime": (AT - since).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ]
    return {"metadata": meta, "status": status}


@pytest.mark.parametrize(
    "obj",
    [
        pod(),
        pod(ready="False"),
        pod(ready=None),
        pod(phase="Succeeded"),
        pod(deleting=True),
        pod(owner=False),
        pod(since=timedelta(seconds=30)),
    ],
)
def test_a_summary_judges_a_pod_as_the_functions_do(obj: dict[str, Any]) -> None:
    summary = PodSummary("default/web-1", obj)
    assert summary.name == "web-1"
    assert summary.active == is_pod_active(obj)
    assert (summary.ready is not None) == is_pod_ready(obj)
    for min_ready in (0, 10, 60):
        assert summary.seconds_until_available(min_ready, AT) == seconds_until_available(
            obj, min_ready, AT
        )
    assert summary.controller_uid == ("u-1" if obj["metadata"].get("ownerReferences") else None)


def test_a_summary_answers_for_the_selector_asked_about() -> None:
    summary = PodSummary("default/web-1", pod(labels={"app": "web", "tier": "front"}))
    web = {"matchLabels": {"app": "web"}}
    db = {"matchLabels": {"app": "db"}}
    assert summary.matches(web, orjson.dumps(web))
    assert not summary.matches(db, orjson.dumps(db))
    assert summary.matches(web, orjson.dumps(web))
    expression = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}
    assert not summary.matches(expression, orjson.dumps(expression))


def test_a_summary_answers_for_the_labels_asked_about() -> None:
    summary = PodSummary("default/web-1", pod(labels={"app": "web", "tier": "front"}))
    template = {"app": "web"}
    assert summary.labeled(template, orjson.dumps(template))
    more = {"app": "web", "version": "2"}
    assert not summary.labeled(more, orjson.dumps(more))
    assert summary.labeled({}, orjson.dumps({}))
