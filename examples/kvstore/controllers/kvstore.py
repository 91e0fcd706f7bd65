"""The KVStore controller: a StatefulSet of store members with a volume each, the Services
that find them, a disruption budget that keeps a quorum up, and a backup CronJob.

Every child is named after the KVStore (the backup's after `<name>-backup`), carries its
labels and is controlled by it, so that changes to a child bring the KVStore back here and
deleting the KVStore deletes them. Members' volumes are the StatefulSet's claims
(`data-<name>-<ordinal>`): they are kept when the store scales down or is deleted (the
StatefulSet's default retention policy), so scaling back up, or a store made again under the
same name, finds its data.

Children are written with server-side apply under one field manager, stating only the fields
this controller cares about; what the API server and the built-in controllers default is left
to them, and a pass with nothing to change writes nothing.
"""

from __future__ import annotations

import logging

import kubeforge
from kubeforge.models import (
    Container,
    ContainerPort,
    CronJob,
    CronJobSpec,
    EnvVar,
    EnvVarSource,
    HTTPGetAction,
    JobSpec,
    JobTemplateSpec,
    LabelSelector,
    ObjectFieldSelector,
    ObjectMeta,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodSpec,
    PodTemplateSpec,
    Probe,
    Service,
    ServicePort,
    ServiceSpec,
    StatefulSet,
    StatefulSetSpec,
    Toleration,
    Volume,
    VolumeMount,
)
from kubeforge.models.core_v1 import VolumeResourceRequirements

from api.v1alpha1 import KVStore, KVStoreStatus, Member

log = logging.getLogger(__name__)

FIELD_MANAGER = "kvstore-controller"
APP = "kvstore"
CONTAINER = "kvstore"
CLIENT_PORT = 7379
DATA_VOLUME = "data"
DATA_PATH = "/var/lib/kvstore"
BACKUP_PATH = "/backups"
# The taints the node lifecycle controller puts on a node that is not ready or unreachable:
# a member tolerates them for spec.failoverSeconds, then it is evicted and started elsewhere.
NODE_FAILURE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
POD_NAME = "statefulset.kubernetes.io/pod-name"


def quorum(members: int) -> int:
    """How many members must serve for the store to answer: a majority."""
    return members // 2 + 1


def selector_labels(kvstore: KVStore) -> dict[str, str]:
    """The labels that pick this store's members (a StatefulSet's selector is immutable)."""
    return {
        "app.kubernetes.io/name": APP,
        "app.kubernetes.io/instance": kvstore.metadata.name or "",
    }


def labels(kvstore: KVStore) -> dict[str, str]:
    """The labels of everything made for this store."""
    return selector_labels(kvstore) | {"app.kubernetes.io/managed-by": FIELD_MANAGER}


