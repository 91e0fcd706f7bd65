"""Per-kind strategies: what the server does to a built-in object besides the generic write
path — defaulting, the type's own create/update preparation (including what admission
plugins of a default cluster add), and semantic validation.

The write path (`handlers/writes.py`) already handles system metadata, generation and the
generic status rules (status dropped on create, kept on update, only status taken on
/status); strategies add the rest. `strategy_for` answers a cached instance per kind; kinds
the server does not build in (CRD-defined ones) get a strategy that does nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kubeforge._api.machinery.access import as_dict
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import validate_builtin_finalizers
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.types import defaults
from kubeforge._apiserver.types.validation import autoscaling
from kubeforge._apiserver.types.validation.certificates import (
    validate_csr,
    validate_csr_approval_update,
    validate_csr_status_update,
)
from kubeforge._apiserver.types.validation.common import (
    CreateValidator,
    UpdateValidator,
    semantic_equal,
)
from kubeforge._apiserver.types.validation.core_pods import (
    MIRROR_ANNOTATION,
    pod_qos_class,
    validate_pod,
    validate_pod_status_update,
)
from kubeforge._apiserver.types.validation.registry import VALIDATORS

__all__ = ["SYSTEM_PRIORITY_CLASSES", "BuiltinStrategy", "Strategy", "strategy_for"]

Obj = dict[str, Any]

# Groups whose kinds are served from the server's own definitions.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)

# Status a new object starts with: Go writes a status struct out with its non-optional
# fields even when nothing has set them yet.
STATUS_ON_CREATE: dict[tuple[str, str], Obj] = {
    ("", "PersistentVolume"): {"phase": "Pending"},
    ("", "PersistentVolumeClaim"): {"phase": "Pending"},
    ("", "ReplicationController"): {"replicas": 0},
    ("", "ResourceQuota"): {},
    ("", "Service"): {"loadBalancer": {}},
    ("apps", "DaemonSet"): {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    ("apps", "Deployment"): {},
    ("apps", "ReplicaSet"): {"replicas": 0},
    ("apps", "StatefulSet"): {"replicas": 0, "availableReplicas": 0},
    ("autoscaling", "HorizontalPodAutoscaler"): {"desiredReplicas": 0},
    ("apiregistration.k8s.io", "APIService"): {},
    ("batch", "CronJob"): {},
    ("certificates.k8s.io", "CertificateSigningRequest"): {},
    ("batch", "Job"): {},
    ("networking.k8s.io", "Ingress"): {"loadBalancer": {}},
    ("policy", "PodDisruptionBudget"): {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
}


class Strategy:
    """The per-kind hooks of the write path. This base changes nothing and finds no errors,
    which is right for CRD-defined kinds (their schema does that work)."""

    __slots__ = ()

    @property
    def reports_required(self) -> bool:
        """Whether validate() itself reports missing required fields (so schema-level
        "Required value" errors for this kind would repeat them)."""
        return False

    def default(self, obj: Obj) -> None:
        """Fill unset fields in place, as decoding a request body does."""

    def prepare_create(self, obj: Obj) -> None:
        """Adjust a new object after system metadata is set and before validation."""

    def prepare_create_for(self, obj: Obj, user: UserInfo) -> None:
        """Record, on a new object, who creates it (a CSR's requester); after prepare_create."""

    def for_subresource(self, name: str) -> Strategy:
        """The strategy of writes through a subresource (a CSR's /status and /approval each
        have their own); this one for the others."""
        return self

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        """Adjust the new state of a main-resource update (old status already restored)."""

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        """Adjust the new state of a /status update (everything but status already old)."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """Type-specific problems with a new object."""
        return []

    def validate_update(self, obj: Obj, old: Obj) -> list[FieldError]:
        """Type-specific problems with an update, transitions included."""
        return []


class BuiltinStrategy(Strategy):
    """A built-in kind: its defaults, its initial status, its validators, and the finalizer
    rule every built-in kind follows."""

    __slots__ = ("_defaulter", "_status", "_strict_finalizers", "_validate", "_validate_update")

    def __init__(
        self,
        defaulter: Callable[[Obj], None] | None = None,
        validators: tuple[CreateValidator, UpdateValidator] | None = None,
        status: Obj | None = None,
        strict_finalizers: bool = True,
    ) -> None:
        self._defaulter = defaulter
        self._validate: CreateValidator | None = validators[0] if validators else None
        self._validate_update: UpdateValidator | None = validators[1] if validators else None
        self._status = status
        self._strict_finalizers = strict_finalizers

    @property
    def reports_required(self) -> bool:
        return self._validate is not None

    def default(self, obj: Obj) -> None:
        if self._defaulter is not None:
            self._defaulter(obj)

    def prepare_create(self, obj: Obj) -> None:
        if self._status is not None:
            obj["status"] = {**copy.deepcopy(self._status), **as_dict(obj.get("status"))}

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        if self._status is not None:
            status = obj.get("status")
            if not isinstance(status, dict):
                status = obj["status"] = {}
            for key, value in self._status.items():
                if key not in status:
                    status[key] = copy.deepcopy(value)

    def validate(self, obj: Obj) -> list[FieldError]:
        errors = _finalizer_errors(obj) if self._strict_finalizers else []
        if self._validate is not None:
            errors += self._validate(obj)
        return errors

    def validate_update(self, obj: Obj, old: Obj) -> list[FieldError]:
        errors = _finalizer_errors(obj) if self._strict_finalizers else []
        if self._validate_update is not None:
            errors += self._validate_update(obj, old)
        return errors


def _finalizer_errors(obj: Obj) -> list[FieldError]:
    finalizers = as_dict(obj.get("metadata")).get("finalizers")
    if not finalizers:
        return []
    return validate_builtin_finalizers(finalizers, "metadata.finalizers")


# -- pods ------------------------------------------------------------------------------------

# What the default admission plugins add to pods: the default service account, a priority
# from the (built-in) priority classes, and tolerations for unreachable and not-ready nodes.
# The PriorityClasses every cluster has (pkg/apis/scheduling/helpers.go): name, value,
# description.
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
)
_SYSTEM_PRIORITIES = {name: value for name, value, _ in SYSTEM_PRIORITY_CLASSES}
_NODE_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DEFAULT_TOLERATION_SECONDS = 300


def _add_node_tolerations(spec: Obj) -> None:
    # As plugin/pkg/admission/defaulttolerationseconds/admission.go, on create and update:
    # a toleration for the key (or any key) with NoExecute (or any effect) covers it.
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    for key in _NODE_TOLERATIONS:
        covered = any(
            isinstance(t, dict)
            and t.get("key") in (key, "", None)
            and t.get("effect") in ("NoExecute", "", None)
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations


class PodStrategy(BuiltinStrategy):
    """Pods: admission defaults on create, status Pending with the QoS class, and a
    scheduling-gated condition for gated pods; writes through /status have their own."""

    __slots__ = ("_status_writes",)

    def __init__(
        self,
        defaulter: Callable[[Obj], None] | None = None,
        validators: tuple[CreateValidator, UpdateValidator] | None = None,
        status: Obj | None = None,
        strict_finalizers: bool = True,
    ) -> None:
        super().__init__(defaulter, validators, status, strict_finalizers)
        self._status_writes = PodStatusStrategy(
            defaulter, (validate_pod, validate_pod_status_update), status, strict_finalizers
        )

    def for_subresource(self, name: str) -> Strategy:
        return self._status_writes if name == "status" else self

    def prepare_create(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        # The ServiceAccount admission plugin gives every pod but a mirror pod its namespace's
        # default account (plugin/pkg/admission/serviceaccount/admission.go).
        if MIRROR_ANNOTATION not in as_dict(as_dict(obj.get("metadata")).get("annotations")):
            account = spec.get("serviceAccountName") or "default"
            spec["serviceAccountName"] = account
            spec["serviceAccount"] = account
        priority_class = spec.get("priorityClassName")
        priority_class = priority_class if isinstance(priority_class, str) else ""
        if not priority_class or priority_class in _SYSTEM_PRIORITIES:
            if spec.get("priority") is None:
                spec["priority"] = _SYSTEM_PRIORITIES.get(priority_class, 0)
            if spec.get("preemptionPolicy") is None:
                spec["preemptionPolicy"] = "PreemptLowerPriority"
        _add_node_tolerations(spec)
        status: Obj = {"phase": "Pending", "qosClass": pod_qos_class(spec)}
        if spec.get("schedulingGates"):
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": None,
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
        obj["status"] = status

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _add_node_tolerations(spec)

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        _keep_qos_class(obj, old)


class PodStatusStrategy(BuiltinStrategy):
    """Pods' /status, as kube-apiserver's podStatusStrategy: the status changes, the spec is
    kept (so it is not validated again)."""

    __slots__ = ()

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        _keep_qos_class(obj, old)


def _keep_qos_class(obj: Obj, old: Obj) -> None:
    # The QoS class is fixed at creation; a status without one keeps the old.
    status = obj.get("status")
    old_qos = as_dict(old.get("status")).get("qosClass")
    if isinstance(status, dict) and not status.get("qosClass") and old_qos:
        status["qosClass"] = old_qos


# -- namespaces ------------------------------------------------------------------------------

NAME_LABEL = "kubernetes.io/metadata.name"


def _label_with_name(obj: Obj) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        return
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        meta["labels"] = {NAME_LABEL: meta["name"]}
    elif labels.get(NAME_LABEL) != meta["name"]:
        meta["labels"] = {**labels, NAME_LABEL: meta["name"]}


class PersistentVolumeStrategy(BuiltinStrategy):
    """PersistentVolumes: when their phase last changed, as pkg/registry/core/
    persistentvolume/strategy.go records it (PersistentVolumeLastPhaseTransitionTime)."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        super().prepare_create(obj)
        obj["status"]["lastPhaseTransitionTime"] = now_rfc3339()

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        super().prepare_status_update(obj, old)
        status, before = obj["status"], as_dict(old.get("status"))
        given = status.get("lastPhaseTransitionTime")
        if status.get("phase") == before.get("phase"):
            if given is None and before.get("lastPhaseTransitionTime") is not None:
                status["lastPhaseTransitionTime"] = before["lastPhaseTransitionTime"]
        elif given is None or given == before.get("lastPhaseTransitionTime"):
            # The phase changed and the writer did not say when: now.
            status["lastPhaseTransitionTime"] = now_rfc3339()


class NamespaceStrategy(BuiltinStrategy):
    """Namespaces: phase Active, the `kubernetes` spec finalizer, and the name label (also
    for names generated from generateName)."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list) or not finalizers:
            spec["finalizers"] = ["kubernetes"]
        elif "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]
        _label_with_name(obj)

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        # spec.finalizers changes are left alone: the finalize subresource writes through
        # this same path.
        _label_with_name(obj)


# -- jobs ------------------------------------------------------------------------------------

JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"


def _copy_template_labels(obj: Obj) -> None:
    # Reading a Job back applies its defaults again: an object without labels takes the
    # (by then generated) labels of its pod template.
    meta = obj.get("metadata")
    labels = as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("metadata")).get(
        "labels"
    )
    if isinstance(meta, dict) and not meta.get("labels") and isinstance(labels, dict) and labels:
        meta["labels"] = dict(labels)


class JobStrategy(BuiltinStrategy):
    """Jobs: unless the selector is manual, label the pod template with the job's name and
    uid and select on the uid."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        super().prepare_create(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        if spec.get("manualSelector") is not True:
            self._generate_selector(obj, spec)
        _copy_template_labels(obj)

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        _copy_template_labels(obj)

    @staticmethod
    def _generate_selector(obj: Obj, spec: Obj) -> None:
        meta = as_dict(obj.get("metadata"))
        uid = str(meta.get("uid") or "")
        name = str(meta.get("name") or "")
        template = spec.get("template")
        if not isinstance(template, dict):
            template = spec["template"] = {}
        template_meta = template.get("metadata")
        if not isinstance(template_meta, dict):
            template_meta = template["metadata"] = {}
        labels = dict(as_dict(template_meta.get("labels")))
        generated = {
            JOB_UID_LABEL: uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        for key, value in generated.items():
            labels.setdefault(key, value)
        # Label maps are written out sorted by key.
        template_meta["labels"] = dict(sorted(labels.items()))
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        match = selector.get("matchLabels")
        if not isinstance(match, dict):
            match = selector["matchLabels"] = {}
        match.setdefault(JOB_UID_LABEL, uid)


# -- deployments -----------------------------------------------------------------------------


class DeploymentStrategy(BuiltinStrategy):
    """Deployments: annotation changes (rollback and change-cause records) also count as a
    new generation."""

    __slots__ = ()

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        meta = obj.get("metadata")
        old_meta = as_dict(old.get("metadata"))
        if not isinstance(meta, dict):
            return
        if (meta.get("annotations") or {}) != (old_meta.get("annotations") or {}):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1


# -- stateful sets and daemon sets ------------------------------------------------------------


def _rolling_update(obj: Mapping[str, Any]) -> Any:
    return as_dict(as_dict(as_dict(obj.get("spec")).get("updateStrategy"))).get("rollingUpdate")


class StatefulSetStrategy(BuiltinStrategy):
    """StatefulSets: `rollingUpdate.maxUnavailable` belongs to the MaxUnavailableStatefulSet
    feature gate, off (alpha) in Kubernetes 1.33, so it is dropped unless the stored object
    already has it (dropStatefulSetDisabledFields in pkg/registry/apps/statefulset)."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        super().prepare_create(obj)
        self._drop_max_unavailable(obj, None)

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        self._drop_max_unavailable(obj, old)

    @staticmethod
    def _drop_max_unavailable(obj: Obj, old: Obj | None) -> None:
        rolling = _rolling_update(obj)
        if not isinstance(rolling, dict) or "maxUnavailable" not in rolling:
            return
        if old is not None and as_dict(_rolling_update(old)).get("maxUnavailable") is not None:
            return
        del rolling["maxUnavailable"]


# The template generation of a DaemonSet, which apps/v1 keeps in an annotation (and its
# pods in the `pod-template-generation` label).
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: Mapping[str, Any]) -> int:
    value = as_dict(as_dict(obj.get("metadata")).get("annotations")).get(TEMPLATE_GENERATION)
    try:
        return int(str(value))
    except ValueError:
        return 0


class DaemonSetStrategy(BuiltinStrategy):
    """DaemonSets: a template generation, 1 at creation and one more with each change of
    the pod template, which users cannot set (pkg/registry/apps/daemonset/strategy.go)."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        super().prepare_create(obj)
        self._set_generation(obj, max(_template_generation(obj), 1))

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        generation = _template_generation(old)
        template = as_dict(obj.get("spec")).get("template")
        if not semantic_equal(template, as_dict(old.get("spec")).get("template")):
            generation += 1
        self._set_generation(obj, generation)

    @staticmethod
    def _set_generation(obj: Obj, generation: int) -> None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or generation <= 0:
            return
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[TEMPLATE_GENERATION] = str(generation)


# -- services --------------------------------------------------------------------------------


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def _ports(spec: Mapping[str, Any]) -> list[Obj]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _port_name(port: Obj) -> str:
    name = port.get("name")
    return name if isinstance(name, str) else ""


class ServiceStrategy(BuiltinStrategy):
    """Services: an update that leaves out the allocated cluster IPs or node ports keeps
    them (allocation itself happens elsewhere)."""

    __slots__ = ()

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        spec = obj.get("spec")
        old_spec = as_dict(old.get("spec"))
        if not isinstance(spec, dict):
            return
        kinds = (spec.get("type"), old_spec.get("type"))
        if "ExternalName" not in kinds and not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
            old_ips = old_spec.get("clusterIPs")
            spec["clusterIPs"] = (
                list(old_ips) if isinstance(old_ips, list) else [old_spec["clusterIP"]]
            )
        if _needs_node_ports(spec) and _needs_node_ports(old_spec):
            ports = _ports(spec)
            old_node_ports = {_port_name(p): p.get("nodePort") for p in _ports(old_spec)}
            used = {p.get("nodePort") for p in ports if isinstance(p.get("nodePort"), int)}
            for port in ports:
                if not port.get("nodePort"):
                    value = old_node_ports.get(_port_name(port))
                    if isinstance(value, int) and value and value not in used:
                        port["nodePort"] = value
            if (
                spec.get("externalTrafficPolicy") == "Local"
                and not spec.get("healthCheckNodePort")
                and old_spec.get("healthCheckNodePort")
            ):
                spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


# -- CustomResourceDefinitions ---------------------------------------------------------------


def _storage_version(crd: Obj) -> str | None:
    versions = as_dict(crd.get("spec")).get("versions")
    for version in versions if isinstance(versions, list) else ():
        if isinstance(version, dict) and version.get("storage") is True:
            name = version.get("name")
            return name if isinstance(name, str) else None
    return None


class CRDStrategy(BuiltinStrategy):
    """CustomResourceDefinitions: the storage version is recorded in status.storedVersions;
    accepted names start empty (a controller accepts them)."""

    __slots__ = ()

    def prepare_create(self, obj: Obj) -> None:
        storage = _storage_version(obj)
        obj["status"] = {
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [storage] if storage else [],
        }

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        storage = _storage_version(obj)
        status = obj.get("status")
        if not storage or not isinstance(status, dict):
            return
        stored = status.get("storedVersions")
        stored = list(stored) if isinstance(stored, list) else []
        if storage not in stored:
            # A new dict: the status is shared with the old object at this point.
            obj["status"] = {**status, "storedVersions": [*stored, storage]}


# -- CertificateSigningRequests --------------------------------------------------------------
# As pkg/registry/certificates/certificates/strategy.go: the requester is recorded from the
# request, never from the body; the object's own update changes neither spec nor status;
# /status may not touch approval, /approval nothing but the conditions.

_APPROVAL_CONDITIONS = ("Approved", "Denied")


def _csr_conditions(obj: Obj) -> list[Obj]:
    conditions = as_dict(obj.get("status")).get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _stamp_conditions(obj: Obj, old: Obj) -> None:
    """populateConditionTimestamps: a condition without times is updated now, and keeps the
    transition time of an old condition of the same type and status."""
    now = now_rfc3339()
    old_conditions = _csr_conditions(old)
    for condition in _csr_conditions(obj):
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            condition["lastTransitionTime"] = next(
                (
                    c["lastTransitionTime"]
                    for c in old_conditions
                    if c.get("type") == condition.get("type")
                    and c.get("status") == condition.get("status")
                    and c.get("lastTransitionTime")
                ),
                now,
            )


class CSRStrategy(BuiltinStrategy):
    """The CertificateSigningRequest object itself."""

    __slots__ = ("_approval", "_status_writes")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._status_writes = CSRStatusStrategy(
            validators=(validate_csr, validate_csr_status_update)
        )
        self._approval = CSRApprovalStrategy(
            validators=(validate_csr, validate_csr_approval_update)
        )

    def for_subresource(self, name: str) -> Strategy:
        if name == "status":
            return self._status_writes
        if name == "approval":
            return self._approval
        return self

    def prepare_create_for(self, obj: Obj, user: UserInfo) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        # The requester's UserInfo, its empty fields left out as Go's omitempty does.
        spec.update((k, v) for k, v in user.to_dict().items() if v)

    def prepare_update(self, obj: Obj, old: Obj) -> None:
        if "spec" in old:
            obj["spec"] = old["spec"]
        else:
            obj.pop("spec", None)


class CSRStatusStrategy(BuiltinStrategy):
    """CSR /status: the certificate and conditions other than approval."""

    __slots__ = ()

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        # The approval conditions stay as they were (a change in their number is left for
        # validation to refuse).
        new_conditions, old_conditions = _csr_conditions(obj), _csr_conditions(old)
        for kind in _APPROVAL_CONDITIONS:
            new_at = [i for i, c in enumerate(new_conditions) if c.get("type") == kind]
            old_at = [c for c in old_conditions if c.get("type") == kind]
            if len(new_at) == len(old_at):
                for index, before in zip(new_at, old_at, strict=True):
                    new_conditions[index].clear()
                    new_conditions[index].update(copy.deepcopy(before))
        _stamp_conditions(obj, old)


class CSRApprovalStrategy(BuiltinStrategy):
    """CSR /approval: the conditions, nothing else of the status."""

    __slots__ = ()

    def prepare_status_update(self, obj: Obj, old: Obj) -> None:
        _stamp_conditions(obj, old)
        status = {**as_dict(old.get("status"))}
        conditions = as_dict(obj.get("status")).get("conditions")
        if conditions is None:
            status.pop("conditions", None)
        else:
            status["conditions"] = conditions
        obj["status"] = status


# -- the registry ----------------------------------------------------------------------------

_SPECIAL: dict[tuple[str, str], type[BuiltinStrategy]] = {
    ("", "Pod"): PodStrategy,
    ("", "Namespace"): NamespaceStrategy,
    ("", "PersistentVolume"): PersistentVolumeStrategy,
    ("", "Service"): ServiceStrategy,
    ("apps", "DaemonSet"): DaemonSetStrategy,
    ("apps", "Deployment"): DeploymentStrategy,
    ("apps", "StatefulSet"): StatefulSetStrategy,
    ("batch", "Job"): JobStrategy,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): CRDStrategy,
    ("certificates.k8s.io", "CertificateSigningRequest"): CSRStrategy,
}

_NOOP = Strategy()
# By (group, kind, version) as asked; the versions of a kind share one strategy (_SHARED)
# unless _VERSIONED gives one of them its own.
_CACHE: dict[tuple[str, str, str], Strategy] = {}
_SHARED: dict[tuple[str, str], Strategy] = {}


# Groups validated with the generic object-meta rules, which lack the core kinds' finalizer
# rule (a CRD's own `customresourcecleanup.apiextensions.k8s.io` would fail it).
_GENERIC_META_GROUPS = frozenset(
    {"apiextensions.k8s.io", "admissionregistration.k8s.io", "apiregistration.k8s.io"}
)

# Kinds whose versions are defaulted and validated differently, by (group, kind, version).
_VERSIONED: dict[tuple[str, str, str], Callable[[], Strategy]] = {
    ("autoscaling", "HorizontalPodAutoscaler", "v1"): lambda: BuiltinStrategy(
        defaults.default_hpa_v1,
        (autoscaling.validate_hpa_v1, autoscaling.validate_hpa_v1_update),
        STATUS_ON_CREATE[("autoscaling", "HorizontalPodAutoscaler")],
    ),
}


def _build(group: str, kind: str, version: str) -> Strategy:
    if group not in BUILTIN_GROUPS:
        return _NOOP
    versioned = _VERSIONED.get((group, kind, version))
    if versioned is not None:
        return versioned()
    key = (group, kind)
    shared = _SHARED.get(key)
    if shared is None:
        cls = _SPECIAL.get(key, BuiltinStrategy)
        shared = _SHARED[key] = cls(
            defaults.DEFAULTERS.get(key),
            VALIDATORS.get(key),
            STATUS_ON_CREATE.get(key),
            strict_finalizers=group not in _GENERIC_META_GROUPS,
        )
    return shared


def strategy_for(group: str, kind: str, version: str = "") -> Strategy:
    """The strategy of a kind (one shared instance each; a few kinds have one per version);
    a no-op one for kinds that are not built in."""
    key = (group, kind, version)
    strategy = _CACHE.get(key)
    if strategy is None:
        strategy = _CACHE[key] = _build(group, kind, version)
    return strategy
