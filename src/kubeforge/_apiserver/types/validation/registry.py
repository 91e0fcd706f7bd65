"""Each built-in kind's validators, by group and kind.

`VALIDATORS` maps `(group, kind)` to a pair of functions: one for new objects, one for
updates (which re-checks the new object and adds the transition rules)."""

from __future__ import annotations

from kubeforge._apiserver.types.validation import admissionregistration
from kubeforge._apiserver.types.validation.apiextensions import validate_crd, validate_crd_update
from kubeforge._apiserver.types.validation.apiregistration import (
    validate_api_service,
    validate_api_service_update,
)
from kubeforge._apiserver.types.validation.apps import (
    validate_daemonset,
    validate_daemonset_update,
    validate_deployment,
    validate_deployment_update,
    validate_replicaset,
    validate_replicaset_update,
    validate_statefulset,
    validate_statefulset_update,
)
from kubeforge._apiserver.types.validation.autoscaling import validate_hpa, validate_hpa_update
from kubeforge._apiserver.types.validation.batch import (
    validate_cronjob,
    validate_cronjob_update,
    validate_job,
    validate_job_update,
)
from kubeforge._apiserver.types.validation.certificates import validate_csr, validate_csr_update
from kubeforge._apiserver.types.validation.common import (
    CreateValidator,
    Errors,
    Obj,
    UpdateValidator,
)
from kubeforge._apiserver.types.validation.coordination import validate_lease, validate_lease_update
from kubeforge._apiserver.types.validation.core import (
    validate_config_map,
    validate_config_map_update,
    validate_namespace,
    validate_namespace_update,
    validate_replication_controller,
    validate_replication_controller_update,
    validate_secret,
    validate_secret_update,
    validate_service,
    validate_service_update,
)
from kubeforge._apiserver.types.validation.core_pods import (
    validate_pod,
    validate_pod_template_object,
    validate_pod_template_object_update,
    validate_pod_update,
)
from kubeforge._apiserver.types.validation.core_volumes import (
    validate_persistent_volume,
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_update,
    validate_persistent_volume_update,
)
from kubeforge._apiserver.types.validation.flowcontrol import (
    validate_flow_schema,
    validate_flow_schema_update,
    validate_priority_level,
    validate_priority_level_update,
)
from kubeforge._apiserver.types.validation.networking import (
    validate_ip_address,
    validate_ip_address_update,
    validate_service_cidr,
    validate_service_cidr_update,
)
from kubeforge._apiserver.types.validation.node import (
    validate_runtime_class,
    validate_runtime_class_update,
)
from kubeforge._apiserver.types.validation.rbac import (
    RBAC_GROUP,
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_cluster_role_binding_update,
    validate_cluster_role_update,
    validate_role,
    validate_role_binding,
    validate_role_binding_update,
    validate_role_update,
)
from kubeforge._apiserver.types.validation.storage import (
    validate_csi_driver,
    validate_csi_driver_update,
    validate_csi_node,
    validate_csi_node_update,
    validate_csi_storage_capacity,
    validate_csi_storage_capacity_update,
    validate_storage_class,
    validate_storage_class_update,
    validate_volume_attachment,
    validate_volume_attachment_update,
)

__all__ = ["VALIDATORS"]


def _on_update(create: CreateValidator) -> UpdateValidator:
    """The update check of kinds validated the same way on update as on create."""

    def validate(obj: Obj, old: Obj) -> Errors:
        return create(obj)

    return validate


VALIDATORS: dict[tuple[str, str], tuple[CreateValidator, UpdateValidator]] = {
    ("", "Pod"): (validate_pod, validate_pod_update),
    ("", "PodTemplate"): (validate_pod_template_object, validate_pod_template_object_update),
    ("", "ReplicationController"): (
        validate_replication_controller,
        validate_replication_controller_update,
    ),
    ("", "Service"): (validate_service, validate_service_update),
    ("", "ConfigMap"): (validate_config_map, validate_config_map_update),
    ("", "Secret"): (validate_secret, validate_secret_update),
    ("", "Namespace"): (validate_namespace, validate_namespace_update),
    ("", "PersistentVolumeClaim"): (
        validate_persistent_volume_claim,
        validate_persistent_volume_claim_update,
    ),
    ("", "PersistentVolume"): (validate_persistent_volume, validate_persistent_volume_update),
    ("apps", "Deployment"): (validate_deployment, validate_deployment_update),
    ("apps", "ReplicaSet"): (validate_replicaset, validate_replicaset_update),
    ("apps", "StatefulSet"): (validate_statefulset, validate_statefulset_update),
    ("apps", "DaemonSet"): (validate_daemonset, validate_daemonset_update),
    ("autoscaling", "HorizontalPodAutoscaler"): (validate_hpa, validate_hpa_update),
    ("batch", "Job"): (validate_job, validate_job_update),
    ("batch", "CronJob"): (validate_cronjob, validate_cronjob_update),
    ("coordination.k8s.io", "Lease"): (validate_lease, validate_lease_update),
    (RBAC_GROUP, "Role"): (validate_role, validate_role_update),
    (RBAC_GROUP, "ClusterRole"): (validate_cluster_role, validate_cluster_role_update),
    (RBAC_GROUP, "RoleBinding"): (validate_role_binding, validate_role_binding_update),
    (RBAC_GROUP, "ClusterRoleBinding"): (
        validate_cluster_role_binding,
        validate_cluster_role_binding_update,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (validate_crd, validate_crd_update),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        admissionregistration.validate_mutating_webhooks,
        _on_update(admissionregistration.validate_mutating_webhooks),
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        admissionregistration.validate_validating_webhooks,
        _on_update(admissionregistration.validate_validating_webhooks),
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (
        admissionregistration.validate_admission_policy,
        _on_update(admissionregistration.validate_admission_policy),
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        admissionregistration.validate_admission_policy_binding,
        _on_update(admissionregistration.validate_admission_policy_binding),
    ),
    ("apiregistration.k8s.io", "APIService"): (validate_api_service, validate_api_service_update),
    ("certificates.k8s.io", "CertificateSigningRequest"): (validate_csr, validate_csr_update),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): (
        validate_flow_schema,
        validate_flow_schema_update,
    ),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): (
        validate_priority_level,
        validate_priority_level_update,
    ),
    ("networking.k8s.io", "IPAddress"): (validate_ip_address, validate_ip_address_update),
    ("networking.k8s.io", "ServiceCIDR"): (validate_service_cidr, validate_service_cidr_update),
    ("node.k8s.io", "RuntimeClass"): (validate_runtime_class, validate_runtime_class_update),
    ("storage.k8s.io", "StorageClass"): (validate_storage_class, validate_storage_class_update),
    ("storage.k8s.io", "CSIDriver"): (validate_csi_driver, validate_csi_driver_update),
    ("storage.k8s.io", "CSINode"): (validate_csi_node, validate_csi_node_update),
    ("storage.k8s.io", "CSIStorageCapacity"): (
        validate_csi_storage_capacity,
        validate_csi_storage_capacity_update,
    ),
    ("storage.k8s.io", "VolumeAttachment"): (
        validate_volume_attachment,
        validate_volume_attachment_update,
    ),
}
