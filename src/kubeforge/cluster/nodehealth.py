"""Taking a simulated node down and bringing it back: the health its kubelet simulates.

A simulated kubelet reads the annotation `kubeforge.dev/node-health` of its own Node:

- `not-ready`: the kubelet reports the node NotReady (the Ready condition False, reason
  `KubeletNotReady`, as when its container runtime is down) and goes on renewing its Lease
  and serving its pods;
- `unreachable`: the kubelet loses contact with the API server: it stops renewing its Lease
  and posting status, and neither sees its pods change nor writes their status, while their
  containers keep running. After the node monitor grace period the node lifecycle controller
  marks the node Unknown, as it would a node cut off by the network;
- `ready`, or no annotation: the kubelet works normally; coming back from `unreachable` it
  posts its status at once and catches up with what happened to its pods meanwhile.

The annotation is the one channel for all clients: `DevCluster.set_node_health`,
`TestEnv.set_node_health`, `kubeforge dev node NAME HEALTH`, or `kubectl annotate node`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from kubeforge.api.machinery.access import annotations_of, spec_of
from kubeforge.client.client import Client

__all__ = [
    "HEALTHS",
    "HEALTH_ANNOTATION",
    "PROVIDER_PREFIX",
    "NodeHealth",
    "health_of",
    "is_simulated",
    "request_health",
]

NodeHealth = Literal["ready", "not-ready", "unreachable"]
HEALTHS: tuple[NodeHealth, ...] = get_args(NodeHealth)
HEALTH_ANNOTATION = "kubeforge.dev/node-health"
# The providerID prefix of the development cluster's simulated nodes.
PROVIDER_PREFIX = "kubeforge://"


def health_of(node: Mapping[str, Any]) -> NodeHealth:
    """The health a Node's annotation asks its kubelet to simulate (`ready` when absent or
    not one of HEALTHS)."""
    wanted = annotations_of(node).get(HEALTH_ANNOTATION)
    for health in HEALTHS:
        if wanted == health:
            return health
    return "ready"


def is_simulated(node: Mapping[str, Any]) -> bool:
    """Whether a Node is one a simulated kubelet of a development cluster runs."""
    return str(spec_of(node).get("providerID") or "").startswith(PROVIDER_PREFIX)


async def request_health(client: Client, name: str, health: NodeHealth) -> dict[str, Any]:
    """Ask the kubelet of the simulated node `name` to simulate `health`; the Node as written.

    NotFound when there is no such node; ValueError when `health` is none of HEALTHS or the
    node is not simulated (a real kubelet would ignore the annotation)."""
    if health not in HEALTHS:
        raise ValueError(f"unknown node health {health!r}: one of {', '.join(HEALTHS)}")
    node = await client.get("v1/Node", name)
    if not is_simulated(node):
        raise ValueError(f"node {name} is not a simulated node of a development cluster")
    value = None if health == "ready" else health
    written: dict[str, Any] = await client.patch(
        "v1/Node", name, {"metadata": {"annotations": {HEALTH_ANNOTATION: value}}}
    )
    return written