def selector_string(kvstore: KVStore) -> str:
    """The members' selector in `kubectl get -l` form (the status and the scale subresource)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(kvstore).items()))


def metadata_for(kvstore: KVStore, name: str | None = None) -> ObjectMeta:
    """Name (the store's own unless given), namespace and labels of a child."""
    return ObjectMeta(
        name=name or kvstore.metadata.name,
        namespace=kvstore.metadata.namespace,
        labels=labels(kvstore),
    )


def backup_labels(kvstore: KVStore) -> dict[str, str]:
    """The labels of the backup Jobs' pods: not members, so neither the Services, the budget
    nor the members' list pick them."""
    return {
        "app.kubernetes.io/name": f"{APP}-backup",
        "app.kubernetes.io/instance": kvstore.metadata.name or "",
        "app.kubernetes.io/managed-by": FIELD_MANAGER,
    }


def member_container(kvstore: KVStore) -> Container:
    """The store's container: `kvstore serve` on the client port, its keys in the member's
    volume, ready once it answers /healthz."""
    return Container(
        name=CONTAINER,
        image=kvstore.spec.image,
        args=["serve", "--listen", f":{CLIENT_PORT}"],
        env=[
            EnvVar(name="KVSTORE_DATA_DIR", value=DATA_PATH),
            EnvVar(
                name="KVSTORE_MEMBER",
                value_from=EnvVarSource(field_ref=ObjectFieldSelector(field_path="metadata.name")),
            ),
        ],
        ports=[ContainerPort(name="client", container_port=CLIENT_PORT, protocol="TCP")],
        readiness_probe=Probe(
            http_get=HTTPGetAction(path="/healthz", port="client"), period_seconds=1
        ),
        volume_mounts=[VolumeMount(name=DATA_VOLUME, mount_path=DATA_PATH)],
    )


def statefulset_for(kvstore: KVStore) -> StatefulSet:
    """The members: ordinals 0..replicas-1, started one after the other (each ready before
    the next) and removed from the highest down, each with its own claim."""
    spec = kvstore.spec
    tolerations = [
        Toleration(
            key=key, operator="Exists", effect="NoExecute", toleration_seconds=spec.failover_seconds
        )
        for key in NODE_FAILURE_TAINTS
    ]
    statefulset = StatefulSet(
        metadata=metadata_for(kvstore),
        spec=StatefulSetSpec(
            replicas=spec.replicas,
            service_name=kvstore.metadata.name,
            pod_management_policy="OrderedReady",
            selector=LabelSelector(match_labels=selector_labels(kvstore)),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(kvstore)),
                spec=PodSpec(containers=[member_container(kvstore)], tolerations=tolerations),
            ),
            volume_claim_templates=[
                PersistentVolumeClaim(
                    metadata=ObjectMeta(name=DATA_VOLUME),
                    spec=claim_spec(kvstore),
                )
            ],
        ),
    )
    kubeforge.set_controller_reference(kvstore, statefulset)
    return statefulset


def claim_spec(kvstore: KVStore) -> PersistentVolumeClaimSpec:
    """A volume of spec.storage in spec.storageClassName (the default class when unset)."""
    return PersistentVolumeClaimSpec(
        access_modes=["ReadWriteOnce"],
        storage_class_name=kvstore.spec.storage_class_name,
        resources=VolumeResourceRequirements(requests={"storage": kvstore.spec.storage}),
    )


def headless_service_for(kvstore: KVStore) -> Service:
    """The StatefulSet's governing Service: a DNS name per member
    (`<name>-<ordinal>.<name>`), published before they are ready so that members find each
    other while they start."""
    service = Service(
        metadata=metadata_for(kvstore),
        spec=ServiceSpec(
            cluster_ip="None",
            publish_not_ready_addresses=True,
            selector=selector_labels(kvstore),
            ports=[ServicePort(name="client", port=CLIENT_PORT, target_port="client")],
        ),
    )
    kubeforge.set_controller_reference(kvstore, service)
    return service


def client_service_for(kvstore: KVStore) -> Service:
    """One address for clients, `<name>-client`, in front of the members that are ready."""
    service = Service(
        metadata=metadata_for(kvstore, f"{kvstore.metadata.name}-client"),
        spec=ServiceSpec(
            selector=selector_labels(kvstore),
            ports=[ServicePort(name="client", port=CLIENT_PORT, target_port="client")],
        ),
    )
    kubeforge.set_controller_reference(kvstore, service)
    return service


def disruption_budget_for(kvstore: KVStore) -> PodDisruptionBudget:
    """Voluntary disruptions (a drain's evictions) may take members down only while a quorum
    stays up: minAvailable is the quorum of spec.replicas."""
    budget = PodDisruptionBudget(
        metadata=metadata_for(kvstore),
        spec=PodDisruptionBudgetSpec(
            min_available=quorum(kvstore.spec.replicas),
            selector=LabelSelector(match_labels=selector_labels(kvstore)),
        ),
    )
    kubeforge.set_controller_reference(kvstore, budget)
    return budget


def backup_claim_for(kvstore: KVStore) -> PersistentVolumeClaim:
    """Where backups are kept: a volume of the store's size and class, `<name>-backups`."""
    claim = PersistentVolumeClaim(
        metadata=metadata_for(kvstore, f"{kvstore.metadata.name}-backups"),
        spec=claim_spec(kvstore),
    )
    kubeforge.set_controller_reference(kvstore, claim)
    return claim


