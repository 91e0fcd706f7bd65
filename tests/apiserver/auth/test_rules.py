"""RBAC rule semantics: matching requests, and one rule set covering another."""

from __future__ import annotations

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.authenticator import EXTRA_SPACE_WARNING, bearer_token
from kubeforge._apiserver.auth.forbidden import forbidden
from kubeforge._apiserver.auth.rules import Rule, compact, rule_string, uncovered
from kubeforge._apiserver.request.user import UserInfo

USER = UserInfo("u", groups=("system:authenticated",))


def request(verb: str, resource: str, sub: str = "", name: str = "", group: str = "") -> Attributes:
    return Attributes(USER, verb, True, group, "v1", resource, sub, "ns", name)


def path(verb: str, url: str) -> Attributes:
    return Attributes(USER, verb, False, path=url)


def test_resources_subresources_and_wildcards() -> None:
    pods = Rule(("get",), ("",), ("pods",))
    assert pods.allows(request("get", "pods", name="p"))
    assert not pods.allows(request("get", "pods", "log", "p"))
    assert not pods.allows(request("list", "pods"))
    assert not pods.allows(request("get", "pods", group="apps"))
    scale = Rule(("*",), ("*",), ("*/scale",))
    assert scale.allows(request("update", "deployments", "scale", "d", "apps"))
    assert not scale.allows(request("update", "deployments", "", "d", "apps"))
    everything = Rule(("*",), ("*",), ("*",))
    assert everything.allows(request("delete", "pods", "status", "p"))


def test_resource_names_never_match_requests_without_a_name() -> None:
    one = Rule(("get", "list"), ("",), ("configmaps",), ("settings",))
    assert one.allows(request("get", "configmaps", name="settings"))
    assert not one.allows(request("get", "configmaps", name="other"))
    assert not one.allows(request("list", "configmaps"))


def test_non_resource_urls_match_exactly_or_by_a_trailing_star() -> None:
    rule = Rule(("get",), urls=("/healthz/*", "/version"))
    assert rule.allows(path("get", "/healthz/etcd"))
    assert rule.allows(path("get", "/version"))
    assert not rule.allows(path("get", "/healthz"))
    assert not rule.allows(path("post", "/version"))
    assert not Rule(("get",), urls=("/apis/*",)).allows(path("get", "/apis"))


def test_coverage_breaks_rules_into_single_permissions() -> None:
    owner = [Rule(("get", "list"), ("",), ("pods", "secrets")), Rule(("*",), ("apps",), ("*",))]
    assert uncovered(owner, [Rule(("get",), ("",), ("pods",), ("a",))]) == []
    assert uncovered(owner, [Rule(("create",), ("apps",), ("deployments/scale",))]) == []
    missing = uncovered(owner, [Rule(("get", "delete"), ("",), ("pods", "configmaps"))])
    assert sorted(rule_string(r) for r in compact(missing)) == [
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "delete"]}',
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}',
    ]
    # A wildcard is only covered by a wildcard.
    assert uncovered(owner, [Rule(("*",), ("",), ("pods",))])
    assert uncovered([Rule(("get",), urls=("/logs/*",))], [Rule(("get",), urls=("/logs/a",))]) == []


def test_forbidden_messages_are_kube_apiservers() -> None:
    namespaced = forbidden(request("get", "pods", "log", "p"))
    assert namespaced.message == (
        'pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the '
        'namespace "ns"'
    )
    assert namespaced.details == {"name": "p", "kind": "pods"}
    cluster = forbidden(Attributes(USER, "list", True, "apps", "v1", "deployments"))
    assert cluster.message == (
        'deployments.apps is forbidden: User "u" cannot list resource "deployments" in API '
        'group "apps" at the cluster scope'
    )
    url = forbidden(path("get", "/a<b>"), "RBAC: x")
    assert url.message == 'forbidden: User "u" cannot get path "/a&lt;b&gt;": RBAC: x'


def test_bearer_tokens_are_read_as_the_apiserver_reads_them() -> None:
    warnings: list[str] = []
    assert bearer_token("Bearer abc", warnings) == "abc"
    assert bearer_token("bEaReR abc trailing", warnings) == "abc"
    assert bearer_token("Basic abc", warnings) is None
    assert warnings == []
    assert bearer_token("Bearer  abc", warnings) is None
    assert warnings == [EXTRA_SPACE_WARNING]
