"""The checks `create webhook` adds to a project's end-to-end suite: test/e2e/test_webhooks.py,
written with the project's first webhook, gets the checks of each new webhook above its
marker, as kubebuilder's `create webhook` adds its checks to test/e2e/e2e_test.go. They are
the CA injected into each kind of webhook configuration, each defaulter and validator called
for a kind's sample (and a defaulter refusing what is no such object), and each conversion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeforge._api.meta import GroupVersionKind
from kubeforge._api.webhooks import default_name, mutate_path, validate_path
from kubeforge._scaffold.names import ResourceNames
from kubeforge._scaffold.render import insert_at_marker, render

__all__ = ["E2E_WEBHOOK_TESTS", "add_checks", "webhook_checks"]

E2E_WEBHOOK_TESTS = "test/e2e/test_webhooks.py"
MARKER = "# +kubeforge:scaffold:e2e-webhooks-checks"


def webhook_checks(
    names: ResourceNames,
    values: Mapping[str, str],
    *,
    defaulting: bool,
    validation: bool,
    spokes: Sequence[str],
    test_kind: str = "",
    mutate_name: str = "",
    validate_name: str = "",
) -> list[str]:
    """The test functions checking a kind's new webhooks, for `add_checks`; `spokes` are the
    versions a conversion webhook (none: no conversion) converts the kind's version to.
    `test_kind` names the tests (default: the lowercase kind), `mutate_name` and
    `validate_name` the webhooks (default: kubebuilder's names)."""
    gvk = GroupVersionKind(names.qualified_group, names.version, names.kind)
    quoted = ", ".join(f'"{version}"' for version in spokes)
    filled = {
        **values,
        "sample_file": names.sample_file,
        "mutate_path": mutate_path(gvk),
        "test_kind": test_kind or values["lower_kind"],
        "mutate_name": mutate_name or default_name(gvk, True),
        "validate_path": validate_path(gvk),
        "validate_name": validate_name or default_name(gvk, False),
        "spokes": f"({quoted},)" if len(spokes) == 1 else f"({quoted})",
    }
    checks = []
    if defaulting:
        mutating = {**filled, "configuration": "mutating"}
        checks.append(render("webhook/e2e_ca_injection.py", mutating))
        checks.append(render("webhook/e2e_defaulter.py", filled))
    if validation:
        validating = {**filled, "configuration": "validating"}
        checks.append(render("webhook/e2e_ca_injection.py", validating))
        checks.append(render("webhook/e2e_validator.py", filled))
    if spokes:
        checks.append(render("webhook/e2e_conversion.py", filled))
    return checks


def add_checks(text: str, checks: Sequence[str]) -> str | None:
    """test/e2e/test_webhooks.py's `text` with each check above its marker (once: a check of
    the configurations, there already for another kind, is not added again); None when the
    marker is gone."""
    for check in checks:
        changed = insert_at_marker(text, MARKER, check)
        if changed is None:
            return None
        text = changed
    return text
