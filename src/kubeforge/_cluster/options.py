"""Settings of a development cluster (kubeforge dev, TestEnv)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "EXIT_CODE_ANNOTATION",
    "OUTPUT_ANNOTATION",
    "READY_ANNOTATION",
    "READY_SECONDS_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "START_SECONDS_ANNOTATION",
    "ClusterOptions",
]

# Per-pod settings of simulated containers (docs/devcluster.md lists the rules), so tests can
# make pods quick or slow, and make containers fail or stay unready on purpose. Each also
# exists per container: `<container>.container.kubeforge.dev/<name>`.
START_SECONDS_ANNOTATION = "kubeforge.dev/start-seconds"
RUN_SECONDS_ANNOTATION = "kubeforge.dev/run-seconds"
EXIT_CODE_ANNOTATION = "kubeforge.dev/exit-code"
OUTPUT_ANNOTATION = "kubeforge.dev/output"
READY_ANNOTATION = "kubeforge.dev/ready"
READY_SECONDS_ANNOTATION = "kubeforge.dev/ready-seconds"


@dataclass
class ClusterOptions:
    """How the simulated parts of a development cluster behave."""

    nodes: int = 1
    # Run containers' commands as local processes (opt-in: it executes commands on this
    # machine, without any image or isolation) instead of simulating them.
    exec_pods: bool = False
    # Images whose containers run as local processes in a project directory:
    # image reference -> directory (`kubeforge dev --image controller:latest=./`).
    images: dict[str, Path] = field(default_factory=dict)
    # A built-in subset of cert-manager: its Issuer, ClusterIssuer and Certificate kinds
    # (self-signed and CA issuers) and CA injection into webhook configurations and CRDs.
    cert_manager: bool = False
    # Seconds from a pod being scheduled to running (per pod: START_SECONDS_ANNOTATION).
    pod_start_seconds: float = 0.1
    # Seconds a program the simulation does not model runs for when its pod is meant to
    # finish (per pod: RUN_SECONDS_ANNOTATION).
    command_run_seconds: float = 0.1
    service_cidr: str = "10.96.0.0/12"
    pod_cidr: str = "10.244.0.0/16"
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    node_max_pods: int = 110
    kubelet_version: str = "v1.33.0"
    # Delay before a failed Job pod is replaced, doubling per failure (upstream: 10 s).
    job_backoff_seconds: float = 10.0
    # How long a node must be gone before the pod garbage collector deletes the pods bound
    # to it (upstream: 40 s).
    pod_gc_quarantine_seconds: float = 40.0
    # kube-controller-manager's --node-monitor-grace-period: a node whose kubelet has not
    # renewed its Lease nor posted status for this long is marked Unknown (upstream: 50 s).
    # Simulated kubelets renew their Lease five times within it (at most every 10 s).
    node_monitor_grace_period: float = 50.0
    # The built-in controllers that run, as kube-controller-manager's --controllers list:
    # "*" all, "name" one more, "-name" one less; ("*", "-job") leaves Jobs to the test.
    # Names and aliases: kubeforge._cluster.controllernames.
    controllers: tuple[str, ...] = ("*",)
    # kube-apiserver's ServiceAccount admission plugin: a pod gets its namespace's account
    # (which must exist) and that account's token mounted. envtest turns it off.
    service_account_admission: bool = True

    def __post_init__(self) -> None:
        if not self.node_monitor_grace_period > 0:
            raise ValueError(
                f"node_monitor_grace_period must be positive, not {self.node_monitor_grace_period}"
            )

    @classmethod
    def bare(cls) -> ClusterOptions:
        """An API server alone, as envtest starts one: no built-in controllers (no garbage
        collection, no namespace deletion), no nodes, no ServiceAccount admission."""
        return cls(nodes=0, controllers=(), service_account_admission=False)
