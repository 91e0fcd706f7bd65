"""kubectl (1.33 and 1.29) with the built-in kinds of Kubernetes 1.33 this server gained:
apply, get (the printer columns), explain, delete, and the read-only ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl
from tests.support import kubectl_for

MANIFESTS = """
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: hostpath.csi.k8s.io}
spec: {podInfoOnMount: true}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
  - {name: hostpath.csi.k8s.io, nodeID: node-1, topologyKeys: [topology.kubernetes.io/zone]}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: capacity, namespace: default}
storageClassName: standard
capacity: 10Gi
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: attachment}
spec:
  attacher: hostpath.csi.k8s.io
  nodeName: node-1
  source: {persistentVolumeName: pv-1}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.42}
spec:
  parentRef: {group: "", resource: services, namespace: default, name: web}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec: {cidrs: [10.100.0.0/16]}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch-work}
spec:
  type: Limited
  limited: {limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch-jobs}
spec:
  priorityLevelConfiguration: {name: batch-work}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: batch}}]
    nonResourceRules: [{verbs: [get], nonResourceURLs: [/healthz]}]
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  targetCPUUtilizationPercentage: 70
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.things.example.com}
spec:
  group: things.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 10
  service: {namespace: default, name: things}
"""

# kubectl get <resource> <name>: the row kubectl prints, cell by cell (ages left out).
ROWS = [
    (
        ["csidrivers", "hostpath.csi.k8s.io"],
        [
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE",
        ],
        ["hostpath.csi.k8s.io", "true", "true", "false", "<unset>", "false", "Persistent"],
    ),
    (["csinodes", "node-1"], ["NAME", "DRIVERS", "AGE"], ["node-1", "1"]),
    (
        ["csistoragecapacities", "capacity"],
        ["NAME", "STORAGECLASSNAME", "CAPACITY"],
        ["capacity", "standard", "10Gi"],
    ),
    (
        ["volumeattachments", "attachment"],
        ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
        ["attachment", "hostpath.csi.k8s.io", "pv-1", "node-1", "false"],
    ),
    (["runtimeclasses", "gvisor"], ["NAME", "HANDLER", "AGE"], ["gvisor", "runsc"]),
    (
        ["ipaddresses", "10.96.0.42"],
        ["NAME", "PARENTREF", "AGE"],
        ["10.96.0.42", "services/default/web"],
    ),
    (["servicecidrs", "extra"], ["NAME", "CIDRS", "AGE"], ["extra", "10.100.0.0/16"]),
    (
        ["prioritylevelconfigurations", "batch-work"],
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE",
        ],
        ["batch-work", "Limited", "30", "<none>", "<none>", "<none>"],
    ),
    (
        ["flowschemas", "batch-jobs"],
        ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"],
        ["batch-jobs", "batch-work", "1000", "ByUser"],
    ),
    (
        ["horizontalpodautoscalers.v1.autoscaling", "web"],
        ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
        ["web", "Deployment/web"],
    ),
    (
        ["apiservices", "v1alpha1.things.example.com"],
        ["NAME", "SERVICE", "AVAILABLE", "AGE"],
        ["v1alpha1.things.example.com", "default/things", "False (ServiceNotFound)"],
    ),
]


@pytest.fixture(params=["1.33", "1.29"])
def kc(request: pytest.FixtureRequest, kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return kubectl_for(kubeconfig, tmp_path / f"cache-{request.param}", request.param)


async def test_apply_get_explain_delete(kc: Kubectl, server: APIServer) -> None:
    out = (await kc.apply(MANIFESTS)).out
    assert out.count(" created") == 11, out
    assert "csidriver.storage.k8s.io/hostpath.csi.k8s.io created" in out
    assert "horizontalpodautoscaler.autoscaling/web created" in out
    for args, header, cells in ROWS:
        rows = (await kc.run("get", *args)).rows()
        assert rows[0] == header, args
        assert rows[1][: len(cells)] == cells, args
    # Applying again changes nothing.
    again = (await kc.apply(MANIFESTS)).out
    assert again.count(" unchanged") == 11, again

    explained = (await kc.run("explain", "csidriver.spec.fsGroupPolicy")).out
    assert "KIND:" in explained and "CSIDriver" in explained
    explained = (await kc.run("explain", "certificatesigningrequest.spec")).out
    assert "signerName" in explained and "usages" in explained
    explained = (await kc.run("explain", "flowschemas.spec.rules")).out
    assert "subjects" in explained

    await kc.run("delete", "runtimeclass/gvisor", "ipaddress/10.96.0.42")
    gone = await kc.run("get", "runtimeclass", "gvisor", check=False)
    assert gone.code != 0 and "NotFound" in gone.err


async def test_read_only_and_server_kept_kinds(kc: Kubectl) -> None:
    rows = (await kc.run("get", "componentstatuses")).rows()
    assert rows == [["NAME", "STATUS", "MESSAGE", "ERROR"], ["etcd-0", "Healthy", "ok", ""]]
    refused = await kc.run("delete", "cs", "etcd-0", check=False)
    assert refused.code != 0
    services = (await kc.run("get", "apiservices")).rows()
    names = [r[0] for r in services[1:]]
    assert {"v1.", "v1.apps", "v2.autoscaling", "v1.certificates.k8s.io"} <= set(names)
    assert all(r[1:3] == ["Local", "True"] for r in services[1:])
    schemas = [r[0] for r in (await kc.run("get", "flowschemas")).rows()[1:]]
    assert schemas == ["catch-all", "exempt"]  # listed by name, as etcd keys sort
    cidrs = (await kc.run("get", "servicecidrs")).rows()
    assert cidrs[1][:2] == ["kubernetes", "10.96.0.0/12"]


async def test_api_resources_lists_them(kc: Kubectl) -> None:
    rows = (await kc.run("api-resources")).rows()
    names = {r[0] for r in rows[1:]}
    for resource in (
        "componentstatuses",
        "apiservices",
        "certificatesigningrequests",
        "csidrivers",
        "csinodes",
        "csistoragecapacities",
        "volumeattachments",
        "runtimeclasses",
        "ipaddresses",
        "servicecidrs",
        "flowschemas",
        "prioritylevelconfigurations",
    ):
        assert resource in names, resource
    short = {r[0]: r[1] for r in rows[1:] if len(r) == 5}
    assert short["componentstatuses"] == "cs"
    assert short["certificatesigningrequests"] == "csr"
    assert short["ipaddresses"] == "ip"
