"""Server-side apply and managedFields bookkeeping against built-in and CRD-like schemas."""

from __future__ import annotations

import copy
import functools
import importlib.resources
from typing import Any

import orjson
import pytest

from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._apiserver.storage.managedfields import (
    LAST_APPLIED_ANNOTATION,
    ApplyConflict,
    ApplyError,
    FieldSet,
    fields_of,
    render_path,
    server_side_apply,
    update_managed_fields,
)


@functools.cache
def _defs() -> dict[str, Any]:
    path = importlib.resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema/v1.33.0-local/_definitions.json"
    )
    defs: dict[str, Any] = orjson.loads(path.read_bytes())["$defs"]
    return defs


@functools.cache
def view(definition: str) -> SchemaView:
    return SchemaView({"$ref": f"#/$defs/{definition}"}, _defs())


def cm_view() -> SchemaView:
    return view("io.k8s.api.core.v1.ConfigMap")


def deploy_view() -> SchemaView:
    return view("io.k8s.api.apps.v1.Deployment")


WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "proto"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "proto": {"type": "string", "default": "tcp"},
                            "port": {"type": "integer"},
                        },
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "pinned": {
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                    "items": {"type": "string"},
                },
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "settings": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {"ready": {"type": "boolean"}, "phase": {"type": "string"}},
        },
    },
}


@functools.cache
def widget_view() -> SchemaView:
    return SchemaView(WIDGET_SCHEMA)


T0, T1, T2, T3 = (f"2024-05-01T10:00:0{i}Z" for i in range(4))


def configmap(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cm", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def widget(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec,
        **extra,
    }


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    managed: list[dict[str, Any]] = obj["metadata"].get("managedFields", [])
    return managed


def entry(obj: dict[str, Any], manager: str, operation: str | None = None) -> dict[str, Any]:
    found = [
        e
        for e in entries(obj)
        if e["manager"] == manager and (operation is None or e["operation"] == operation)
    ]
    assert len(found) == 1, entries(obj)
    return found[0]


def owned(obj: dict[str, Any], manager: str, operation: str | None = None) -> list[str]:
    return FieldSet.from_fields_v1(entry(obj, manager, operation)["fieldsV1"]).rendered()


def apply_cm(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str = "kubectl",
    *,
    force: bool = False,
    now: str = T0,
) -> dict[str, Any]:
    return server_side_apply(live, applied, manager, force, cm_view(), "v1", None, now)


def update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    schema: SchemaView | None = None,
    api_version: str = "v1",
    subresource: str | None = None,
    now: str = T1,
) -> dict[str, Any]:
    new = copy.deepcopy(new)
    update_managed_fields(old, new, manager, schema or cm_view(), api_version, subresource, now)
    return new


