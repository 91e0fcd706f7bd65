"""@rbac rules -> ClusterRole/Role manifests, merged and ordered as controller-gen does."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubeforge._api.rbac import (
    RbacRule,
    normalize_rules,
    rbac,
    role_manifests,
    roles_yaml,
    rules_of,
    runtime_rules,
)


def rule(
    groups: str,
    resources: str = "",
    verbs: str = "",
    *,
    names: str = "",
    urls: str = "",
    namespace: str | None = None,
    role_name: str | None = None,
) -> RbacRule:
    """A rule written like a `+kubebuilder:rbac` marker: `;` separates list items."""

    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(";")) if text else ()

    return RbacRule(
        groups=tuple(g.strip('"') for g in split(groups)),
        resources=split(resources),
        verbs=split(verbs),
        resource_names=split(names),
        urls=split(urls),
        namespace=namespace,
        role_name=role_name,
    )


# controller-tools' pkg/rbac/testdata markers, in their order.
MARKERS = [
    rule("batch.io", "cronjobs", "get;watch;create"),
    rule("batch.io", "cronjobs/status", "get;update;patch"),
    rule("art", "jobs", "get"),
    rule("wave", "jobs", "get", namespace="zoo"),
    rule("batch;batch;batch", "jobs/status", "watch"),
    rule("batch;cron", "jobs/status", "create;get"),
    rule("art", "jobs", "get", namespace="zoo"),
    rule("cron;batch", "jobs/status", "get;create"),
    rule("batch", "jobs/status", "watch;watch"),
    rule("art", "jobs", "get", namespace="park"),
    rule("batch.io", "cronjobs", "get;watch", names="foo;bar;baz"),
    rule("deduplicate-verbs", "some", "get;list"),
    rule("deduplicate-verbs", "some", "get"),
    rule("deduplicate-verbs", "some", "list"),
    rule("deduplicate-resources", "one", "create"),
    rule("deduplicate-resources", "two", "create"),
    rule("deduplicate-resources", "three", "create"),
    rule("deduplicate-groups1", "foo", "patch"),
    rule("deduplicate-groups2", "foo", "patch"),
    rule("deduplicate-groups3", "foo", "patch"),
    rule("deduplicate-all", "foo;bar", "get;list"),
    rule("deduplicate-all", "foo", "get"),
    rule("deduplicate-all", "bar", "list"),
    rule("deduplicate-all-group", "foo;bar", "get;list"),
    rule("not-deduplicate-resources", "some", "get"),
    rule("not-deduplicate-resources", "another", "list"),
    rule("not-deduplicate-groups1", "some", "get"),
    rule("not-deduplicate-groups2", "some", "list"),
    rule("", urls="/url-to-duplicate", verbs="get"),
    rule("", urls="/another/url-to-duplicate", verbs="get"),
    rule("core", "deduplicate", "list"),
    rule('""', "me", "list"),
    rule('core;"";some-other-to-deduplicate-with-core', "me", "list;get"),
]

# controller-tools' pkg/rbac/testdata/role.yaml for those markers.
EXPECTED = """\
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- nonResourceURLs:
  - /another/url-to-duplicate
  - /url-to-duplicate
  verbs:
  - get
- apiGroups:
  - ""
  resources:
  - deduplicate
  - me
  verbs:
  - list
- apiGroups:
  - ""
  - some-other-to-deduplicate-with-core
  resources:
  - me
  verbs:
  - get
  - list
- apiGroups:
  - art
  resources:
  - jobs
  verbs:
  - get
- apiGroups:
  - batch
  resources:
  - jobs/status
  verbs:
  - watch
- apiGroups:
  - batch
  - cron
  resources:
  - jobs/status
  verbs:
  - create
  - get
- apiGroups:
  - batch.io
  resources:
  - cronjobs
  verbs:
  - create
  - get
  - watch
- apiGroups:
  - batch.io
  resourceNames:
  - bar
  - baz
  - foo
  resources:
  - cronjobs
  verbs:
  - get
  - watch
- apiGroups:
  - batch.io
  resources:
  - cronjobs/status
  verbs:
  - get
  - patch
  - update
- apiGroups:
  - deduplicate-all
  - deduplicate-all-group
  resources:
  - bar
  - foo
  verbs:
  - get
  - list
- apiGroups:
  - deduplicate-groups1
  - deduplicate-groups2
  - deduplicate-groups3
  resources:
  - foo
  verbs:
  - patch
- apiGroups:
  - deduplicate-resources
  resources:
  - one
  - three
  - two
  verbs:
  - create
- apiGroups:
  - deduplicate-verbs
  resources:
  - some
  verbs:
  - get
  - list
- apiGroups:
  - not-deduplicate-groups1
  - not-deduplicate-resources
  resources:
  - some
  verbs:
  - get
- apiGroups:
  - not-deduplicate-groups2
  resources:
  - some
  verbs:
  - list
- apiGroups:
  - not-deduplicate-resources
  resources:
  - another
  verbs:
  - list
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: manager-role
  namespace: park
rules:
- apiGroups:
  - art
  resources:
  - jobs
  verbs:
  - get
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: manager-role
  namespace: zoo
rules:
- apiGroups:
  - art
  - wave
  resources:
  - jobs
  verbs:
  - get
