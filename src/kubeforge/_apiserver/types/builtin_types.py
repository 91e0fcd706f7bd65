"""The built-in resources the server serves, with their discovery facts and strategies.

Names, verbs, short names, categories and subresources are those of Kubernetes 1.33.
"""

from __future__ import annotations

from typing import Any

from kubeforge._apiserver.types.hpaversions import hpa_v1_to_v2, hpa_v2_to_v1
from kubeforge._apiserver.types.resource import (
    ALL_VERBS,
    GroupResource,
    ResourceType,
    ScalePaths,
    Subresource,
)

__all__ = ["builtin_types", "event_from_storage", "event_to_storage"]

NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS = Subresource("status", "", ("get", "patch", "update"))
SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")
CREATE_ONLY = ("create",)
ALL_PROXY = ("create", "delete", "get", "patch", "update")


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, ("get", "patch", "update"))


def _definition(group: str, version: str, kind: str) -> str:
    if group == "apiregistration.k8s.io":
        return f"io.k8s.kube-aggregator.pkg.apis.apiregistration.{version}.{kind}"
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"
    package = {
        "": "core",
        "apps": "apps",
        "batch": "batch",
        "coordination.k8s.io": "coordination",
        "events.k8s.io": "events",
        "rbac.authorization.k8s.io": "rbac",
        "admissionregistration.k8s.io": "admissionregistration",
        "authorization.k8s.io": "authorization",
        "authentication.k8s.io": "authentication",
        "autoscaling": "autoscaling",
        "certificates.k8s.io": "certificates",
        "flowcontrol.apiserver.k8s.io": "flowcontrol",
        "networking.k8s.io": "networking",
        "node.k8s.io": "node",
        "policy": "policy",
        "discovery.k8s.io": "discovery",
        "scheduling.k8s.io": "scheduling",
        "storage.k8s.io": "storage",
    }[group]
    return f"io.k8s.api.{package}.{version}.{kind}"


def _t(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    subresources: tuple[Subresource, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
    generation: bool = False,
    **extra: Any,
) -> ResourceType:
    subs = tuple(_status(kind) if s is STATUS else s for s in subresources)
    definition = _definition(group, version, kind)
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        verbs=verbs,
        short_names=short,
        categories=categories,
        subresources=subs,
        tracks_generation=generation,
        definition=definition,
        **extra,
    )