def backup_cronjob_for(kvstore: KVStore) -> CronJob:
    """`kvstore backup` on the schedule: the first member's keys, read from its volume, copied
    into `<name>-backups` under the Job's name. One backup at a time."""
    backup = kvstore.spec.backup
    assert backup is not None
    name = kvstore.metadata.name or ""
    job_name = EnvVarSource(
        field_ref=ObjectFieldSelector(field_path="metadata.labels['batch.kubernetes.io/job-name']")
    )
    container = Container(
        name="backup",
        image=kvstore.spec.image,
        args=["backup", "--to", BACKUP_PATH],
        env=[
            EnvVar(name="KVSTORE_DATA_DIR", value=DATA_PATH),
            EnvVar(name="KVSTORE_MEMBER", value=f"{name}-0"),
            EnvVar(name="KVSTORE_BACKUP_NAME", value_from=job_name),
        ],
        volume_mounts=[
            VolumeMount(name=DATA_VOLUME, mount_path=DATA_PATH, read_only=True),
            VolumeMount(name="backups", mount_path=BACKUP_PATH),
        ],
    )
    volumes = [
        Volume(
            name=DATA_VOLUME,
            persistent_volume_claim=PersistentVolumeClaimVolumeSource(
                claim_name=f"{DATA_VOLUME}-{name}-0", read_only=True
            ),
        ),
        Volume(
            name="backups",
            persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=f"{name}-backups"),
        ),
    ]
    cronjob = CronJob(
        metadata=metadata_for(kvstore, f"{name}-backup"),
        spec=CronJobSpec(
            schedule=backup.schedule,
            time_zone="Etc/UTC",
            suspend=backup.suspend,
            concurrency_policy="Forbid",
            successful_jobs_history_limit=backup.history,
            failed_jobs_history_limit=backup.history,
            job_template=JobTemplateSpec(
                metadata=ObjectMeta(labels=backup_labels(kvstore)),
                spec=JobSpec(
                    backoff_limit=2,
                    template=PodTemplateSpec(
                        metadata=ObjectMeta(labels=backup_labels(kvstore)),
                        spec=PodSpec(
                            restart_policy="Never", containers=[container], volumes=volumes
                        ),
                    ),
                ),
            ),
        ),
    )
    kubeforge.set_controller_reference(kvstore, cronjob)
    return cronjob


def member_of(pod: Pod) -> list[tuple[str, str]]:
    """The store a member's pod belongs to (for the pod watch), by its labels."""
    found = pod.metadata.labels or {}
    if found.get("app.kubernetes.io/name") != APP or not found.get("app.kubernetes.io/instance"):
        return []
    return [(pod.metadata.namespace or "", found["app.kubernetes.io/instance"])]


def ordinal(pod: Pod) -> int:
    """A member's ordinal, from its name `<set>-<ordinal>`."""
    return int((pod.metadata.name or "").rpartition("-")[2])


def is_ready(pod: Pod) -> bool:
    conditions = pod.status.conditions if pod.status is not None else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


def members_of(pods: list[Pod]) -> list[Member]:
    """The members that exist and are not leaving, in ordinal order."""
    alive = [p for p in pods if p.metadata.deletion_timestamp is None]
    return [
        Member(
            name=pod.metadata.name or "",
            ordinal=ordinal(pod),
            node=pod.spec.node_name if pod.spec is not None else None,
            ready=is_ready(pod),
        )
        for pod in sorted(alive, key=ordinal)
    ]