def edited(obj: dict[str, Any], **data: str | None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for key, value in data.items():
        if value is None:
            out["data"].pop(key, None)
        else:
            out["data"][key] = value
    return out


# --- field sets ----------------------------------------------------------------------------------


class TestFieldSets:
    FIELDS: dict[str, Any] = {
        "f:metadata": {
            "f:finalizers": {".": {}, 'v:"a/b"': {}},
            "f:labels": {".": {}, "f:app": {}},
        },
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {
                    ".": {},
                    "f:image": {},
                    "f:name": {},
                    "f:ports": {
                        'k:{"containerPort":80,"protocol":"TCP"}': {
                            ".": {},
                            "f:containerPort": {},
                        }
                    },
                }
            },
            "f:list": {"i:0": {}},
            "f:selector": {},
        },
    }

    def test_fields_v1_round_trip(self) -> None:
        fields = FieldSet.from_fields_v1(self.FIELDS)
        assert fields.to_fields_v1() == self.FIELDS
        assert orjson.dumps(fields.to_fields_v1()) == orjson.dumps(self.FIELDS)
        assert ("f:metadata", "f:labels") in fields
        assert ("f:metadata",) not in fields
        assert ("f:spec", "f:list", "i:0") in fields

    def test_keys_are_canonicalised(self) -> None:
        fields = FieldSet.from_fields_v1(
            {"f:ports": {'k:{ "protocol": "TCP", "containerPort": 80.0 }': {}}}
        )
        assert fields.paths == {("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')}

    @pytest.mark.parametrize(
        "bad", [{"x:bad": {}}, {"f:a": []}, {"k:[1]": {}}, {"k:{": {}}, {"i:x": {}}]
    )
    def test_malformed_fields_v1(self, bad: dict[str, Any]) -> None:
        with pytest.raises(ValueError, match=r"."):
            FieldSet.from_fields_v1(bad)

    def test_rendering(self) -> None:
        assert render_path(("f:spec", "f:containers", 'k:{"name":"c"}', "f:image")) == (
            '.spec.containers[name="c"].image'
        )
        assert render_path(("f:data", "f:a")) == ".data.a"
        assert render_path(("f:metadata", "f:labels", "f:x")) == ".metadata.labels.x"
        assert render_path(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'
        assert render_path(("f:p", 'k:{"containerPort":80,"protocol":"TCP"}')) == (
            '.p[containerPort=80,protocol="TCP"]'
        )
        assert render_path(("f:l", "i:3")) == ".l[3]"
        rendered = FieldSet.from_fields_v1(self.FIELDS).rendered()
        # Members at a level come before what is beneath the level's other nodes.
        assert rendered.index(".spec.selector") < rendered.index('.spec.containers[name="c"]')

    def test_set_algebra(self) -> None:
        a = FieldSet([("f:a",), ("f:b",)])
        b = FieldSet([("f:b",), ("f:c",)])
        assert (a | b).paths == {("f:a",), ("f:b",), ("f:c",)}
        assert (a & b).paths == {("f:b",)}
        assert (a - b).paths == {("f:a",)}
        assert a == FieldSet([("f:b",), ("f:a",)])
        assert not FieldSet()
        assert len(a) == 2

    def test_fields_of_configmap(self) -> None:
        fields = fields_of(configmap({"a": "1"}, {"x": "y"}), cm_view())
        assert fields.rendered() == [
            ".apiVersion",
            ".kind",
            ".data.a",
            ".metadata.name",
            ".metadata.namespace",
            ".metadata.labels.x",
        ]

    def test_fields_of_deployment(self) -> None:
        obj = {
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "i", "ports": [{"containerPort": 80}]}
                        ]
                    }
                },
            }
        }
        paths = set(fields_of(obj, deploy_view()).rendered())
        assert paths == {
            ".spec.selector",
            '.spec.template.spec.containers[name="c"]',
            '.spec.template.spec.containers[name="c"].name',
            '.spec.template.spec.containers[name="c"].image',
            # The protocol key defaults to TCP, as the server's defaulting will set it.
            '.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]',
            '.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]'
            ".containerPort",
        }

    def test_fields_of_crd_list_and_map_types(self) -> None:
        obj = widget(
            {
                "ports": [{"name": "a", "port": 1}],
                "tags": ["t1", "t2"],
                "args": ["x"],
                "pinned": ["p"],
                "selector": {"k": "v"},
                "settings": {"s": "1"},
                "extra": {"deep": {"x": 1}, "list": [1]},
                "empty": {},
            }
        )
        paths = set(fields_of(obj, widget_view()).rendered())
        assert {
            '.spec.ports[name="a",proto="tcp"]',
            '.spec.ports[name="a",proto="tcp"].name',
            '.spec.ports[name="a",proto="tcp"].port',
            '.spec.tags[="t1"]',
            '.spec.tags[="t2"]',
            ".spec.args",
            ".spec.pinned",
            ".spec.selector",
            ".spec.settings.s",
            ".spec.extra.deep",
            ".spec.extra.deep.x",
            ".spec.extra.list",
            ".spec.empty",
        } <= paths
        assert ".spec.selector.k" not in paths
        assert ".spec" not in paths


# --- server-side apply ---------------------------------------------------------------------------


