"""The built-in controllers of a development cluster by name, and the `--controllers` list
that chooses which of them run.

The names are kube-controller-manager's (cmd/kube-controller-manager/names/
controller_names.go), each also accepted by the short alias kube-controller-manager keeps for
it (`job` for `job-controller`). `scheduler` is the development cluster's own name for the
part kube-scheduler plays, a separate program in a real cluster. The list reads as
kube-controller-manager's `--controllers` flag (IsControllerEnabled in
staging/src/k8s.io/controller-manager/app/helper.go): `*` turns on every controller, `name`
turns one on, `-name` turns one off, and for each controller the first entry that names it
decides (all of these are on by default, so `*` means all). An unknown name is an error, as
the flag's validation makes it (staging/src/k8s.io/controller-manager/options/generic.go).
`local-path-provisioner` is the development cluster's name for the dynamic provisioner of
the `standard` StorageClass, which kind installs as a Deployment of its own (rancher's
local-path-provisioner), outside kube-controller-manager.

What kube-apiserver does by itself (CRD naming and establishing, the `kubernetes` Service,
Service IP allocation, the bootstrap RBAC policy) is no controller and cannot be turned off.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ALL",
    "CLUSTERROLE_AGGREGATION",
    "CRONJOB",
    "CSR_SIGNING",
    "DAEMONSET",
    "DEPLOYMENT",
    "DISRUPTION",
    "ENDPOINTS",
    "ENDPOINTSLICE",
    "GARBAGE_COLLECTOR",
    "JOB",
    "KNOWN",
    "LOCAL_PATH_PROVISIONER",
    "NAMESPACE",
    "NODE_LIFECYCLE",
    "POD_GC",
    "PVC_PROTECTION",
    "PV_BINDER",
    "PV_EXPANDER",
    "PV_PROTECTION",
    "REPLICASET",
    "ROOT_CA_PUBLISHER",
    "SCHEDULER",
    "SERVICEACCOUNT",
    "SERVICEACCOUNT_TOKEN",
    "STATEFULSET",
    "TAINT_EVICTION",
    "enabled_controllers",
    "split_list",
]

ALL = "*"

CLUSTERROLE_AGGREGATION = "clusterrole-aggregation-controller"
CRONJOB = "cronjob-controller"
CSR_SIGNING = "certificatesigningrequest-signing-controller"
DAEMONSET = "daemonset-controller"
DEPLOYMENT = "deployment-controller"
DISRUPTION = "disruption-controller"
ENDPOINTS = "endpoints-controller"
ENDPOINTSLICE = "endpointslice-controller"
GARBAGE_COLLECTOR = "garbage-collector-controller"
JOB = "job-controller"
NAMESPACE = "namespace-controller"
POD_GC = "pod-garbage-collector-controller"
NODE_LIFECYCLE = "node-lifecycle-controller"
REPLICASET = "replicaset-controller"
ROOT_CA_PUBLISHER = "root-ca-certificate-publisher-controller"
SCHEDULER = "scheduler"
SERVICEACCOUNT = "serviceaccount-controller"
SERVICEACCOUNT_TOKEN = "serviceaccount-token-controller"
STATEFULSET = "statefulset-controller"
TAINT_EVICTION = "taint-eviction-controller"
PV_BINDER = "persistentvolume-binder-controller"
PV_EXPANDER = "persistentvolume-expander-controller"
PVC_PROTECTION = "persistentvolumeclaim-protection-controller"
PV_PROTECTION = "persistentvolume-protection-controller"
LOCAL_PATH_PROVISIONER = "local-path-provisioner"

# Every built-in controller -> its aliases, in the order the cluster starts them.
KNOWN: dict[str, tuple[str, ...]] = {
    SERVICEACCOUNT: ("serviceaccount",),
    REPLICASET: ("replicaset",),
    DEPLOYMENT: ("deployment",),
    STATEFULSET: ("statefulset",),
    DAEMONSET: ("daemonset",),
    JOB: ("job",),
    POD_GC: ("podgc",),
    CRONJOB: ("cronjob",),
    DISRUPTION: ("disruption",),
    ENDPOINTS: ("endpoint",),
    ENDPOINTSLICE: ("endpointslice",),
    SCHEDULER: (),
    ROOT_CA_PUBLISHER: ("root-ca-cert-publisher",),
    SERVICEACCOUNT_TOKEN: ("serviceaccount-token",),
    CSR_SIGNING: ("csrsigning",),
    CLUSTERROLE_AGGREGATION: ("clusterrole-aggregation",),
    NODE_LIFECYCLE: ("nodelifecycle",),
    TAINT_EVICTION: (),
    # Volumes: kube-controller-manager's four, and kind's provisioner.
    PV_BINDER: ("persistentvolume-binder",),
    PV_EXPANDER: ("persistentvolume-expander",),
    PVC_PROTECTION: ("pvc-protection",),
    PV_PROTECTION: ("pv-protection",),
    LOCAL_PATH_PROVISIONER: (),
    # These two run inside the API server (decision 10), but are kube-controller-manager's.
    GARBAGE_COLLECTOR: ("garbagecollector",),
    NAMESPACE: ("namespace",),
}

_CANONICAL = {alias: name for name, aliases in KNOWN.items() for alias in (name, *aliases)}


def split_list(entries: Iterable[str]) -> list[str]:
    """The entries of a controllers list, each string split at commas (`"*,-job"` is two)."""
    return [part.strip() for entry in entries for part in entry.split(",") if part.strip()]


def enabled_controllers(entries: Iterable[str]) -> frozenset[str]:
    """The canonical names of the controllers `entries` turns on (see the module's
    docstring); ValueError naming an entry that is no known controller."""
    choices: list[tuple[str, bool]] = []
    star = False
    for entry in split_list(entries):
        if entry == ALL:
            star = True
            continue
        name = _CANONICAL.get(entry.removeprefix("-"))
        if name is None:
            raise ValueError(
                f'"{entry.removeprefix("-")}" is not in the list of known controllers '
                f"({', '.join(sorted(KNOWN))}, or {ALL})"
            )
        choices.append((name, not entry.startswith("-")))
    enabled = set()
    for name in KNOWN:
        decided = next((on for chosen, on in choices if chosen == name), star)
        if decided:
            enabled.add(name)
    return frozenset(enabled)