def status_for(kvstore: KVStore, pods: list[Pod]) -> KVStoreStatus:
    """The members as the pods show them, and the conditions that follow."""
    status = (kvstore.status or KVStoreStatus()).model_copy(deep=True)
    members = members_of(pods)
    wanted = kvstore.spec.replicas
    ready = sum(1 for m in members if m.ready)
    generation = kvstore.metadata.generation
    status.observed_generation = generation
    status.replicas = len(members)
    status.ready_replicas = ready
    status.members = members
    status.selector = selector_string(kvstore)
    needed = quorum(wanted)
    summary = f"{ready} of {wanted} members ready, quorum {needed}"
    kubeforge.set_status_condition(
        status.conditions,
        kubeforge.Condition(
            type="Available",
            status="True" if ready >= needed else "False",
            reason="QuorumReady" if ready >= needed else "QuorumLost",
            message=summary,
            observed_generation=generation,
        ),
    )
    if ready == wanted == len(members):
        reason = "AllMembersReady"
    elif len(members) != wanted:
        reason = "Scaling"
        summary = f"scaling from {len(members)} to {wanted} members; {summary}"
    else:
        reason = "MembersNotReady"
    kubeforge.set_status_condition(
        status.conditions,
        kubeforge.Condition(
            type="Ready",
            status="True" if reason == "AllMembersReady" else "False",
            reason=reason,
            message=summary,
            observed_generation=generation,
        ),
    )
    return status


@kubeforge.rbac(groups="store.kubeforge.dev", resources="kvstores", verbs=["get", "list", "watch"])
@kubeforge.rbac(
    groups="store.kubeforge.dev", resources="kvstores/status", verbs=["get", "update", "patch"]
)
@kubeforge.rbac(
    groups="apps", resources="statefulsets", verbs=["get", "list", "watch", "create", "patch"]
)
@kubeforge.rbac(groups="", resources="services", verbs=["get", "list", "watch", "create", "patch"])
@kubeforge.rbac(
    groups="policy",
    resources="poddisruptionbudgets",
    verbs=["get", "list", "watch", "create", "patch"],
)
@kubeforge.rbac(
    groups="batch",
    resources="cronjobs",
    verbs=["get", "list", "watch", "create", "patch", "delete"],
)
@kubeforge.rbac(
    groups="", resources="persistentvolumeclaims", verbs=["get", "list", "watch", "create"]
)
@kubeforge.rbac(groups="", resources="pods", verbs=["get", "list", "watch"])
class KVStoreReconciler(kubeforge.Reconciler):
    """Applies a KVStore's StatefulSet, Services, budget and backups; reports its members."""

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            kvstore = await self.client.get(KVStore, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None  # deleted: the garbage collector removes what it owned
        if kvstore.metadata.deletion_timestamp is not None:
            return None  # on its way out: re-applying children would fight the collector

        for child in (
            headless_service_for(kvstore),
            client_service_for(kvstore),
            disruption_budget_for(kvstore),
            statefulset_for(kvstore),
        ):
            await self.client.apply(child, field_manager=FIELD_MANAGER, force=True)
        await self.reconcile_backups(kvstore)
        await self.report(kvstore)
        return None  # the children's and members' own changes bring us back

    async def reconcile_backups(self, kvstore: KVStore) -> None:
        """The backup CronJob (and its claim) while spec.backup is set; none otherwise."""
        namespace, name = kvstore.metadata.namespace, f"{kvstore.metadata.name}-backup"
        if kvstore.spec.backup is None:
            try:
                await self.client.delete(CronJob, name, namespace=namespace)
            except kubeforge.NotFound:
                return
            log.info("%s/%s: backups turned off", namespace, kvstore.metadata.name)
            return
        claim = backup_claim_for(kvstore)
        try:
            await self.client.get(
                PersistentVolumeClaim, claim.metadata.name or "", namespace=namespace
            )
        except kubeforge.NotFound:
            # A claim's spec is fixed once made: it is created, never applied again.
            await kubeforge.ignore_already_exists(self.client.create(claim))
        await self.client.apply(
            backup_cronjob_for(kvstore), field_manager=FIELD_MANAGER, force=True
        )

    async def report(self, kvstore: KVStore) -> None:
        """The members and conditions, written when they moved."""
        pods = await self.client.list(
            Pod,
            namespace=kvstore.metadata.namespace,
            label_selector=selector_string(kvstore),
        )
        status = status_for(kvstore, list(pods.items))
        if kvstore.status is not None and kvstore.status.to_dict() == status.to_dict():
            return
        await self.client.patch_status(
            KVStore,
            kvstore.metadata.name or "",
            {"status": status.to_dict()},
            namespace=kvstore.metadata.namespace,
        )
