"""Volumes on the development cluster: kind's default StorageClass and its provisioner, the
binder (WaitForFirstConsumer through the scheduler, Immediate, static volumes), reclaim
policies, the protection finalizers and expansion -- with kubectl 1.33 and 1.29 and the
official Python client.

One cluster serves the module; each test works in a namespace of its own, and the classes
and volumes it makes (cluster-scoped) carry its name.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio
from kubernetes import client as k8s, config as k8s_config

from kubeforge._client.client import Client
from kubeforge._client.errors import ApiError, NotFound
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, eventually
from tests.support import kubectl_for

pytestmark = [pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

PVC = "v1/PersistentVolumeClaim"
PV = "v1/PersistentVolume"
POD = "v1/Pod"
CLASS = "storage.k8s.io/v1/StorageClass"
NOT_HELPFUL = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
IMMUTABLE = (
    "spec: Forbidden: spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)
_names = itertools.count()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(ClusterOptions(pod_start_seconds=0.05)) as c:
        yield c


@pytest.fixture(scope="module")
def kubeconfig(cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("volumes") / "kubeconfig")


@pytest.fixture
def kc(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return kubectl_for(kubeconfig, tmp_path / "cache-1.33", "1.33")


@pytest.fixture
def kc129(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return kubectl_for(kubeconfig, tmp_path / "cache-1.29", "1.29")


@pytest.fixture
def api(cluster: DevCluster) -> Client:
    assert cluster.client is not None
    return cluster.client


@pytest_asyncio.fixture(loop_scope="module")
async def ns(api: Client) -> str:
    name = f"vol-{next(_names)}"
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


# -- objects -----------------------------------------------------------------------------------


def claim(
    name: str,
    namespace: str,
    size: str = "1Gi",
    cls: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        **spec,
    }
    if cls is not None:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def pod(name: str, namespace: str, *claims: str) -> dict[str, Any]:
    mounts = [{"name": c, "mountPath": f"/data/{c}"} for c in claims]
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [{"name": "main", "image": "busybox", "volumeMounts": mounts}],
            "volumes": volumes,
            "terminationGracePeriodSeconds": 0,
        },
    }


def storage_class(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "rancher.io/local-path",
        **fields,
    }


def host_volume(name: str, size: str, cls: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": f"/mnt/{name}"},
            "storageClassName": cls,
            **spec,
        },
    }


async def phase(api: Client, kind: str, name: str, namespace: str | None = None) -> str:
    try:
        found = await api.get(kind, name, namespace=namespace)
    except NotFound:
        return "<gone>"
    return str((found.get("status") or {}).get("phase") or "")


async def wait_phase(
    api: Client, kind: str, name: str, wanted: str, namespace: str | None = None
) -> dict[str, Any]:
    async def reached() -> bool:
        return await phase(api, kind, name, namespace) == wanted

    await eventually(reached, timeout=15, message=f"{kind} {name} never became {wanted}")
    if wanted == "<gone>":
        return {}
    found: dict[str, Any] = await api.get(kind, name, namespace=namespace)
    return found


async def gone(api: Client, kind: str, name: str, namespace: str | None = None) -> None:
    await wait_phase(api, kind, name, "<gone>", namespace)


async def notes(api: Client, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(reporting controller, reason, note) of the events about an object."""
    events = await api.list("events.k8s.io/v1/Event", namespace=namespace)
    return [
        (str(e.get("reportingController")), str(e.get("reason")), str(e.get("note")))
        for e in events
        if (e.get("regarding") or {}).get("name") == name
    ]


# -- the default class ---------------------------------------------------------------------


async def test_the_default_class_is_kinds(kc: Kubectl, api: Client) -> None:
    standard = await api.get(CLASS, "standard")
    assert standard["provisioner"] == "rancher.io/local-path"
    assert standard["volumeBindingMode"] == "WaitForFirstConsumer"
    assert standard["reclaimPolicy"] == "Delete"
    annotations = standard["metadata"]["annotations"]
    assert annotations["storageclass.kubernetes.io/is-default-class"] == "true"
    rows = (await kc.run("get", "storageclass")).rows()
    assert rows[0][:4] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE"]
    assert ["standard (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer"] in [
        row[:4] for row in rows[1:]
    ]


