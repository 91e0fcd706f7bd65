"""The benchmark's operator written with Kopf, as its walkthrough writes one: a create
handler that adopts and creates the child with the official kubernetes client, an update
handler that patches it, and the status set through the `patch` kwarg.

    kopf run --standalone --all-namespaces benchmarks/widgets/kopf_operator.py

Kopf's login reads the same KUBECONFIG and configures the kubernetes client with it. The
handlers share one client: the walkthrough's `kubernetes.client.CoreV1Api()` per call would
open a new connection (and TLS handshake) for every ConfigMap.
"""

from __future__ import annotations

import functools
from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "bench.kubeforge.dev", "v1", "widgets"


@functools.cache
def core_api() -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api()


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_config(
    spec: kopf.Spec, name: str, namespace: str, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config"},
        "data": {"size": str(spec["size"])},
    }
    kopf.adopt(config)
    core_api().create_namespaced_config_map(namespace, config)
    patch.status["configMap"] = f"{name}-config"
    patch.status["observedGeneration"] = meta["generation"]


@kopf.on.update(GROUP, VERSION, PLURAL)
def update_config(
    spec: kopf.Spec, name: str, namespace: str, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    core_api().patch_namespaced_config_map(
        f"{name}-config", namespace, {"data": {"size": str(spec["size"])}}
    )
    patch.status["observedGeneration"] = meta["generation"]
