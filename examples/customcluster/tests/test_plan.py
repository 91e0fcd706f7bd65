"""The sync handler's decisions, without a cluster: which pods to keep, delete and create."""

from __future__ import annotations

from typing import Any

from kubeforge.models import Pod

from api.v1alpha1 import Customcluster
from controllers.pods import customcluster_keys, desired_names, new_pod, plan

UID = "4f1c7a52-0000-4000-8000-000000000001"


def cluster(count: int = 3, message: str = "hi") -> Customcluster:
    return Customcluster.from_dict(
        {
            "metadata": {"name": "web", "namespace": "prod", "uid": UID},
            "spec": {"count": count, "message": message},
        }
    )


def pod(
    name: str,
    *,
    label: str | None = "web",
    owner_uid: str | None = UID,
    controller: bool = True,
    phase: str = "Running",
    deleting: bool = False,
) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "prod"}
    if label is not None:
        meta["labels"] = {"controller": label}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "samplecontroller.kubeforge.dev/v1alpha1",
                "kind": "Customcluster",
                "name": "web",
                "uid": owner_uid,
                "controller": controller,
            }
        ]
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    return Pod.from_dict({"metadata": meta, "spec": {"containers": []}, "status": {"phase": phase}})


def test_an_empty_cluster_gets_every_pod() -> None:
    cc = cluster(count=3)
    todo = plan(cc, [])
    assert todo.create == desired_names(cc) and len(set(todo.create)) == 3
    assert todo.delete == [] and todo.running == 0


def test_current_running_pods_are_kept_and_counted() -> None:
    cc = cluster(count=2)
    first, second = desired_names(cc)
    todo = plan(cc, [pod(first), pod(second, phase="Pending")])
    assert (todo.create, todo.delete, todo.running) == ([], [], 1)


def test_each_kind_of_unwanted_pod_is_deleted_for_its_reason() -> None:
    cc = cluster(count=1)
    (wanted,) = desired_names(cc)
    old = desired_names(cluster(count=1, message="before"))[0]
    surplus = wanted[:-1] + "1"
    pods = [
        pod("stray", owner_uid=None),
        pod("previous-owner", owner_uid="another-uid"),
        pod("relabelled", label="other"),
        pod(old),
        pod(surplus),
    ]
    reasons = {p.metadata.name: why for p, why in plan(cc, pods).delete}
    assert reasons == {
        "stray": "stray",
        "previous-owner": "stray",
        "relabelled": "unlabelled",
        old: "outdated",
        surplus: "surplus",
    }


def test_a_finished_pod_is_deleted_and_its_name_waits() -> None:
    cc = cluster(count=1)
    (wanted,) = desired_names(cc)
    todo = plan(cc, [pod(wanted, phase="Failed")])
    assert [(p.metadata.name, why) for p, why in todo.delete] == [(wanted, "finished")]
    assert todo.create == []  # recreated once the old pod is gone


def test_terminating_pods_are_neither_counted_deleted_nor_replaced_yet() -> None:
    cc = cluster(count=1)
    (wanted,) = desired_names(cc)
    todo = plan(cc, [pod(wanted, deleting=True), pod("going", owner_uid=None, deleting=True)])
    assert (todo.create, todo.delete, todo.running) == ([], [], 0)


def test_a_non_controller_owner_reference_alone_is_left_alone() -> None:
    cc = cluster(count=0)
    todo = plan(cc, [pod("shared", label=None, controller=False)])
    assert (todo.create, todo.delete) == ([], [])


def test_new_pods_carry_the_label_the_owner_and_the_message_as_data() -> None:
    cc = cluster(count=1, message='say "$HOME"; exit 1')
    made = new_pod(cc, desired_names(cc)[0])
    data = made.to_dict()
    assert data["metadata"]["labels"] == {"controller": "web"}
    assert customcluster_keys(data) == ["prod/web"]
    (container,) = data["spec"]["containers"]
    assert container["env"] == [{"name": "MESSAGE", "value": 'say "$HOME"; exit 1'}]
    assert 'say "$HOME"' not in " ".join(container["command"])


def test_pods_are_indexed_under_their_label_and_their_controller() -> None:
    moved = pod("moved", label="api").to_dict()
    assert customcluster_keys(moved) == ["prod/api", "prod/web"]
    assert customcluster_keys(pod("loose", label=None, owner_uid=None).to_dict()) == []