# -- WaitForFirstConsumer ------------------------------------------------------------------


async def test_a_claim_binds_through_the_default_class_once_a_pod_is_scheduled(
    kc: Kubectl, kc129: Kubectl, api: Client, ns: str
) -> None:
    manifest = claim("data", ns)
    await kc.run("apply", "-n", ns, "-f", "-", stdin=orjson.dumps(manifest).decode())
    created = await api.get(PVC, "data", namespace=ns)
    # DefaultStorageClass admission, and the protection finalizer.
    assert created["spec"]["storageClassName"] == "standard"
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]

    async def waiting() -> bool:
        return (
            "persistentvolume-controller",
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        ) in await notes(api, ns, "data")

    await eventually(waiting)
    assert await phase(api, PVC, "data", ns) == "Pending"
    rows = (await kc.run("get", "pvc", "-n", ns)).rows()
    assert rows[1][:2] == ["data", "Pending"]

    await api.create(pod("web", ns, "data"))
    running = await wait_phase(api, POD, "web", "Running", ns)
    bound = await wait_phase(api, PVC, "data", "Bound", ns)
    node = running["spec"]["nodeName"]
    annotations = bound["metadata"]["annotations"]
    assert annotations["volume.kubernetes.io/selected-node"] == node
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
    assert annotations["volume.beta.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    volume_name = bound["spec"]["volumeName"]
    assert volume_name == f"pvc-{bound['metadata']['uid']}"
    assert bound["status"]["capacity"] == {"storage": "1Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce"]

    volume = await api.get(PV, volume_name)
    assert volume["status"]["phase"] == "Bound"
    assert volume["status"]["lastPhaseTransitionTime"]  # set by the API server
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
        "rancher.io/local-path"
    )
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert volume["spec"]["claimRef"]["uid"] == bound["metadata"]["uid"]
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    ]
    directory = Path(volume["spec"]["hostPath"]["path"])
    assert directory.is_dir()
    assert directory.name == f"{volume_name}_{ns}_data"

    for kubectl in (kc, kc129):
        table = (await kubectl.run("get", "pvc,pv", "-n", ns)).out
        pvc_row = next(line for line in table.splitlines() if "persistentvolumeclaim/data" in line)
        assert pvc_row.split()[1:6] == ["Bound", volume_name, "1Gi", "RWO", "standard"]
        pv_row = next(
            line for line in table.splitlines() if f"persistentvolume/{volume_name}" in line
        )
        assert pv_row.split()[1:7] == ["1Gi", "RWO", "Delete", "Bound", f"{ns}/data", "standard"]
        described = (await kubectl.run("describe", "pvc", "data", "-n", ns)).out
        assert "Status:        Bound" in described
        assert f"Volume:        {volume_name}" in described
        assert "Used By:       web" in described
        assert "ProvisioningSucceeded" in described
        assert f"Successfully provisioned volume {volume_name}" in described
        described = (await kubectl.run("describe", "pv", volume_name)).out
        assert "rancher.io/local-path" in described
        assert f"Claim:             {ns}/data" in described
        assert f"Path:          {directory}" in described