def builtin_types() -> list[ResourceType]:
    """Fresh ResourceType objects for every built-in resource, in discovery order."""
    pod_subs = (
        Subresource("attach", "PodAttachOptions", ("create", "get")),
        Subresource("binding", "Binding", CREATE_ONLY),
        Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update")),
        Subresource("eviction", "Eviction", CREATE_ONLY, "policy", "v1"),
        Subresource("exec", "PodExecOptions", ("create", "get")),
        Subresource("log", "Pod", ("get",)),
        Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
        Subresource("proxy", "PodProxyOptions", ALL_PROXY),
        Subresource("resize", "Pod", ("get", "patch", "update")),
        STATUS,
    )
    return [
        # core/v1
        _t("", "v1", "Binding", "bindings", verbs=CREATE_ONLY, virtual=True),
        # Computed on each read from the health of the server's parts
        # (storage/componentstatuses.py).
        _t(
            "",
            "v1",
            "ComponentStatus",
            "componentstatuses",
            namespaced=False,
            short=("cs",),
            verbs=("get", "list"),
            virtual=True,
        ),
        _t("", "v1", "ConfigMap", "configmaps", short=("cm",)),
        _t("", "v1", "Endpoints", "endpoints", short=("ep",)),
        _t("", "v1", "Event", "events", short=("ev",), field_selectors=EVENT_FIELDS),
        _t("", "v1", "LimitRange", "limitranges", short=("limits",)),
        _t(
            "",
            "v1",
            "Namespace",
            "namespaces",
            namespaced=False,
            short=("ns",),
            verbs=NO_COLLECTION,
            subresources=(Subresource("finalize", "Namespace", ("update",)), STATUS),
            name_rule="label",
            returns_deleted_object=True,
        ),
        _t(
            "",
            "v1",
            "Node",
            "nodes",
            namespaced=False,
            short=("no",),
            subresources=(Subresource("proxy", "NodeProxyOptions", ALL_PROXY), STATUS),
            field_selectors=("spec.unschedulable",),
        ),
        _t(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short=("pvc",),
            subresources=(STATUS,),
        ),
        _t(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            namespaced=False,
            short=("pv",),
            subresources=(STATUS,),
        ),
        _t(
            "",
            "v1",
            "Pod",
            "pods",
            short=("po",),
            categories=("all",),
            subresources=pod_subs,
            field_selectors=(
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            ),
            returns_deleted_object=True,
        ),
        _t("", "v1", "PodTemplate", "podtemplates"),
        _t(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            short=("rc",),
            categories=("all",),
            subresources=(SCALE, STATUS),
            generation=True,
            field_selectors=("status.replicas",),
            scale=ScalePaths(label_selector=None),
        ),
        _t(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            short=("quota",),
            subresources=(STATUS,),
        ),
        _t("", "v1", "Secret", "secrets", field_selectors=("type",)),
        _t(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            short=("sa",),
            subresources=(
                Subresource("token", "TokenRequest", CREATE_ONLY, "authentication.k8s.io", "v1"),
            ),
        ),
        _t(
            "",
            "v1",
            "Service",
            "services",
            short=("svc",),
            categories=("all",),
            subresources=(Subresource("proxy", "ServiceProxyOptions", ALL_PROXY), STATUS),
            name_rule="dns1035",
            returns_deleted_object=True,
        ),
        # apiregistration.k8s.io/v1
        _t(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            namespaced=False,
            # The name is `<version>.<group>` (checked by the kind's validation).
            name_rule="path",
            categories=("api-extensions",),
            subresources=(STATUS,),
        ),
        # apps/v1
        _t("apps", "v1", "ControllerRevision", "controllerrevisions"),
        _t(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            short=("ds",),
            categories=("all",),
            subresources=(STATUS,),
            generation=True,
        ),
        _t(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            short=("deploy",),
            categories=("all",),
            subresources=(SCALE, STATUS),
            generation=True,
            scale=ScalePaths(),
            status_keeps_annotations=True,
        ),
        _t(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            short=("rs",),
            categories=("all",),
            subresources=(SCALE, STATUS),
            generation=True,
            field_selectors=("status.replicas",),
            scale=ScalePaths(),
        ),
        _t(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            short=("sts",),
            categories=("all",),
            subresources=(SCALE, STATUS),
            generation=True,
            scale=ScalePaths(),
        ),
        # autoscaling
        _t(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short=("hpa",),
            categories=("all",),
            subresources=(STATUS,),
        ),
        # autoscaling/v1 reads and writes the same objects, stored as autoscaling/v2.
        _t(
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short=("hpa",),
            categories=("all",),
            subresources=(STATUS,),
            storage=GroupResource("autoscaling", "horizontalpodautoscalers"),
            to_storage=hpa_v1_to_v2,
            from_storage=hpa_v2_to_v1,
        ),
        # batch/v1
        _t(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            short=("cj",),
            categories=("all",),
            subresources=(STATUS,),
            generation=True,
        ),
        _t(
            "batch",
            "v1",
            "Job",
            "jobs",
            categories=("all",),
            subresources=(STATUS,),
            generation=True,
            field_selectors=("status.successful",),
        ),
        # certificates.k8s.io/v1
        _t(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            namespaced=False,
            short=("csr",),
            name_rule="path",
            subresources=(Subresource("approval", "", ("get", "patch", "update")), STATUS),
            field_selectors=("spec.signerName",),
        ),
        # coordination.k8s.io/v1
        _t("coordination.k8s.io", "v1", "Lease", "leases"),
        # discovery.k8s.io/v1
        _t("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", generation=True),
        # events.k8s.io/v1 shares storage with core/v1 events
        _t(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            short=("ev",),
            storage=GroupResource("", "events"),
            to_storage=event_to_storage,
            from_storage=event_from_storage,
            # Selectors name this version's fields; the stored (core/v1) objects hold them
            # under the core names.
            field_selectors=tuple(_event_field(f) for f in EVENT_FIELDS),
            extras={
                "field_paths": {_event_field(f): f for f in EVENT_FIELDS},
            },
        ),
        # networking.k8s.io/v1
        _t("networking.k8s.io", "v1", "IngressClass", "ingressclasses", namespaced=False),
        _t(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            short=("ing",),
            subresources=(STATUS,),
            generation=True,
        ),
        _t(
            "networking.k8s.io",
            "v1",
            "IPAddress",
            "ipaddresses",
            namespaced=False,
            short=("ip",),
            # The name, an IP address, is checked by the kind's own validation.
            name_rule="path",
        ),
        _t(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            short=("netpol",),
            generation=True,
        ),
        _t(
            "networking.k8s.io",
            "v1",
            "ServiceCIDR",
            "servicecidrs",
            namespaced=False,
            subresources=(STATUS,),
        ),
        # node.k8s.io/v1
        _t("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", namespaced=False),
        # policy/v1
        _t(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short=("pdb",),
            subresources=(STATUS,),
            generation=True,
        ),
        # rbac.authorization.k8s.io/v1
        _t(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            namespaced=False,
            name_rule="path",
        ),
        _t(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            namespaced=False,
            name_rule="path",
        ),
        _t(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            name_rule="path",
        ),
        _t("rbac.authorization.k8s.io", "v1", "Role", "roles", name_rule="path"),
        # scheduling.k8s.io/v1
        _t(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            namespaced=False,
            short=("pc",),
        ),
        # storage.k8s.io/v1
        _t("storage.k8s.io", "v1", "CSIDriver", "csidrivers", namespaced=False),
        _t("storage.k8s.io", "v1", "CSINode", "csinodes", namespaced=False),
        _t("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities"),
        _t(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            namespaced=False,
            short=("sc",),
        ),
        _t(
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            "volumeattachments",
            namespaced=False,
            subresources=(STATUS,),
        ),
        # flowcontrol.apiserver.k8s.io/v1
        _t(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "flowschemas",
            namespaced=False,
            subresources=(STATUS,),
            generation=True,
            name_rule="path",
        ),
        _t(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            namespaced=False,
            subresources=(STATUS,),
            generation=True,
            name_rule="path",
        ),
        # apiextensions.k8s.io/v1
        _t(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            namespaced=False,
            short=("crd", "crds"),
            categories=("api-extensions",),
            subresources=(STATUS,),
            generation=True,
        ),
        # admissionregistration.k8s.io/v1
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            namespaced=False,
            categories=("api-extensions",),
            subresources=(STATUS,),
            generation=True,
        ),
        _t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
        ),
        # Reviews: answered at once, never stored.
        _t(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            namespaced=False,
            verbs=CREATE_ONLY,
            virtual=True,
        ),
        _t(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            namespaced=False,
            verbs=CREATE_ONLY,
            virtual=True,
        ),
        _t(
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            verbs=CREATE_ONLY,
            virtual=True,
        ),
        _t(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            namespaced=False,
            verbs=CREATE_ONLY,
            virtual=True,
        ),
        _t(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            namespaced=False,
            verbs=CREATE_ONLY,
            virtual=True,
        ),
        _t(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            namespaced=False,
            verbs=CREATE_ONLY,
            virtual=True,
        ),
    ]


# The order in which groups appear in /apis, as on a real server.
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)

# Fields core/v1 Events can be selected by (what `kubectl describe` asks for).
EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)


def _event_field(core: str) -> str:
    """The events.k8s.io/v1 name of a core/v1 Event field."""
    for new, old in _EVENT_RENAMES:
        if core == old or core.startswith(old + "."):
            return new + core[len(old) :]
    return core


# events.k8s.io/v1 <-> core/v1 field names (the rest are shared).
_EVENT_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)


def event_to_storage(obj: dict[str, Any]) -> dict[str, Any]:
    """events.k8s.io/v1 Event -> core/v1 Event."""
    out = dict(obj)
    for new, old in _EVENT_RENAMES:
        if new in out:
            out[old] = out.pop(new)
    out["apiVersion"] = "v1"
    return out


def event_from_storage(obj: dict[str, Any]) -> dict[str, Any]:
    """core/v1 Event -> events.k8s.io/v1 Event."""
    out = dict(obj)
    for new, old in _EVENT_RENAMES:
        if old in out:
            out[new] = out.pop(old)
    out["apiVersion"] = "events.k8s.io/v1"
    return out
