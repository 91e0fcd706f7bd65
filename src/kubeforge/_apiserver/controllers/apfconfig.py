"""API Priority and Fairness configuration: the mandatory objects and FlowSchema status.

kube-apiserver keeps the mandatory PriorityLevelConfigurations and FlowSchemas (`exempt` and
`catch-all`) in every cluster (staging/src/k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/
default.go) and marks each FlowSchema whose priority level is missing as Dangling (the APF
configuration controller, pkg/util/flowcontrol/apf_controller.go). This server does the same;
it does not limit requests by them.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.statuswrites import set_condition
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["APFConfiguration", "mandatory_objects"]

GROUP = "flowcontrol.apiserver.k8s.io"
AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
_FLOW_SCHEMAS = GroupResource(GROUP, "flowschemas")
_LEVELS = GroupResource(GROUP, "prioritylevelconfigurations")
_MANAGER = {"fieldManager": "api-priority-and-fairness-config-producer-v1"}
_EVERYTHING = {
    "resourceRules": [
        {
            "verbs": ["*"],
            "apiGroups": ["*"],
            "resources": ["*"],
            "clusterScope": True,
            "namespaces": ["*"],
        }
    ],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "annotations": {AUTO_UPDATE: "true"}}


def _groups(*names: str) -> list[dict[str, Any]]:
    return [{"kind": "Group", "group": {"name": name}} for name in names]


def mandatory_objects() -> list[dict[str, Any]]:
    """The two mandatory priority levels, then the two mandatory flow schemas."""
    version = f"{GROUP}/v1"
    return [
        {
            "apiVersion": version,
            "kind": "PriorityLevelConfiguration",
            "metadata": _meta("exempt"),
            "spec": {
                "type": "Exempt",
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
            },
        },
        {
            "apiVersion": version,
            "kind": "PriorityLevelConfiguration",
            "metadata": _meta("catch-all"),
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 5,
                    "lendablePercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        },
        {
            "apiVersion": version,
            "kind": "FlowSchema",
            "metadata": _meta("exempt"),
            "spec": {
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 1,
                "rules": [{"subjects": _groups("system:masters"), **_EVERYTHING}],
            },
        },
        {
            "apiVersion": version,
            "kind": "FlowSchema",
            "metadata": _meta("catch-all"),
            "spec": {
                "priorityLevelConfiguration": {"name": "catch-all"},
                "matchingPrecedence": 10000,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": _groups("system:unauthenticated", "system:authenticated"),
                        **_EVERYTHING,
                    }
                ],
            },
        },
    ]


def _dangling(level: str, exists: bool) -> tuple[str, str, str]:
    if exists:
        return (
            "False",
            "Found",
            f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "and it exists",
        )
    return (
        "True",
        "NotFound",
        f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
        "but there is no such object",
    )


class APFConfiguration:
    """Creates the mandatory objects and keeps the FlowSchemas' Dangling condition."""

    def __init__(self, store: Store, commits: Commits, registry: Registry, writer: Writer) -> None:
        self.store = store
        self.commits = commits
        self.registry = registry
        self.writer = writer

    def _type(self, plural: str) -> ResourceType:
        rt = self.registry.get(GROUP, "v1", plural)
        assert rt is not None
        return rt

    def bootstrap(self) -> None:
        """Create whichever mandatory object is missing (one a user changed is left)."""
        for obj in mandatory_objects():
            plural = obj["kind"].lower() + "s"
            rt = self._type(plural)
            if self.store.get(rt.group_resource, "", obj["metadata"]["name"]) is not None:
                continue
            info = RequestInfo(GROUP, "v1", None, plural, None, None, "create")
            run_now(self.writer.create(Call(info, rt, _MANAGER), obj))

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Keep FlowSchemas' Dangling condition current as schemas and levels change."""
        if rt.group != GROUP:  # every commit passes here; most leave at once
            return
        if rt.plural == _FLOW_SCHEMAS.resource and event != "DELETED":
            self._mark(new)
        elif rt.plural == _LEVELS.resource and event in ("ADDED", "DELETED"):
            name = new.obj["metadata"]["name"]
            schemas, _ = self.store.current(_FLOW_SCHEMAS)
            for stored in schemas:
                spec = as_dict(stored.obj.get("spec"))
                if as_dict(spec.get("priorityLevelConfiguration")).get("name") == name:
                    self._mark(stored)

    def _mark(self, stored: StoredObject) -> None:
        level = str(
            as_dict(as_dict(stored.obj.get("spec")).get("priorityLevelConfiguration")).get("name")
            or ""
        )
        exists = self.store.get(_LEVELS, "", level) is not None
        status, reason, message = _dangling(level, exists)
        condition = {
            "type": "Dangling",
            "status": status,
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        }
        rt = self._type("flowschemas")
        set_condition(self.commits, rt, stored, condition, unless_same=("status", "message"))