async def test_a_pod_waits_for_a_claim_that_does_not_exist(api: Client, ns: str) -> None:
    await api.create(pod("lonely", ns, "missing"))

    async def message() -> str:
        found = await api.get(POD, "lonely", namespace=ns)
        for condition in (found.get("status") or {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                return str(condition["message"])
        return ""

    text = await eventually(message)
    assert text == (
        f'0/1 nodes are available: persistentvolumeclaim "missing" not found. {NOT_HELPFUL}'
    )
    # The claim appearing lets the pod go on.
    await api.create(claim("missing", ns))
    await wait_phase(api, POD, "lonely", "Running", ns)
    await wait_phase(api, PVC, "missing", "Bound", ns)


# -- Immediate -----------------------------------------------------------------------------


async def test_an_immediate_claim_binds_without_a_pod(kc: Kubectl, api: Client, ns: str) -> None:
    await api.create(storage_class(f"{ns}-now", volumeBindingMode="Immediate"))
    await api.create(claim("now", ns, "2Gi", f"{ns}-now", modes=("ReadWriteMany",)))
    bound = await wait_phase(api, PVC, "now", "Bound", ns)
    volume = await api.get(PV, bound["spec"]["volumeName"])
    # Storage every node reaches: no node affinity, any access mode.
    assert "nodeAffinity" not in volume["spec"]
    assert volume["spec"]["accessModes"] == ["ReadWriteMany"]
    assert volume["spec"]["capacity"] == {"storage": "2Gi"}
    assert "volume.kubernetes.io/selected-node" not in bound["metadata"]["annotations"]
    rows = (await kc.run("get", "pvc", "now", "-n", ns)).rows()
    assert rows[1][1:6] == ["Bound", volume["metadata"]["name"], "2Gi", "RWX", f"{ns}-now"]


async def test_a_pod_with_an_unbound_immediate_claim_is_unschedulable(api: Client, ns: str) -> None:
    # Nothing provisions for this class: the claim stays Pending.
    await api.create(
        storage_class(f"{ns}-none", provisioner="example.com/absent", volumeBindingMode="Immediate")
    )
    await api.create(claim("idle", ns, cls=f"{ns}-none"))
    await api.create(pod("stuck", ns, "idle"))

    async def condition() -> dict[str, Any] | None:
        found = await api.get(POD, "stuck", namespace=ns)
        for cond in (found.get("status") or {}).get("conditions") or []:
            if cond["type"] == "PodScheduled":
                return dict(cond)
        return None

    scheduled = await eventually(condition)
    assert scheduled["status"] == "False"
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"] == (
        f"0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. {NOT_HELPFUL}"
    )
    expected = (
        "persistentvolume-controller",
        "ExternalProvisioning",
        "Waiting for a volume to be created either by the external provisioner "
        "'example.com/absent' or manually by the system administrator. If volume creation is "
        "delayed, please verify that the provisioner is running and correctly registered.",
    )
    assert expected in await notes(api, ns, "idle")
    assert (await api.get(POD, "stuck", namespace=ns))["spec"].get("nodeName") is None


async def test_a_node_waits_to_start_a_pod_whose_claim_is_not_bound(api: Client, ns: str) -> None:
    await api.create(
        storage_class(f"{ns}-later", provisioner="example.com/later", volumeBindingMode="Immediate")
    )
    await api.create(claim("later", ns, cls=f"{ns}-later"))
    placed = pod("placed", ns, "later")
    placed["spec"]["nodeName"] = "kubeforge-node"  # past the scheduler, as a kubelet may see
    await api.create(placed)
    failed = (
        "kubelet",
        "FailedMount",
        f"error processing PVC {ns}/later: PVC is not bound",
    )

    async def mount_failed() -> bool:
        return failed in await notes(api, ns, "placed")

    await eventually(mount_failed)
    assert await phase(api, POD, "placed", ns) == "Pending"
    # A volume made for it by hand lets the pod start.
    reserved = {"namespace": ns, "name": "later"}
    await api.create(host_volume(f"{ns}-later", "1Gi", f"{ns}-later", claimRef=reserved))
    await wait_phase(api, PVC, "later", "Bound", ns)
    await wait_phase(api, POD, "placed", "Running", ns)


# -- static volumes ------------------------------------------------------------------------


async def test_a_claim_binds_to_the_smallest_fitting_volume_made_beforehand(
    kc: Kubectl, api: Client, ns: str
) -> None:
    cls = f"{ns}-manual"
    await api.create(host_volume(f"{ns}-small", "1Gi", cls, labels={"tier": "fast"}))
    await api.create(host_volume(f"{ns}-large", "10Gi", cls, labels={"tier": "fast"}))
    await api.create(host_volume(f"{ns}-medium", "5Gi", cls, labels={"tier": "fast"}))
    await api.create(host_volume(f"{ns}-other", "5Gi", cls, labels={"tier": "slow"}))
    for name in ("small", "large", "medium", "other"):
        await wait_phase(api, PV, f"{ns}-{name}", "Available")
    selector = {"matchLabels": {"tier": "fast"}}
    await api.create(claim("static", ns, "2Gi", cls, selector=selector))
    bound = await wait_phase(api, PVC, "static", "Bound", ns)
    assert bound["spec"]["volumeName"] == f"{ns}-medium"
    assert bound["status"]["capacity"] == {"storage": "5Gi"}
    volume = await wait_phase(api, PV, f"{ns}-medium", "Bound")
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert volume["spec"]["claimRef"]["name"] == "static"
    rows = (await kc.run("get", "pv", f"{ns}-medium", f"{ns}-small")).rows()
    assert [row[4] for row in rows[1:]] == ["Bound", "Available"]

    # A claim asking for a volume by name gets it: the user bound the claim, the binder the
    # volume.
    await api.create(claim("named", ns, "1Gi", cls, volumeName=f"{ns}-small"))
    named = await wait_phase(api, PVC, "named", "Bound", ns)
    assert named["spec"]["volumeName"] == f"{ns}-small"
    assert "pv.kubernetes.io/bound-by-controller" not in named["metadata"]["annotations"]
    small = await api.get(PV, f"{ns}-small")
    assert small["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"

    # A volume its maker reserved for a claim goes to that claim only, even when larger
    # than a free one; the binding stays the user's.
    reserved = {"namespace": ns, "name": "reserved"}
    await api.create(host_volume(f"{ns}-reserved", "8Gi", cls, claimRef=reserved))
    await api.create(claim("reserved", ns, "1Gi", cls))
    reserved_claim = await wait_phase(api, PVC, "reserved", "Bound", ns)
    assert reserved_claim["spec"]["volumeName"] == f"{ns}-reserved"
    assert (
        reserved_claim["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    )
    volume = await wait_phase(api, PV, f"{ns}-reserved", "Bound")
    assert "pv.kubernetes.io/bound-by-controller" not in (
        volume["metadata"].get("annotations") or {}
    )
    assert volume["spec"]["claimRef"]["uid"] == reserved_claim["metadata"]["uid"]


async def test_the_scheduler_binds_a_local_volume_for_a_waiting_claim(api: Client, ns: str) -> None:
    cls = f"{ns}-local"
    await api.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": cls},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    affinity = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/hostname",
                            "operator": "In",
                            "values": ["kubeforge-node"],
                        }
                    ]
                }
            ]
        }
    }
    await api.create(host_volume(f"{ns}-disk", "3Gi", cls, nodeAffinity=affinity))
    await api.create(claim("local", ns, "1Gi", cls))
    await api.create(pod("user", ns, "local"))
    await wait_phase(api, POD, "user", "Running", ns)
    bound = await wait_phase(api, PVC, "local", "Bound", ns)
    assert bound["spec"]["volumeName"] == f"{ns}-disk"
    # Pre-bound by the scheduler, not provisioned: no selected node on the claim.
    assert "volume.kubernetes.io/selected-node" not in bound["metadata"]["annotations"]
    volume = await api.get(PV, f"{ns}-disk")
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


