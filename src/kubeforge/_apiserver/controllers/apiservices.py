"""APIService objects for the group versions this server serves itself, and their availability.

kube-apiserver's aggregator lists every API it serves as an APIService with no Service
(`v1.`, `v1.apps`, `v2.autoscaling`, ...): the built-in group versions are registered once at
start (label `kube-aggregator.kubernetes.io/automanaged: onstart`, as
cmd/kube-apiserver/app/aggregator.go's apiServicesToRegister does), those of CRDs are kept in
step with the served CRD versions (`automanaged: "true"`, as the aggregator's
crdRegistrationController keeps them). Each one is Available, reason Local.

APIServices that name a Service are stored and shown as any cluster shows them, but this
server does not proxy to aggregated API servers, so they are reported unavailable (with the
reason kube's availability controller gives for a missing Service, or FailedDiscoveryCheck).
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call, stored_object
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.statuswrites import set_condition
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["PRIORITIES", "LocalAPIServices"]

GROUP = "apiregistration.k8s.io"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
_SERVICES = GroupResource("", "services")
_CRDS = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")
_MANAGER = {"fieldManager": "kube-apiserver"}

# (group priority minimum, version priority) of each built-in group version, from
# pkg/controlplane/apiserver/aggregator.go and cmd/kube-apiserver/app/aggregator.go.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}
# Every CRD group version gets these (crdregistration_controller.go).
_CRD_PRIORITIES = (1000, 100)


def _name(group: str, version: str) -> str:
    return f"{version}.{group}"


def _api_service(
    group: str, version: str, priorities: tuple[int, int], managed: str
) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "APIService",
        "metadata": {"name": _name(group, version), "labels": {AUTOMANAGED: managed}},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": priorities[0],
            "versionPriority": priorities[1],
        },
    }


def _availability(obj: dict[str, Any], services: Any) -> tuple[str, str, str]:
    """(status, reason, message) of the Available condition an APIService should carry."""
    service = as_dict(obj.get("spec")).get("service")
    if not isinstance(service, dict):
        return "True", "Local", "Local APIServices are always available"
    namespace, name = str(service.get("namespace") or ""), str(service.get("name") or "")
    if services(namespace, name) is None:
        return "False", "ServiceNotFound", f'service/{name} in "{namespace}" is not present'
    return (
        "False",
        "FailedDiscoveryCheck",
        "this API server does not proxy requests to aggregated API servers",
    )


class LocalAPIServices:
    """Registers the local APIServices and keeps every APIService's availability current."""

    def __init__(self, store: Store, commits: Commits, registry: Registry, writer: Writer) -> None:
        self.store = store
        self.commits = commits
        self.registry = registry
        self.writer = writer

    def _type(self) -> ResourceType:
        rt = self.registry.get(GROUP, "v1", "apiservices")
        assert rt is not None
        return rt

    def _call(self, verb: str, name: str | None, subresource: str | None = None) -> Call:
        rt = self._type()
        info = RequestInfo(GROUP, "v1", None, "apiservices", name, subresource, verb)
        return Call(info, rt, _MANAGER)

    def _stored(self, name: str) -> StoredObject | None:
        return self.store.get(self._type().group_resource, "", name)

    def register_builtin(self) -> None:
        """Create the APIServices of the built-in group versions that are missing."""
        for rt in list(self.registry):
            if rt.is_crd or (rt.group, rt.version) not in PRIORITIES:
                continue
            priorities = PRIORITIES[(rt.group, rt.version)]
            self._ensure(_api_service(rt.group, rt.version, priorities, "onstart"))
        self.sync_crds()

    def sync_crds(self) -> None:
        """CRD group versions have an APIService exactly while some CRD serves them."""
        wanted = {
            (rt.group, rt.version)
            for rt in self.registry
            if rt.is_crd and (rt.group, rt.version) not in PRIORITIES
        }
        objects, _ = self.store.current(self._type().group_resource)
        for stored in objects:
            meta = stored.obj["metadata"]
            spec = as_dict(stored.obj.get("spec"))
            key = (str(spec.get("group") or ""), str(spec.get("version") or ""))
            if as_dict(meta.get("labels")).get(AUTOMANAGED) == "true" and key not in wanted:
                call = self._call("delete", meta["name"])
                run_now(self.writer.delete_stored(call, stored_object(self.store, call), {}))
        for group, version in sorted(wanted):
            self._ensure(_api_service(group, version, _CRD_PRIORITIES, "true"))

    def _ensure(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if self._stored(name) is not None:
            return
        try:
            run_now(self.writer.create(self._call("create", None), obj))
        except StatusError as exc:
            if exc.code != 409:
                raise

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Follow CRDs and APIServices as they are committed."""
        # Every commit passes here: a string comparison turns the others away.
        group = rt.group
        if group == _CRDS.group and rt.plural == _CRDS.resource:
            self.sync_crds()
        elif group == GROUP and rt.plural == "apiservices" and event != "DELETED":
            self._update_availability(new)

    def _update_availability(self, stored: StoredObject) -> None:
        """Set the Available condition (what kube's availability controller does)."""
        store = self.store

        def service(namespace: str, name: str) -> StoredObject | None:
            return store.get(_SERVICES, namespace, name)

        status, reason, message = _availability(stored.obj, service)
        condition = {
            "type": "Available",
            "status": status,
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        }
        set_condition(
            self.commits, self._type(), stored, condition, unless_same=("status", "reason")
        )