class TestApply:
    def test_create_on_apply(self) -> None:
        out = apply_cm(None, configmap({"a": "1"}, {"app": "x"}))
        assert out["data"] == {"a": "1"}
        assert entries(out) == [
            {
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
            }
        ]

    def test_inputs_not_mutated(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}, {"app": "x"}))
        applied = configmap({"b": "2"})
        before_live, before_applied = copy.deepcopy(live), copy.deepcopy(applied)
        apply_cm(live, applied, now=T1)
        assert live == before_live
        assert applied == before_applied

    def test_reapply_without_a_label_removes_it(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}, {"app": "x", "tier": "web"}))
        out = apply_cm(live, configmap({"a": "1"}, {"app": "x"}), now=T1)
        assert out["metadata"]["labels"] == {"app": "x"}
        assert owned(out, "kubectl") == [".data.a", ".metadata.labels.app"]
        assert entry(out, "kubectl")["time"] == T1

    def test_dropping_every_label_removes_the_map(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}, {"app": "x"}))
        out = apply_cm(live, configmap({"a": "1"}), now=T1)
        assert "labels" not in out["metadata"]

    def test_unmentioned_fields_are_untouched(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}))
        live = update(live, edited(live, other="o"), "editor")
        out = apply_cm(live, configmap({"a": "2"}), now=T2)
        assert out["data"] == {"a": "2", "other": "o"}

    def test_shared_ownership_of_equal_values(self) -> None:
        live = apply_cm(None, configmap({"a": "1", "b": "1"}), "one")
        live = apply_cm(live, configmap({"a": "1"}), "two", now=T1)
        assert owned(live, "two") == [".data.a"]
        assert owned(live, "one") == [".data.a", ".data.b"]
        # "one" stops applying a: it stays, because "two" still owns it.
        live = apply_cm(live, configmap({"b": "1"}), "one", now=T2)
        assert live["data"] == {"a": "1", "b": "1"}
        assert owned(live, "one") == [".data.b"]
        # Once nobody applies it, it goes.
        nothing = configmap({})
        del nothing["data"]
        live = apply_cm(live, nothing, "two", now=T3)
        assert live["data"] == {"b": "1"}
        assert [e["manager"] for e in entries(live)] == ["one"]

    def test_conflict_and_force(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}), "one")
        with pytest.raises(ApplyConflict) as info:
            apply_cm(live, configmap({"a": "2"}), "two", now=T1)
        err = info.value
        assert str(err) == 'Apply failed with 1 conflict: conflict with "one": .data.a'
        assert err.conflicts == [("one", ".data.a")]
        assert err.causes == [
            {"type": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.a"}
        ]
        out = apply_cm(live, configmap({"a": "2"}), "two", force=True, now=T1)
        assert out["data"] == {"a": "2"}
        assert owned(out, "two") == [".data.a"]
        assert [e["manager"] for e in entries(out)] == ["two"]

    def test_several_conflicts_message(self) -> None:
        live = apply_cm(None, configmap({"a": "1", "b": "1"}), "m")
        live = update(live, edited(live, c="1"), "editor")
        with pytest.raises(ApplyConflict) as info:
            apply_cm(live, configmap({"a": "2", "b": "2", "c": "2"}), "other", now=T2)
        assert str(info.value) == (
            'Apply failed with 3 conflicts: conflicts with "editor" using v1:\n'
            "- .data.c\n"
            'conflicts with "m":\n'
            "- .data.a\n"
            "- .data.b"
        )
        assert [c["field"] for c in info.value.causes] == [".data.c", ".data.a", ".data.b"]
        assert info.value.causes[0]["message"] == 'conflict with "editor" using v1'

    def test_update_takes_ownership_then_apply_conflicts(self) -> None:
        live = apply_cm(None, configmap({"a": "1", "b": "1"}))
        live = update(live, edited(live, a="edited", n="new"), "kubectl-edit")
        assert owned(live, "kubectl-edit", "Update") == [".data.a", ".data.n"]
        assert owned(live, "kubectl") == [".data.b"]
        with pytest.raises(ApplyConflict) as info:
            apply_cm(live, configmap({"a": "1", "b": "1"}), now=T2)
        assert str(info.value) == (
            'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'
        )

    def test_applying_the_live_value_shares_instead_of_conflicting(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}))
        live = update(live, edited(live, a="edited"), "kubectl-edit")
        out = apply_cm(live, configmap({"a": "edited"}), now=T2)
        assert owned(out, "kubectl") == [".data.a"]
        assert owned(out, "kubectl-edit") == [".data.a"]

    def test_noop_apply_is_stable(self) -> None:
        live = apply_cm(None, configmap({"a": "1"}, {"x": "y"}))
        again = apply_cm(live, configmap({"a": "1"}, {"x": "y"}), now=T3)
        assert again == live

    def test_apply_removes_item_from_lists(self) -> None:
        schema = deploy_view()
        base: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "finalizers": ["keep", "drop"]},
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "a",
                                "image": "nginx",
                                "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}],
                            },
                            {"name": "b", "image": "busybox"},
                        ]
                    }
                },
            },
        }
        live = server_side_apply(None, base, "mgr", False, schema, "apps/v1", None, T0)
        assert '.spec.template.spec.containers[name="a"].env[name="E1"].value' in owned(live, "mgr")
        nxt = copy.deepcopy(base)
        nxt["metadata"]["finalizers"] = ["keep"]
        containers = nxt["spec"]["template"]["spec"]["containers"]
        del containers[1]
        del containers[0]["env"][0]
        out = server_side_apply(live, nxt, "mgr", False, schema, "apps/v1", None, T1)
        assert out["metadata"]["finalizers"] == ["keep"]
        assert out["spec"]["template"]["spec"]["containers"] == [
            {"name": "a", "image": "nginx", "env": [{"name": "E2", "value": "2"}]}
        ]

    def test_dropped_list_item_goes_whole_even_if_others_own_fields_in_it(self) -> None:
        # Owning a field of an item is not owning the item: upstream removes the item.
        schema = deploy_view()
        obj: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]
                    }
                }
            },
        }
        live = server_side_apply(None, obj, "mgr", False, schema, "apps/v1", None, T0)
        edit = copy.deepcopy(live)
        edit["spec"]["template"]["spec"]["containers"][1]["image"] = "2"
        live = update(live, edit, "kubectl-set", schema, "apps/v1", now=T1)
        nxt = copy.deepcopy(obj)
        del nxt["spec"]["template"]["spec"]["containers"][1]
        out = server_side_apply(live, nxt, "mgr", False, schema, "apps/v1", None, T2)
        assert out["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "1"}]
        assert [e["manager"] for e in entries(out)] == ["mgr"]

    def test_time_moves_only_when_the_object_changes(self) -> None:
        live = apply_cm(None, configmap({"a": "1", "b": "1"}), "one")
        live = apply_cm(live, configmap({"b": "1"}), "two", now=T1)
        # "one" gives up b, which "two" keeps: the object does not change.
        out = apply_cm(live, configmap({"a": "1"}), "one", now=T2)
        assert out["data"] == {"a": "1", "b": "1"}
        assert owned(out, "one") == [".data.a"]
        assert entry(out, "one")["time"] == T0

    def test_removal_spares_fields_another_manager_changed(self) -> None:
        live = apply_cm(None, configmap({"a": "1", "b": "1"}))
        live = update(live, edited(live, b="edited"), "editor")
        out = apply_cm(live, configmap({"a": "1"}), now=T2)
        assert out["data"] == {"a": "1", "b": "edited"}

    def test_crd_lists_and_maps(self) -> None:
        schema = widget_view()
        first = widget(
            {
                "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
                "tags": ["t1"],
                "args": ["x", "y"],
                "selector": {"k": "v"},
                "settings": {"s1": "1"},
            }
        )
        live = server_side_apply(None, first, "one", False, schema, "example.com/v1", None, T0)
        second = widget(
            {
                "ports": [{"name": "c", "port": 3}, {"name": "a", "port": 10}],
                "tags": ["t2"],
                "args": ["z"],
                "selector": {"other": "w"},
                "settings": {"s2": "2"},
            }
        )
        out = server_side_apply(live, second, "two", True, schema, "example.com/v1", None, T1)
        spec = out["spec"]
        # map list merged by key: applied items in applied order, live-only items after
        # the shared item they followed.
        assert spec["ports"] == [
            {"name": "c", "port": 3},
            {"name": "a", "port": 10},
            {"name": "b", "port": 2},
        ]
        assert spec["tags"] == ["t1", "t2"]  # set: union
        assert spec["args"] == ["z"]  # list without a list type: atomic
        assert spec["selector"] == {"other": "w"}  # atomic map: replaced
        assert spec["settings"] == {"s1": "1", "s2": "2"}  # granular map: merged
        assert '.spec.ports[name="a",proto="tcp"].port' in owned(out, "two")
        assert '.spec.ports[name="a",proto="tcp"].port' not in owned(out, "one")
        assert ".spec.args" not in owned(out, "one")

    def test_crd_dropping_everything_under_a_field_removes_it(self) -> None:
        schema = widget_view()
        live = server_side_apply(None, widget({"size": 1}), "m", False, schema, "v", None, T0)
        applied = widget({})
        del applied["spec"]
        out = server_side_apply(live, applied, "m", False, schema, "v", None, T1)
        assert "spec" not in out
        assert entries(out) == []

    def test_null_owns_and_unsets(self) -> None:
        schema = widget_view()
        live = server_side_apply(
            None, widget({"size": 1, "tags": ["a"]}), "m", False, schema, "v", None, T0
        )
        out = server_side_apply(live, widget({"size": None}), "m", False, schema, "v", None, T1)
        assert out["spec"] == {}
        assert owned(out, "m") == [".spec.size"]

    def test_duplicate_keys_in_the_intent(self) -> None:
        with pytest.raises(ApplyError, match=r"\.spec\.ports: duplicate entries for key"):
            server_side_apply(
                None,
                widget({"ports": [{"name": "a"}, {"name": "a", "proto": "tcp"}]}),
                "m",
                False,
                widget_view(),
                "v",
                None,
                T0,
            )

    def test_managed_fields_in_the_intent_are_rejected(self) -> None:
        applied = configmap({"a": "1"})
        applied["metadata"]["managedFields"] = []
        with pytest.raises(ApplyError, match=r"metadata\.managedFields must be nil"):
            apply_cm(None, applied)

    def test_identity_and_server_metadata_are_never_owned(self) -> None:
        applied = configmap({"a": "1"})
        applied["metadata"].update(
            {"uid": "u", "resourceVersion": "3", "generation": 2, "finalizers": ["f"]}
        )
        out = apply_cm(None, applied)
        assert owned(out, "kubectl") == [".data.a", '.metadata.finalizers[="f"]']

    def test_apply_to_status_subresource(self) -> None:
        schema = widget_view()
        live = server_side_apply(None, widget({"size": 1}), "user", False, schema, "v", None, T0)
        out = server_side_apply(
            live,
            widget({"size": 5}, status={"ready": True}),
            "controller",
            False,
            schema,
            "v",
            "status",
            T1,
        )
        assert out["spec"] == {"size": 1}
        assert out["status"] == {"ready": True}
        status_entry = entry(out, "controller")
        assert status_entry["subresource"] == "status"
        assert owned(out, "controller") == [".status.ready"]
        # A main-resource apply of the same field conflicts with the status manager.
        with pytest.raises(ApplyConflict, match='conflict with "controller" with subresource'):
            server_side_apply(
                out,
                widget({"size": 1}, status={"ready": False}),
                "user",
                False,
                schema,
                "v",
                None,
                T2,
            )

    def test_ignored_top_level_fields(self) -> None:
        schema = widget_view()
        out = server_side_apply(
            None,
            widget({"size": 1}, status={"ready": True}),
            "user",
            False,
            schema,
            "v",
            None,
            T0,
            ignored=("status",),
        )
        assert "status" not in out
        assert owned(out, "user") == [".spec.size"]

    def test_apply_entries_keep_one_entry_across_versions(self) -> None:
        schema = widget_view()
        live = server_side_apply(
            None, widget({"size": 1}), "m", False, schema, "example.com/v1", None, T0
        )
        out = server_side_apply(
            live, widget({"size": 2}), "m", False, schema, "example.com/v2", None, T1
        )
        assert len(entries(out)) == 1
        assert entries(out)[0]["apiVersion"] == "example.com/v2"


# --- kubectl's client-side apply interplay ------------------------------------------------------


class TestKubectlInterplay:
    def csa_object(self) -> dict[str, Any]:
        obj = configmap({"a": "1", "b": "2"})
        last = orjson.dumps(obj).decode() + "\n"
        obj["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: last}
        return update(None, obj, "kubectl-client-side-apply", now=T0)

    def test_server_side_apply_over_client_side_apply_is_allowed_for_kubectl(self) -> None:
        live = self.csa_object()
        out = apply_cm(live, configmap({"a": "1", "b": "3"}), "kubectl", now=T1)
        assert out["data"] == {"a": "1", "b": "3"}
        assert owned(out, "kubectl") == [".data.a", ".data.b"]
        last = orjson.loads(out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
        assert last["data"] == {"a": "1", "b": "3"}
        assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].endswith("\n")

    def test_other_managers_still_conflict(self) -> None:
        live = self.csa_object()
        with pytest.raises(ApplyConflict) as info:
            apply_cm(live, configmap({"b": "3"}), "someone", now=T1)
        assert info.value.conflicts == [("kubectl-client-side-apply", ".data.b")]

    def test_fields_changed_since_last_apply_still_conflict(self) -> None:
        live = self.csa_object()
        live = update(live, edited(live, b="edited"), "kubectl-client-side-apply", now=T1)
        with pytest.raises(ApplyConflict) as info:
            apply_cm(live, configmap({"a": "9", "b": "3"}), "kubectl", now=T2)
        assert info.value.conflicts == [("kubectl-client-side-apply", ".data.b")]

    def test_migration_patch_of_managed_fields_is_kept(self) -> None:
        # kubectl rewrites the client-side-apply entry into an Apply entry with a JSON patch.
        live = self.csa_object()
        migrated = copy.deepcopy(live)
        migrated["metadata"]["managedFields"] = [
            {
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": T1,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}},
            }
        ]
        out = update(live, migrated, "kubectl", now=T1)
        assert entries(out) == migrated["metadata"]["managedFields"]
        # The applier can now drop b without conflict, and b goes away.
        result = apply_cm(out, configmap({"a": "1"}), "kubectl", now=T2)
        assert result["data"] == {"a": "1"}


# --- non-apply writes -----------------------------------------------------------------------


class TestUpdates:
    def test_create_records_an_update_entry_with_new_maps(self) -> None:
        out = update(None, configmap({"a": "1"}, {"x": "y"}), "kubectl-create", now=T0)
        assert entries(out) == [
            {
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {".": {}, "f:a": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
                },
            }
        ]

    def test_create_owns_everything_even_over_client_entries(self) -> None:
        body = configmap({"a": "1"})
        body["metadata"]["managedFields"] = [
            {
                "manager": "stale",
                "operation": "Apply",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:a": {}}},
            }
        ]
        out = update(None, body, "creator", now=T0)
        assert [e["manager"] for e in entries(out)] == ["creator"]

    def test_update_changing_nothing_adds_no_entry(self) -> None:
        live = update(None, configmap({"a": "1"}), "creator", now=T0)
        out = update(live, live, "someone-else", now=T1)
        assert out == live

    def test_update_moves_ownership_and_drops_empty_entries(self) -> None:
        live = update(None, configmap({"a": "1"}), "creator", now=T0)
        out = update(live, edited(live, a="2"), "editor", now=T1)
        assert owned(out, "creator") == [".data"]
        assert owned(out, "editor") == [".data.a"]
        out = update(out, edited(out, a=None), "remover", now=T2)
        # Deleting a field takes it from its owners without giving the remover anything.
        assert [e["manager"] for e in entries(out)] == ["creator"]

    def test_same_manager_accumulates(self) -> None:
        live = update(None, configmap({"a": "1"}), "m", now=T0)
        out = update(live, edited(live, b="2"), "m", now=T1)
        assert len(entries(out)) == 1
        assert owned(out, "m") == [".data", ".data.a", ".data.b"]
        assert entry(out, "m")["time"] == T1

    def test_update_entries_are_per_api_version(self) -> None:
        schema = widget_view()
        live = update(None, widget({"size": 1}), "m", schema, "example.com/v1", now=T0)
        out = update(live, widget({"size": 2}), "m", schema, "example.com/v2", now=T1)
        versions = [(e["manager"], e["apiVersion"]) for e in entries(out)]
        assert versions == [("m", "example.com/v1"), ("m", "example.com/v2")]

    def test_entries_sorted_apply_first(self) -> None:
        live = update(None, configmap({"a": "1"}), "zz-creator", now=T0)
        live = apply_cm(live, configmap({"b": "1"}), "applier", now=T1)
        assert [e["operation"] for e in entries(live)] == ["Apply", "Update"]

    def test_client_written_managed_fields_are_kept(self) -> None:
        live = update(None, configmap({"a": "1"}), "creator", now=T0)
        mine = copy.deepcopy(live)
        mine["metadata"]["managedFields"][0]["manager"] = "renamed"
        out = update(live, mine, "writer", now=T1)
        assert [e["manager"] for e in entries(out)] == ["renamed"]

    def test_absent_or_unreadable_managed_fields_keep_the_stored_ones(self) -> None:
        live = update(None, configmap({"a": "1"}), "creator", now=T0)
        for value in (None, [{"manager": "x", "operation": "Bogus"}]):
            body = copy.deepcopy(live)
            if value is None:
                del body["metadata"]["managedFields"]
            else:
                body["metadata"]["managedFields"] = value
            out = update(live, body, "writer", now=T1)
            assert entries(out) == entries(live)

    @pytest.mark.parametrize("reset", [[], [{}]])
    def test_reset_drops_entries_and_stops_tracking(self, reset: list[Any]) -> None:
        live = update(None, configmap({"a": "1"}), "creator", now=T0)
        body = edited(live, b="2")
        body["metadata"]["managedFields"] = reset
        out = update(live, body, "writer", now=T1)
        assert "managedFields" not in out["metadata"]
        # An untracked object stays untracked through updates ...
        again = update(out, edited(out, c="3"), "writer", now=T2)
        assert "managedFields" not in again["metadata"]
        # ... until someone applies.
        applied = apply_cm(again, configmap({"d": "4"}), now=T3)
        assert [e["manager"] for e in entries(applied)] == ["kubectl"]

    def test_subresource_writes_ignore_client_managed_fields(self) -> None:
        schema = widget_view()
        live = update(None, widget({"size": 1}), "creator", schema, "v", now=T0)
        body = copy.deepcopy(live)
        body["status"] = {"phase": "Ready"}
        body["metadata"]["managedFields"] = []
        out = update(live, body, "controller", schema, "v", "status", now=T1)
        status = entry(out, "controller")
        assert status["subresource"] == "status"
        assert owned(out, "controller") == [".status", ".status.phase"]
        assert entry(out, "creator") == entry(live, "creator")

    def test_a_status_write_owns_its_changes_to_status_alone(self) -> None:
        schema = widget_view()
        live = update(None, widget({"size": 1}), "creator", schema, "v", now=T0)
        body = copy.deepcopy(live)
        body["status"] = {"phase": "Ready", "ready": True}
        live = update(live, body, "controller", schema, "v", "status", now=T1)
        assert owned(live, "controller") == [".status", ".status.phase", ".status.ready"]
        body = copy.deepcopy(live)
        body["status"] = {"phase": "Done"}
        body["spec"]["size"] = 3  # not this write's to own
        out = update(live, body, "other", schema, "v", "status", now=T2)
        assert owned(out, "other") == [".status.phase"]
        assert owned(out, "controller") == [".status"]
        assert owned(out, "creator") == owned(live, "creator")
        # A status write removing status altogether.
        body = copy.deepcopy(out)
        del body["status"]
        gone = update(out, body, "other", schema, "v", "status", now=T3)
        assert "controller" not in [e["manager"] for e in entries(gone)]
        assert "other" not in [e["manager"] for e in entries(gone)]

    def test_update_manager_count_is_capped(self) -> None:
        live = update(None, configmap({"k0": "v"}), "m0", now="2024-05-01T10:00:00Z")
        for i in range(1, 13):
            live = update(
                live, edited(live, **{f"k{i}": "v"}), f"m{i}", now=f"2024-05-01T10:00:{i:02}Z"
            )
        managers = [e["manager"] for e in entries(live)]
        assert len(managers) == 10
        assert "ancient-changes" in managers
        assert "m12" in managers
        ancient = FieldSet.from_fields_v1(entry(live, "ancient-changes")["fieldsV1"]).rendered()
        assert ".data.k0" in ancient
        assert ".data.k1" in ancient

    def test_deployment_update_of_one_container(self) -> None:
        schema = deploy_view()
        obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]
                    }
                }
            },
        }
        live = update(None, obj, "creator", schema, "apps/v1", now=T0)
        new = copy.deepcopy(live)
        new["spec"]["template"]["spec"]["containers"][1]["image"] = "2"
        out = update(live, new, "kubectl-set", schema, "apps/v1", now=T1)
        assert owned(out, "kubectl-set") == ['.spec.template.spec.containers[name="b"].image']
        assert '.spec.template.spec.containers[name="b"].image' not in owned(out, "creator")
        assert '.spec.template.spec.containers[name="b"].name' in owned(out, "creator")
