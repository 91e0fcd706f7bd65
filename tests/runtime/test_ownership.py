"""Owner references and in-memory finalizers, on dicts and on typed resources."""

from __future__ import annotations

from typing import Any

import pytest

import kubeforge
import kubeforge.models
from kubeforge._api.meta import (
    GroupVersionKind,
    ObjectMeta,
    ObjectReference,
    OwnerReference,
    ResourceInfo,
)
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource
from kubeforge._runtime.finalizers import add_finalizer, has_finalizer, remove_finalizer
from kubeforge._runtime.ownership import (
    AlreadyOwnedError,
    get_controller_of,
    get_reference,
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)


class AppSpec(Model):
    replicas: int = 1


class App(Resource[AppSpec, None]):
    __kubeforge__ = ResourceInfo(GroupVersionKind("example.com", "v1", "App"), "apps", True)


class Tenant(Resource[AppSpec, None]):
    __kubeforge__ = ResourceInfo(GroupVersionKind("example.com", "v1", "Tenant"), "tenants", False)


def app(name: str = "web", uid: str = "uid-web", namespace: str | None = "prod") -> App:
    return App(metadata=ObjectMeta(name=name, uid=uid, namespace=namespace), spec=AppSpec())


def config_map(name: str = "cfg", namespace: str | None = "prod") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def deployment(name: str, uid: str, namespace: str = "prod") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "uid": uid, "namespace": namespace},
    }


def test_controller_reference_from_a_typed_owner_onto_a_dict() -> None:
    obj = config_map()
    set_controller_reference(app(), obj)
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "example.com/v1",
            "kind": "App",
            "name": "web",
            "uid": "uid-web",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert has_controller_reference(obj)
    assert has_owner_reference(app(), obj)
    controller = get_controller_of(obj)
    assert controller is not None and controller["name"] == "web"


def test_controller_reference_is_idempotent_and_refreshes_the_reference() -> None:
    obj = config_map()
    set_controller_reference(app(uid="old"), obj)
    set_controller_reference(app(uid="new"), obj, block_owner_deletion=False)
    refs = obj["metadata"]["ownerReferences"]
    assert len(refs) == 1
    assert refs[0]["uid"] == "new"
    assert refs[0]["blockOwnerDeletion"] is False


