"""The end-to-end checks `create webhook` adds to test/e2e/test_webhooks.py: named for each
kind's webhooks, each check of the webhook configurations once however many kinds have
webhooks, and nothing written when the marker is gone."""

from __future__ import annotations

import ast

from kubeforge._scaffold.e2e import MARKER, add_checks, webhook_checks
from kubeforge._scaffold.names import ResourceNames
from kubeforge._scaffold.render import render


def values(names: ResourceNames) -> dict[str, str]:
    return {
        "header": "",
        "project_name": "fleet",
        "qualified_group": names.qualified_group,
        "version": names.version,
        "kind": names.kind,
        "lower_kind": names.module,
        "plural": names.plural,
        "var": names.module,
    }


def kind(name: str, version: str = "v1") -> ResourceNames:
    return ResourceNames.of(group="ship", domain="example.com", version=version, kind=name)


def functions_of(text: str) -> list[str]:
    return [
        node.name
        for node in ast.parse(text).body
        if isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("test_")
    ]


def test_each_kinds_webhooks_get_their_checks_and_the_configurations_theirs_once() -> None:
    frigate, ferry = kind("Frigate"), kind("Ferry", "v2")
    text = render("webhook/e2e_test.py", values(frigate))
    for names, spokes in ((frigate, ["v2"]), (ferry, [])):
        checks = webhook_checks(
            names, values(names), defaulting=True, validation=True, spokes=spokes
        )
        changed = add_checks(text, checks)
        assert changed is not None
        text = changed
    # Run again, nothing changes.
    again = webhook_checks(frigate, values(frigate), defaulting=True, validation=True, spokes=[])
    assert add_checks(text, again) == text

    assert functions_of(text) == [
        "test_cert_manager_issued_the_webhook_serving_certificate",
        "test_the_webhook_service_leads_to_the_manager",
        "test_the_ca_is_injected_into_the_mutating_webhooks",
        "test_the_frigate_v1_defaulter_admits_the_sample",
        "test_the_frigate_v1_defaulter_refuses_an_unreadable_object",
        "test_the_ca_is_injected_into_the_validating_webhooks",
        "test_the_frigate_v1_validator_admits_the_sample",
        "test_the_frigate_converts_between_its_versions_through_the_webhook",
        "test_the_ferry_v2_defaulter_admits_the_sample",
        "test_the_ferry_v2_defaulter_refuses_an_unreadable_object",
        "test_the_ferry_v2_validator_admits_the_sample",
    ]
    # Each check names its kind's webhook paths, webhook names and samples as
    # `kubeforge manifests` and `create api` write them.
    assert 'path = "/mutate-ship-example-com-v2-ferry"' in text
    assert 'path = "/validate-ship-example-com-v1-frigate"' in text
    assert 'admission webhook "mferry-v2.kb.io" denied the request' in text
    assert 'await sample(cluster, "ship_v2_ferry.yaml", "ferry-defaulted")' in text
    assert 'for version in ("v2",):' in text
    assert text.rstrip().endswith(MARKER)


def test_a_conversion_to_several_versions_reads_each() -> None:
    frigate = kind("Frigate")
    text = render("webhook/e2e_test.py", values(frigate))
    checks = webhook_checks(
        frigate, values(frigate), defaulting=False, validation=False, spokes=["v1beta1", "v2"]
    )
    changed = add_checks(text, checks)
    assert changed is not None
    assert 'for version in ("v1beta1", "v2"):' in changed
    assert functions_of(changed)[-1] == (
        "test_the_frigate_converts_between_its_versions_through_the_webhook"
    )
    assert not [name for name in functions_of(changed) if "ca_is_injected" in name]


def test_without_the_marker_nothing_is_added() -> None:
    frigate = kind("Frigate")
    checks = webhook_checks(frigate, values(frigate), defaulting=True, validation=False, spokes=[])
    assert add_checks('"""My own webhook tests."""\n', checks) is None