# -- reclaim policies ----------------------------------------------------------------------


async def test_delete_removes_the_volume_and_its_data_retain_keeps_them(
    kc: Kubectl, api: Client, ns: str
) -> None:
    await api.create(
        storage_class(f"{ns}-keep", volumeBindingMode="Immediate", reclaimPolicy="Retain")
    )
    await api.create(storage_class(f"{ns}-drop", volumeBindingMode="Immediate"))
    await api.create(claim("kept", ns, cls=f"{ns}-keep"))
    await api.create(claim("dropped", ns, cls=f"{ns}-drop"))
    kept = (await wait_phase(api, PVC, "kept", "Bound", ns))["spec"]["volumeName"]
    dropped = (await wait_phase(api, PVC, "dropped", "Bound", ns))["spec"]["volumeName"]
    kept_volume = await wait_phase(api, PV, kept, "Bound")
    kept_dir = Path(kept_volume["spec"]["hostPath"]["path"])
    bound_at = kept_volume["status"]["lastPhaseTransitionTime"]
    dropped_dir = Path((await api.get(PV, dropped))["spec"]["hostPath"]["path"])
    (kept_dir / "file").write_text("kept")
    (dropped_dir / "file").write_text("dropped")

    await kc.run("delete", "pvc", "kept", "dropped", "-n", ns, "--wait=true")
    await gone(api, PV, dropped)
    assert not dropped_dir.exists()
    released = await wait_phase(api, PV, kept, "Released")
    assert released["spec"]["claimRef"]["name"] == "kept"
    assert released["status"]["lastPhaseTransitionTime"] >= bound_at
    assert (kept_dir / "file").read_text() == "kept"
    rows = (await kc.run("get", "pv", kept)).rows()
    assert rows[1][3:6] == ["Retain", "Released", f"{ns}/kept"]
    # A new claim of the same name does not take a released volume back.
    await api.create(claim("kept", ns, cls=f"{ns}-keep"))
    again = await wait_phase(api, PVC, "kept", "Bound", ns)
    assert again["spec"]["volumeName"] != kept
    assert await phase(api, PV, kept) == "Released"