def test_a_second_controller_is_refused() -> None:
    obj = config_map()
    set_controller_reference(app("first"), obj)
    with pytest.raises(AlreadyOwnedError) as err:
        set_controller_reference(app("second"), obj)
    assert str(err.value) == "Object prod/cfg is already owned by another App controller first"
    assert err.value.owner["name"] == "first"
    # A plain owner reference can still be added next to the controller.
    set_owner_reference(app("second", uid="uid-2"), obj)
    assert [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["first", "second"]
    assert "controller" not in obj["metadata"]["ownerReferences"][1]


def test_owner_references_onto_a_typed_object() -> None:
    child = app("child", uid="uid-child")
    owner = deployment("d", "uid-d")
    set_owner_reference(owner, child)
    refs = child.metadata.owner_references
    assert refs == [OwnerReference(api_version="apps/v1", kind="Deployment", name="d", uid="uid-d")]
    assert not has_controller_reference(child)
    set_controller_reference(owner, child)  # upgrades the same owner's reference in place
    assert child.metadata.owner_references is not None
    assert len(child.metadata.owner_references) == 1
    assert child.metadata.owner_references[0].controller is True
    assert child.to_dict()["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True


def test_the_same_owner_is_matched_by_group_kind_and_name_not_version() -> None:
    obj = config_map()
    set_owner_reference(deployment("d", "uid-d"), obj)
    other_version = {**deployment("d", "uid-other"), "apiVersion": "apps/v1beta2"}
    set_owner_reference(other_version, obj)
    refs = obj["metadata"]["ownerReferences"]
    assert len(refs) == 1 and refs[0]["apiVersion"] == "apps/v1beta2"
    extensions = {**deployment("d", "uid-x"), "apiVersion": "extensions/v1beta1"}
    assert not has_owner_reference(extensions, obj)


def test_scope_rules() -> None:
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed"):
        set_controller_reference(app(namespace="a"), config_map(namespace="b"))
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a namespace"):
        set_owner_reference(app(namespace="a"), config_map(namespace=None))
    tenant = Tenant(metadata=ObjectMeta(name="acme", uid="uid-acme"), spec=AppSpec())
    namespaced = config_map(namespace="anywhere")
    set_controller_reference(tenant, namespaced)  # cluster-scoped owners may own anything
    assert get_controller_of(namespaced) == {
        "apiVersion": "example.com/v1",
        "kind": "Tenant",
        "name": "acme",
        "uid": "uid-acme",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_the_owner_needs_a_uid_and_a_kind() -> None:
    with pytest.raises(ValueError, match="no uid"):
        set_controller_reference(app(uid=""), config_map())
    with pytest.raises(ValueError, match="apiVersion and kind"):
        set_owner_reference({"metadata": {"name": "x", "uid": "u"}}, config_map())


def test_removing_references() -> None:
    obj = config_map()
    with pytest.raises(ValueError, match="does not have any owner references"):
        remove_owner_reference(app(), obj)
    set_controller_reference(app(), obj)
    set_owner_reference(deployment("d", "uid-d"), obj)
    with pytest.raises(ValueError, match="does not have an owner reference for App 'other'"):
        remove_owner_reference(app("other"), obj)
    with pytest.raises(ValueError, match="does not have a controller reference for Deployment"):
        remove_controller_reference(deployment("d", "uid-d"), obj)
    remove_controller_reference(app(), obj)
    assert not has_controller_reference(obj)
    with pytest.raises(ValueError, match="does not have a controller reference"):
        remove_controller_reference(deployment("d", "uid-d"), obj)
    remove_owner_reference(deployment("d", "uid-d"), obj)
    assert "ownerReferences" not in obj["metadata"]

    typed = app("child")
    set_owner_reference(deployment("d", "uid-d"), typed)
    remove_owner_reference(deployment("d", "uid-d"), typed)
    assert typed.metadata.owner_references is None


def test_finalizers_in_memory() -> None:
    obj = config_map()
    assert not has_finalizer(obj, "example.com/cleanup")
    assert add_finalizer(obj, "example.com/cleanup")
    assert not add_finalizer(obj, "example.com/cleanup")
    assert add_finalizer(obj, "example.com/other")
    assert obj["metadata"]["finalizers"] == ["example.com/cleanup", "example.com/other"]
    assert remove_finalizer(obj, "example.com/cleanup")
    assert not remove_finalizer(obj, "example.com/cleanup")
    assert remove_finalizer(obj, "example.com/other")
    assert "finalizers" not in obj["metadata"]

    typed = app()
    assert add_finalizer(typed, "example.com/cleanup")
    assert typed.metadata.finalizers == ["example.com/cleanup"]
    assert has_finalizer(typed, "example.com/cleanup")
    typed.metadata.finalizers = ["a/b", "example.com/cleanup", "example.com/cleanup"]
    assert remove_finalizer(typed, "example.com/cleanup")
    assert typed.metadata.finalizers == ["a/b"]

    bare: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret"}
    assert add_finalizer(bare, "x/y")
    assert bare["metadata"] == {"finalizers": ["x/y"]}


def test_get_reference_names_the_object_as_client_go_does() -> None:
    typed = App(
        metadata=ObjectMeta(name="web", namespace="prod", uid="u1", resource_version="7"),
        spec=AppSpec(),
    )
    ref = kubeforge.get_reference(typed)
    assert isinstance(ref, ObjectReference)
    assert ref.to_dict() == {
        "apiVersion": "example.com/v1",
        "kind": "App",
        "name": "web",
        "namespace": "prod",
        "uid": "u1",
        "resourceVersion": "7",
    }
    as_dict = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert get_reference(as_dict).to_dict() == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "c",
    }
    part = get_reference(as_dict, field_path="data.key")
    assert part.field_path == "data.key"
    # A reference to a reference is the reference itself (reference.GetReference).
    assert get_reference(ref) is ref
    assert get_reference(ref, field_path="spec").field_path == "spec" and ref.field_path is None
    with pytest.raises(ValueError, match="no apiVersion and kind"):
        get_reference({"metadata": {"name": "c"}})
    # The type the built-in models hold references as.
    assert kubeforge.models.ObjectReference is ObjectReference
    assert kubeforge.models.batch_v1.CronJobStatus(active=[ref]).to_dict()["active"][0]["uid"]


def test_the_reference_helpers_are_exported() -> None:
    assert kubeforge.get_controller_of is get_controller_of
    assert kubeforge.get_reference is get_reference
    owned = {"metadata": {"ownerReferences": [{"kind": "App", "name": "a", "controller": True}]}}
    assert kubeforge.get_controller_of(owned) == {"kind": "App", "name": "a", "controller": True}
