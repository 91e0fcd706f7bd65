"""Settings of a development cluster (kubeforge dev, TestEnv)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RUN_SECONDS_ANNOTATION", "START_SECONDS_ANNOTATION", "ClusterOptions"]

# Per-pod overrides of the simulated timings, so tests can make pods quick (or slow).
START_SECONDS_ANNOTATION = "kubeforge.dev/start-seconds"
RUN_SECONDS_ANNOTATION = "kubeforge.dev/run-seconds"


@dataclass
class ClusterOptions:
    """How the simulated parts of a development cluster behave."""

    nodes: int = 1
    # Run containers' commands as local processes (opt-in: it executes commands on this
    # machine, without any image or isolation) instead of simulating them.
    exec_pods: bool = False
    # Seconds from a pod being scheduled to running (per pod: START_SECONDS_ANNOTATION).
    pod_start_seconds: float = 0.1
    # Seconds a finite command (`sleep` aside, which takes its own argument) runs for when
    # simulated (per pod: RUN_SECONDS_ANNOTATION).
    command_run_seconds: float = 0.1
    service_cidr: str = "10.96.0.0/12"
    pod_cidr: str = "10.244.0.0/16"
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    node_max_pods: int = 110
    kubelet_version: str = "v1.33.0"
    # Delay before a failed Job pod is replaced, doubling per failure (upstream: 10 s).
    job_backoff_seconds: float = 10.0