"""


def test_controller_gen_testdata_manifests() -> None:
    assert role_manifests(MARKERS) == list(yaml.safe_load_all(EXPECTED))


def test_controller_gen_testdata_yaml_text() -> None:
    assert roles_yaml(role_manifests(MARKERS)) == EXPECTED


def test_output_does_not_depend_on_rule_order() -> None:
    expected = role_manifests(MARKERS)
    assert role_manifests(list(reversed(MARKERS))) == expected
    assert role_manifests(MARKERS[1::2] + MARKERS[::2]) == expected


def test_a_star_verb_replaces_the_others_after_merging() -> None:
    rules = [
        rule("deduplicate-groups4", "xyz", "get;update;patch"),
        rule("deduplicate-groups4", "xyz", "*"),
        rule("deduplicate-groups5", "abc", "get;update;patch;create", namespace="here"),
        rule("deduplicate-groups5", "abc", "*", namespace="here"),
    ]
    assert role_manifests(rules) == [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "manager-role"},
            "rules": [{"apiGroups": ["deduplicate-groups4"], "resources": ["xyz"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "manager-role", "namespace": "here"},
            "rules": [{"apiGroups": ["deduplicate-groups5"], "resources": ["abc"], "verbs": ["*"]}],
        },
    ]


def test_star_is_applied_after_resources_merge() -> None:
    # controller-gen merges on the verb sets first: {*, get} and {*} stay apart.
    policy = normalize_rules([rule("apps", "a", "*;get"), rule("apps", "b", "*")])
    assert policy == [
        {"apiGroups": ["apps"], "resources": ["a"], "verbs": ["*"]},
        {"apiGroups": ["apps"], "resources": ["b"], "verbs": ["*"]},
    ]


def test_roles_are_ordered_by_namespace_then_name() -> None:
    rules = [
        rule("apps", "deployments", "get;list;watch;update;patch", namespace="infrastructure"),
        rule("", "secrets", "get;list;watch", namespace="users"),
        rule("", "configmaps", "get", namespace="users", role_name="config-reader"),
        rule("", "pods", "get", role_name="a-pod-reader"),
        rule("", "pods", "list"),
    ]
    heads = [
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"])
        for m in role_manifests(rules)
    ]
    assert heads == [
        ("ClusterRole", None, "a-pod-reader"),
        ("ClusterRole", None, "manager-role"),
        ("Role", "infrastructure", "manager-role"),
        ("Role", "users", "config-reader"),
        ("Role", "users", "manager-role"),
    ]
    infrastructure = role_manifests(rules)[2]
    assert infrastructure["rules"] == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "verbs": ["get", "list", "patch", "update", "watch"],
        }
    ]


def test_role_name_default_is_configurable() -> None:
    [role] = role_manifests([rule("", "pods", "get")], role_name="my-role")
    assert role["metadata"] == {"name": "my-role"}


def test_no_rules_no_roles() -> None:
    assert role_manifests([]) == []
    assert roles_yaml([]) == ""


def test_runtime_rules_merge_like_any_other() -> None:
    [role] = role_manifests(runtime_rules([("", "configmaps"), ("apps", "deployments")]))
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
    ]


def test_a_sharded_kind_may_also_be_patched() -> None:
    # The sharder labels the ring's objects; a shard removes the labels of a drained one.
    rules = runtime_rules([("", "configmaps"), ("", "secrets")], [("", "configmaps")])
    [role] = role_manifests(rules)
    assert role["rules"][0] == {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "patch", "watch"],
    }
    assert role["rules"][1] == {
        "apiGroups": [""],
        "resources": ["secrets"],
        "verbs": ["get", "list", "watch"],
    }


# the decorator ------------------------------------------------------------------------------


def test_decorator_stacks_in_source_order() -> None:
    @rbac(groups=["apps"], resources=["deployments"], verbs=["get", "list", "watch"])
    @rbac(resources="pods", verbs="get")
    @rbac(urls=["/metrics"], verbs=["get"])
    class Reconciler:
        pass

    assert rules_of(Reconciler) == (
        RbacRule(("apps",), ("deployments",), ("get", "list", "watch")),
        RbacRule(("",), ("pods",), ("get",)),
        RbacRule((), (), ("get",), urls=("/metrics",)),
    )


def test_decorated_subclass_keeps_its_bases_rules() -> None:
    @rbac(resources=["pods"], verbs=["get"])
    class Base:
        pass

    @rbac(groups="apps", resources="deployments/status", verbs=["update"], namespace="ops")
    class Child(Base):
        pass

    class Plain(Base):
        pass

    assert rules_of(Base) == (RbacRule(("",), ("pods",), ("get",)),)
    assert rules_of(Child) == (
        RbacRule(("apps",), ("deployments/status",), ("update",), namespace="ops"),
        RbacRule(("",), ("pods",), ("get",)),
    )
    assert rules_of(Plain) == rules_of(Base)
    assert rules_of(object) == ()


def test_decorator_keeps_resource_names_and_role_name() -> None:
    @rbac(resources=["configmaps"], resource_names=["a", "b"], verbs=["get"], role_name="x")
    class Reconciler:
        pass

    [only] = rules_of(Reconciler)
    assert only.resource_names == ("a", "b")
    assert only.role_name == "x"
    [role] = role_manifests(rules_of(Reconciler))
    assert role["metadata"]["name"] == "x"
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resourceNames": ["a", "b"],
            "resources": ["configmaps"],
            "verbs": ["get"],
        }
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resources": ["pods"], "verbs": []}, "at least one verb"),
        ({"verbs": ["get"]}, "needs resources"),
        ({"resources": ["pods"], "urls": ["/x"], "verbs": ["get"]}, "not both"),
        ({"urls": ["/x"], "verbs": ["get"], "namespace": "ns"}, "cluster role"),
        ({"groups": [], "resources": ["pods"], "verbs": ["get"]}, "at least one group"),
    ],
)
def test_decorator_rejects_rules_the_api_server_would(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rbac(**kwargs)


def test_decorator_rejects_non_string_items() -> None:
    with pytest.raises(TypeError, match="strings"):
        rbac(resources=["pods", 3], verbs=["get"])  # type: ignore[list-item]