async def test_a_volume_no_provisioner_made_cannot_be_deleted(api: Client, ns: str) -> None:
    cls = f"{ns}-manual"
    await api.create(
        host_volume(f"{ns}-static", "1Gi", cls, persistentVolumeReclaimPolicy="Delete")
    )
    await wait_phase(api, PV, f"{ns}-static", "Available")
    await api.create(claim("once", ns, cls=cls))
    await wait_phase(api, PVC, "once", "Bound", ns)
    await api.delete(PVC, "once", namespace=ns)
    failed = await wait_phase(api, PV, f"{ns}-static", "Failed")
    message = (
        f'error getting deleter volume plugin for volume "{ns}-static": '
        "no deletable volume plugin matched"
    )
    assert failed["status"]["message"] == message
    assert ("persistentvolume-controller", "VolumeFailedDelete", message) in await notes(
        api, "default", f"{ns}-static"
    )


# -- protection ----------------------------------------------------------------------------


async def test_a_claim_in_use_and_a_bound_volume_are_kept_until_released(
    kc: Kubectl, api: Client, ns: str
) -> None:
    await api.create(claim("held", ns))
    await api.create(pod("holder", ns, "held"))
    await wait_phase(api, POD, "holder", "Running", ns)
    bound = await wait_phase(api, PVC, "held", "Bound", ns)
    volume_name = bound["spec"]["volumeName"]

    await kc.run("delete", "pvc", "held", "-n", ns, "--wait=false")
    await kc.run("delete", "pv", volume_name, "--wait=false")

    async def terminating() -> bool:
        rows = (await kc.run("get", "pvc", "held", "-n", ns)).rows()
        return rows[1][1] == "Terminating"

    await eventually(terminating)
    held = await api.get(PVC, "held", namespace=ns)
    assert held["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = await api.get(PV, volume_name)
    assert volume["metadata"].get("deletionTimestamp")
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert (await api.get(POD, "holder", namespace=ns))["status"]["phase"] == "Running"

    await api.delete(POD, "holder", namespace=ns)
    await gone(api, PVC, "held", ns)
    await gone(api, PV, volume_name)


# -- expansion -----------------------------------------------------------------------------


async def test_a_claim_grows_when_its_class_allows_it(api: Client, ns: str) -> None:
    cls = f"{ns}-grow"
    await api.create(storage_class(cls, volumeBindingMode="Immediate", allowVolumeExpansion=True))
    await api.create(claim("grows", ns, "1Gi", cls))
    bound = await wait_phase(api, PVC, "grows", "Bound", ns)
    volume_name = bound["spec"]["volumeName"]
    await api.patch(
        PVC, "grows", {"spec": {"resources": {"requests": {"storage": "3Gi"}}}}, namespace=ns
    )

    async def volume_grown() -> bool:
        volume = await api.get(PV, volume_name)
        return bool(volume["spec"]["capacity"]["storage"] == "3Gi")

    await eventually(volume_grown)

    async def pending_on_node() -> dict[str, Any] | None:
        found = await api.get(PVC, "grows", namespace=ns)
        status = found["status"]
        if (status.get("allocatedResourceStatuses") or {}).get("storage") == "NodeResizePending":
            return dict(status)
        return None

    # No pod uses the claim: the node's part waits for one.
    status = await eventually(pending_on_node)
    assert status["capacity"] == {"storage": "1Gi"}
    assert status["allocatedResources"] == {"storage": "3Gi"}
    [condition] = status["conditions"]
    assert condition["type"] == "FileSystemResizePending"
    assert condition["status"] == "True"
    assert condition["message"] == (
        "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
    )

    await api.create(pod("grower", ns, "grows"))
    await wait_phase(api, POD, "grower", "Running", ns)

    async def resized() -> dict[str, Any] | None:
        found = await api.get(PVC, "grows", namespace=ns)
        return dict(found["status"]) if found["status"]["capacity"] == {"storage": "3Gi"} else None

    status = await eventually(resized)
    assert not status.get("conditions")
    assert not status.get("allocatedResourceStatuses")
    reasons = [reason for _, reason, _ in await notes(api, ns, "grows")]
    for reason in ("Resizing", "FileSystemResizeRequired", "FileSystemResizeSuccessful"):
        assert reason in reasons


async def test_growing_is_refused_unless_the_class_allows_it(
    kc: Kubectl, api: Client, ns: str
) -> None:
    await api.create(storage_class(f"{ns}-fixed", volumeBindingMode="Immediate"))
    await api.create(claim("fixed", ns, "1Gi", f"{ns}-fixed"))
    await wait_phase(api, PVC, "fixed", "Bound", ns)
    grow = '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'
    result = await kc.run("patch", "pvc", "fixed", "-n", ns, "-p", grow, check=False)
    assert result.code != 0
    assert (
        'persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be '
        "resized and the storageclass that provisions the pvc must support resize"
    ) in result.err

    # Only a bound claim may grow: validation, before admission, says so for a pending one.
    await api.create(claim("unbound", ns, "1Gi", "standard"))
    grow_unbound = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    with pytest.raises(ApiError) as refused:
        await api.patch(PVC, "unbound", grow_unbound, namespace=ns)
    assert refused.value.code == 422
    assert IMMUTABLE in str(refused.value)

    # The rest of a claim's spec is fixed, and it never shrinks below its capacity.
    result = await kc.run(
        "patch",
        "pvc",
        "fixed",
        "-n",
        ns,
        "-p",
        '{"spec":{"accessModes":["ReadWriteMany"]}}',
        check=False,
    )
    assert IMMUTABLE in result.err
    shrink = '{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}'
    result = await kc.run("patch", "pvc", "fixed", "-n", ns, "-p", shrink, check=False)
    assert (
        "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
    ) in result.err


# -- the official Python client ------------------------------------------------------------


async def test_the_python_client_sees_claims_bind(kubeconfig: Path, api: Client, ns: str) -> None:
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(kubeconfig)))

    def create() -> None:
        body = k8s.V1PersistentVolumeClaim(
            metadata=k8s.V1ObjectMeta(name="typed"),
            spec=k8s.V1PersistentVolumeClaimSpec(
                access_modes=["ReadWriteOnce"],
                resources=k8s.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
            ),
        )
        core.create_namespaced_persistent_volume_claim(ns, body)

    await asyncio.to_thread(create)
    await api.create(pod("typed-user", ns, "typed"))
    await wait_phase(api, PVC, "typed", "Bound", ns)

    def read() -> tuple[Any, Any]:
        found = core.read_namespaced_persistent_volume_claim("typed", ns)
        volume = core.read_persistent_volume(found.spec.volume_name)
        return found, volume

    found, volume = await asyncio.to_thread(read)
    assert found.status.phase == "Bound"
    assert found.spec.storage_class_name == "standard"
    assert found.status.capacity == {"storage": "1Gi"}
    assert volume.spec.claim_ref.name == "typed"
    assert volume.spec.host_path.path.endswith(f"_{ns}_typed")
    assert volume.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].key == (
        "kubernetes.io/hostname"
    )
    core.api_client.close()
