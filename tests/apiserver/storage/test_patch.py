"""JSON patch, merge patch and strategic merge patch against the built-in schemas.

Expected strategic-merge results were checked against kubectl's own implementation
(`kubectl patch --local --type strategic`), including its list ordering.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
from typing import Any

import orjson
import pytest

from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._apiserver.storage.patch import (
    MAX_JSON_PATCH_OPERATIONS,
    PatchDecodeError,
    PatchError,
    PatchTooLarge,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    json_copy,
    json_equal,
)


@functools.cache
def _defs() -> dict[str, Any]:
    path = importlib.resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema/v1.33.0-local/_definitions.json"
    )
    defs: dict[str, Any] = orjson.loads(path.read_bytes())["$defs"]
    return defs


def view(definition: str) -> SchemaView:
    return SchemaView({"$ref": f"#/$defs/{definition}"}, _defs())


DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"


# --- JSON patch --------------------------------------------------------------------------------


class TestJsonPatch:
    DOC: dict[str, Any] = {"a": {"b": [1, 2, 3], "c": "x"}, "m~n": 1, "s/t": 2}

    def apply(self, ops: list[dict[str, Any]]) -> Any:
        return apply_json_patch(self.DOC, ops)

    def test_add_to_object_and_replace_existing_key(self) -> None:
        out = self.apply([{"op": "add", "path": "/a/d", "value": 1}])
        assert out["a"]["d"] == 1
        out = self.apply([{"op": "add", "path": "/a/c", "value": "y"}])
        assert out["a"]["c"] == "y"

    def test_add_into_array_by_index_and_dash(self) -> None:
        out = self.apply(
            [
                {"op": "add", "path": "/a/b/0", "value": 0},
                {"op": "add", "path": "/a/b/-", "value": 4},
                {"op": "add", "path": "/a/b/5", "value": 5},
            ]
        )
        assert out["a"]["b"] == [0, 1, 2, 3, 4, 5]

    def test_add_index_out_of_bounds_fails(self) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "add", "path": "/a/b/4", "value": 9}])

    @pytest.mark.parametrize("index", ["01", "-1", "x", ""])
    def test_bad_array_indexes_fail(self, index: str) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "replace", "path": f"/a/b/{index}", "value": 9}])

    def test_escapes(self) -> None:
        out = self.apply(
            [
                {"op": "replace", "path": "/m~0n", "value": 10},
                {"op": "remove", "path": "/s~1t"},
            ]
        )
        assert out["m~n"] == 10
        assert "s/t" not in out

    def test_invalid_escape_fails(self) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "remove", "path": "/m~2n"}])

    def test_remove_and_replace_need_an_existing_target(self) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "remove", "path": "/a/zz"}])
        with pytest.raises(PatchError):
            self.apply([{"op": "replace", "path": "/a/zz", "value": 1}])
        with pytest.raises(PatchError):
            self.apply([{"op": "remove", "path": "/a/b/3"}])

    def test_move_and_copy(self) -> None:
        out = self.apply([{"op": "move", "from": "/a/c", "path": "/c"}])
        assert out["c"] == "x"
        assert "c" not in out["a"]
        out = self.apply([{"op": "copy", "from": "/a/b", "path": "/b"}])
        out["b"].append(4)
        assert out["a"]["b"] == [1, 2, 3]

    def test_move_into_own_child_fails(self) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "move", "from": "/a", "path": "/a/x"}])

    def test_move_from_missing_fails(self) -> None:
        with pytest.raises(PatchError):
            self.apply([{"op": "move", "from": "/nope", "path": "/x"}])

    def test_test_uses_json_equality(self) -> None:
        self.apply([{"op": "test", "path": "/a/b", "value": [1.0, 2, 3]}])
        self.apply([{"op": "test", "path": "/a", "value": {"c": "x", "b": [1, 2, 3]}}])
        with pytest.raises(PatchError):
            self.apply([{"op": "test", "path": "/m~0n", "value": True}])
        with pytest.raises(PatchError):
            self.apply([{"op": "test", "path": "/a/c", "value": "y"}])
        with pytest.raises(PatchError):
            self.apply([{"op": "test", "path": "/missing", "value": None}])

    def test_kopf_resource_version_precondition(self) -> None:
        doc = {"metadata": {"resourceVersion": "5", "finalizers": ["a"]}}
        ops = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "b"},
        ]
        assert apply_json_patch(doc, ops)["metadata"]["finalizers"] == ["a", "b"]
        ops[0]["value"] = "4"
        with pytest.raises(PatchError):
            apply_json_patch(doc, ops)

    def test_whole_document(self) -> None:
        assert self.apply([{"op": "replace", "path": "", "value": [1]}]) == [1]
        with pytest.raises(PatchError):
            self.apply([{"op": "remove", "path": ""}])

    def test_failure_is_atomic_for_the_caller(self) -> None:
        before = copy.deepcopy(self.DOC)
        with pytest.raises(PatchError):
            self.apply(
                [
                    {"op": "add", "path": "/a/d", "value": 1},
                    {"op": "test", "path": "/a/c", "value": "nope"},
                ]
            )
        assert before == self.DOC

    def test_input_not_mutated_and_values_not_aliased(self) -> None:
        before = copy.deepcopy(self.DOC)
        value = {"k": [1]}
        ops = [{"op": "add", "path": "/v", "value": value}]
        out = self.apply(ops)
        out["v"]["k"].append(2)
        assert value == {"k": [1]}
        assert before == self.DOC

    @pytest.mark.parametrize(
        "op",
        [
            {"op": "add", "path": "/x"},
            {"op": "bogus", "path": "/x"},
            {"path": "/x", "value": 1},
            {"op": "add", "value": 1},
            {"op": "add", "path": "x", "value": 1},
            {"op": "add", "path": 3, "value": 1},
        ],
    )
    def test_malformed_operations_fail(self, op: dict[str, Any]) -> None:
        with pytest.raises(PatchError) as info:
            self.apply([op])
        assert info.value.code == 422

    def test_body_must_be_a_list_of_objects(self) -> None:
        with pytest.raises(PatchDecodeError) as info:
            apply_json_patch({}, {"op": "add"})
        assert info.value.code == 400
        with pytest.raises(PatchDecodeError):
            apply_json_patch({}, ["add"])

    def test_operation_limit(self) -> None:
        ops = [{"op": "test", "path": "", "value": {}}] * MAX_JSON_PATCH_OPERATIONS
        assert apply_json_patch({}, ops) == {}
        with pytest.raises(PatchTooLarge) as info:
            apply_json_patch({}, [*ops, ops[0]])
        assert info.value.code == 413
        assert "10000, got 10001" in str(info.value)
        assert isinstance(info.value, PatchError)


def test_json_equal_distinguishes_booleans_from_numbers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal([0], [False])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert json_equal({"a": [None, "x"]}, {"a": [None, "x"]})


# --- merge patch ---------------------------------------------------------------------------------


class TestMergePatch:
    def test_rfc7386_examples(self) -> None:
        doc = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
               "tags": ["example", "sample"], "content": "This will be unchanged"}  # fmt: skip
        patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890",
                 "author": {"familyName": None}, "tags": ["example"]}  # fmt: skip
        assert apply_merge_patch(doc, patch) == {
            "title": "Hello!",
            "author": {"givenName": "John"},
            "tags": ["example"],
            "content": "This will be unchanged",
            "phoneNumber": "+01-123-456-7890",
        }

    @pytest.mark.parametrize(
        ("doc", "patch", "expected"),
        [
            ({"a": "b"}, {"a": "c"}, {"a": "c"}),
            ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
            ({"a": "b"}, {"a": None}, {}),
            ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
            (["a", "b"], {"a": "c"}, {"a": "c"}),
            ({"a": "foo"}, None, None),
            ({"a": "foo"}, "bar", "bar"),
            ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
            ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
            ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        ],
    )
    def test_rfc7386_table(self, doc: Any, patch: Any, expected: Any) -> None:
        assert apply_merge_patch(doc, patch) == expected

    def test_no_mutation_or_aliasing(self) -> None:
        doc = {"a": {"b": 1}, "l": [1]}
        patch = {"a": {"c": [1, 2]}, "l": [2]}
        out = apply_merge_patch(doc, patch)
        out["a"]["c"].append(3)
        out["a"]["b"] = 9
        assert doc == {"a": {"b": 1}, "l": [1]}
        assert patch == {"a": {"c": [1, 2]}, "l": [2]}


# --- strategic merge patch ---------------------------------------------------------------------


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "labels": {"a": "1"},
            "finalizers": ["f1", "f2"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "X", "name": "o1", "uid": "u1"},
                {"apiVersion": "v1", "kind": "X", "name": "o2", "uid": "u2"},
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "image": "a",
                            "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}],
                            "ports": [
                                {"containerPort": 80, "protocol": "TCP"},
                                {"containerPort": 81},
                            ],
                            "args": ["x", "y"],
                        },
                        {"name": "b", "image": "b"},
                    ],
                    "volumes": [
                        {"name": "v1", "emptyDir": {}},
                        {"name": "v2", "configMap": {"name": "cm"}},
                    ],
                    "tolerations": [{"key": "k"}],
                },
            },
        },
    }


def smp(patch: dict[str, Any], doc: dict[str, Any] | None = None) -> dict[str, Any]:
    return apply_strategic_merge_patch(doc or deployment(), patch, view(DEPLOYMENT))


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def template(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


class TestStrategicMergePatch:
    def test_kubectl_set_image(self) -> None:
        # What `kubectl set image deployment/d b=nginx:2` sends.
        out = smp(
            template(
                {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"image": "nginx:2", "name": "b"}],
                }
            )
        )
        containers = pod_spec(out)["containers"]
        assert names(containers) == ["a", "b"]
        assert containers[1] == {"name": "b", "image": "nginx:2"}
        assert containers[0] == pod_spec(deployment())["containers"][0]

    def test_containers_merge_by_name_keeps_the_rest(self) -> None:
        out = smp(template({"containers": [{"name": "a", "image": "new"}]}))
        a = pod_spec(out)["containers"][0]
        assert a["image"] == "new"
        assert a["args"] == ["x", "y"]
        assert names(a["env"]) == ["E1", "E2"]

    def test_new_item_without_order_goes_first_like_upstream(self) -> None:
        out = smp(template({"containers": [{"name": "c", "image": "c"}]}))
        assert names(pod_spec(out)["containers"]) == ["c", "a", "b"]

    def test_set_element_order_places_new_items(self) -> None:
        order = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
        out = smp(
            template(
                {"$setElementOrder/containers": order, "containers": [{"name": "c", "image": "c"}]}
            )
        )
        assert names(pod_spec(out)["containers"]) == ["a", "b", "c"]

    def test_set_element_order_reorders(self) -> None:
        out = smp(template({"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}))
        assert names(pod_spec(out)["containers"]) == ["b", "a"]

    def test_set_element_order_must_agree_with_the_patch_list(self) -> None:
        with pytest.raises(PatchError):
            smp(
                template(
                    {
                        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                        "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}],
                    }
                )
            )

    def test_env_merges_by_name(self) -> None:
        out = smp(
            template(
                {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "E3", "value": "3"}, {"name": "E1", "value": "9"}],
                        }
                    ]
                }
            )
        )
        env = pod_spec(out)["containers"][0]["env"]
        assert env == [
            {"name": "E3", "value": "3"},
            {"name": "E1", "value": "9"},
            {"name": "E2", "value": "2"},
        ]

    def test_ports_merge_by_container_port(self) -> None:
        out = smp(
            template({"containers": [{"name": "a", "ports": [{"containerPort": 81, "name": "h"}]}]})
        )
        ports = pod_spec(out)["containers"][0]["ports"]
        assert ports == [
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 81, "name": "h"},
        ]

    def test_lists_without_strategy_are_replaced(self) -> None:
        out = smp(
            template({"containers": [{"name": "a", "args": ["z"]}], "tolerations": [{"key": "t"}]})
        )
        assert pod_spec(out)["containers"][0]["args"] == ["z"]
        assert pod_spec(out)["tolerations"] == [{"key": "t"}]

    def test_delete_container_directive(self) -> None:
        out = smp(template({"containers": [{"name": "a", "$patch": "delete"}]}))
        assert names(pod_spec(out)["containers"]) == ["b"]

    def test_delete_directive_needs_the_merge_key(self) -> None:
        with pytest.raises(PatchError):
            smp(template({"containers": [{"$patch": "delete", "image": "a"}]}))

    def test_merge_key_required_for_list_items(self) -> None:
        with pytest.raises(PatchError):
            smp(template({"containers": [{"image": "x"}]}))

    def test_replace_element_replaces_the_whole_list(self) -> None:
        out = smp(template({"containers": [{"name": "z", "image": "z"}, {"$patch": "replace"}]}))
        assert pod_spec(out)["containers"] == [{"name": "z", "image": "z"}]

    def test_finalizers_are_a_set(self) -> None:
        out = smp({"metadata": {"finalizers": ["f2", "f3"]}})
        assert out["metadata"]["finalizers"] == ["f1", "f2", "f3"]
        out = smp({"metadata": {"finalizers": ["f3"]}})
        assert out["metadata"]["finalizers"] == ["f3", "f1", "f2"]

    def test_finalizers_with_order_and_deletion(self) -> None:
        out = smp(
            {
                "metadata": {
                    "$setElementOrder/finalizers": ["f2", "f3"],
                    "$deleteFromPrimitiveList/finalizers": ["f1"],
                    "finalizers": ["f3"],
                }
            }
        )
        assert out["metadata"]["finalizers"] == ["f2", "f3"]

    def test_null_deletes_a_list(self) -> None:
        out = smp({"metadata": {"finalizers": None}})
        assert "finalizers" not in out["metadata"]

    def test_owner_references_merge_by_uid(self) -> None:
        out = smp(
            {
                "metadata": {
                    "ownerReferences": [
                        {"uid": "u2", "name": "renamed"},
                        {"uid": "u3", "name": "o3", "apiVersion": "v1", "kind": "X"},
                    ]
                }
            }
        )
        refs = out["metadata"]["ownerReferences"]
        assert names(refs, "uid") == ["u1", "u2", "u3"]
        assert refs[1]["name"] == "renamed"
        assert refs[1]["kind"] == "X"
        out = smp({"metadata": {"ownerReferences": [{"uid": "u1", "$patch": "delete"}]}})
        assert names(out["metadata"]["ownerReferences"], "uid") == ["u2"]

    def test_volumes_retain_keys(self) -> None:
        out = smp(
            template(
                {
                    "$setElementOrder/volumes": [{"name": "v1"}, {"name": "v2"}],
                    "volumes": [
                        {
                            "name": "v2",
                            "$retainKeys": ["emptyDir", "name"],
                            "emptyDir": {},
                            "configMap": None,
                        }
                    ],
                }
            )
        )
        assert pod_spec(out)["volumes"] == [
            {"name": "v1", "emptyDir": {}},
            {"name": "v2", "emptyDir": {}},
        ]

    def test_strategy_retain_keys_clears_other_keys(self) -> None:
        out = smp({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
        assert out["spec"]["strategy"] == {"type": "Recreate"}

    def test_retain_keys_must_list_patched_keys(self) -> None:
        with pytest.raises(PatchDecodeError):
            smp({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}})
        with pytest.raises(PatchDecodeError):
            smp({"spec": {"strategy": {"$retainKeys": "type"}}})

    def test_map_directives(self) -> None:
        out = smp({"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}})
        assert out["spec"]["strategy"] == {"type": "Recreate"}
        out = smp({"spec": {"strategy": {"$patch": "delete"}}})
        assert out["spec"]["strategy"] == {}
        out = smp({"spec": {"strategy": {"$patch": "merge", "type": "Recreate"}}})
        assert out["spec"]["strategy"] == {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
        with pytest.raises(PatchError):
            smp({"spec": {"strategy": {"$patch": "bogus"}}})

    def test_kubectl_client_side_apply_patch(self) -> None:
        # The shape of a three-way patch computed by `kubectl apply` after a container and an
        # env var were removed from the manifest.
        annotation = '{"kind":"Deployment"}\n'
        patch = {
            "metadata": {
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": annotation}
            },
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "a"}],
                        "containers": [
                            {"name": "b", "$patch": "delete"},
                            {
                                "name": "a",
                                "$setElementOrder/env": [{"name": "E2"}],
                                "env": [{"name": "E1", "$patch": "delete"}],
                            },
                        ],
                    }
                }
            },
        }
        out = smp(patch)
        containers = pod_spec(out)["containers"]
        assert names(containers) == ["a"]
        assert containers[0]["env"] == [{"name": "E2", "value": "2"}]
        assert out["metadata"]["annotations"] == {
            "kubectl.kubernetes.io/last-applied-configuration": annotation
        }

    def test_no_directive_leaks_into_new_content(self) -> None:
        out = smp(
            template(
                {
                    "securityContext": {
                        "runAsUser": None,
                        "seLinuxOptions": {"$patch": "delete"},
                        "fsGroup": 1,
                    },
                    "imagePullSecrets": [{"name": "a"}, {"name": "b", "$patch": "delete"}],
                    "containers": [
                        {"name": "c", "env": [{"name": "X", "$patch": "delete"}, {"name": "Y"}]}
                    ],
                }
            )
        )
        spec = pod_spec(out)
        assert spec["securityContext"] == {"fsGroup": 1}
        assert spec["imagePullSecrets"] == [{"name": "a"}]
        assert spec["containers"][0] == {"name": "c", "env": [{"name": "Y"}]}
        assert b"$" not in orjson.dumps(out)

    def test_unknown_fields_merge_like_a_merge_patch(self) -> None:
        doc = deployment()
        doc["spec"]["extra"] = {"keep": 1, "list": [1, 2], "gone": 1}
        out = smp({"spec": {"extra": {"list": [3], "gone": None, "new": {"x": None}}}}, doc)
        assert out["spec"]["extra"] == {"keep": 1, "list": [3], "new": {}}

    def test_type_change_replaces(self) -> None:
        out = smp({"spec": {"replicas": {"x": 1}}})
        assert out["spec"]["replicas"] == {"x": 1}

    def test_inputs_are_not_mutated(self) -> None:
        doc = deployment()
        patch = template({"containers": [{"name": "a", "env": [{"name": "E9", "value": "9"}]}]})
        before_doc, before_patch = copy.deepcopy(doc), copy.deepcopy(patch)
        out = smp(patch, doc)
        pod_spec(out)["containers"][0]["env"][0]["value"] = "mutated"
        assert doc == before_doc
        assert patch == before_patch

    def test_patch_must_be_an_object(self) -> None:
        with pytest.raises(PatchDecodeError):
            apply_strategic_merge_patch({}, [], view(DEPLOYMENT))  # type: ignore[arg-type]

    def test_directive_key_format(self) -> None:
        with pytest.raises(PatchDecodeError):
            smp({"metadata": {"$deleteFromPrimitiveListfinalizers": ["f1"]}})
        with pytest.raises(PatchDecodeError):
            smp({"metadata": {"$setElementOrder/finalizers": "f1"}})

    def test_service_ports_and_config_map_data(self) -> None:
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]},
        }
        out = apply_strategic_merge_patch(
            svc,
            {"spec": {"ports": [{"port": 443, "name": "https"}]}},
            view("io.k8s.api.core.v1.Service"),
        )
        assert out["spec"]["ports"] == [
            {"port": 80, "targetPort": 8080},
            {"port": 443, "name": "https"},
        ]
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {"a": "1"},
        }
        out = apply_strategic_merge_patch(
            cm, {"data": {"a": None, "b": "2"}}, view("io.k8s.api.core.v1.ConfigMap")
        )
        assert out["data"] == {"b": "2"}


def test_json_copy_is_deep_even_beyond_64_bit_integers() -> None:
    for doc in ({"a": [1, {"b": 2}]}, {"big": [2**70]}):
        copied = json_copy(doc)
        assert copied == doc
        copied[next(iter(copied))].append("x")
        assert "x" not in doc[next(iter(doc))]
