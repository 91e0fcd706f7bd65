"""Webhook markers -> Mutating/ValidatingWebhookConfiguration manifests, shaped as controller-gen
writes config/webhook/manifests.yaml (controller-tools pkg/webhook/parser.go; kubebuilder's
testdata/project-v4/config/webhook/manifests.yaml)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

import kubeforge
import kubeforge.meta
import kubeforge.models
import kubeforge.webhook
from kubeforge._api.crd import dump_yaml
from kubeforge._api.webhooks import (
    WebhookMarker,
    admission_webhook,
    default_name,
    kind_of,
    marker_for,
    markers_of,
    mutate_path,
    validate_path,
    webhook_configurations,
    webhooks_yaml,
)
from kubeforge.models.core_v1 import Pod


class CaptainSpec(kubeforge.Model):
    name: str = ""


@kubeforge.resource(group="crew.testproject.org", version="v1")
class Captain(kubeforge.Resource[CaptainSpec, None]):
    """A captain."""


def spec(marker: WebhookMarker, kind: Any, mutating: bool, path: str | None = None) -> Any:
    return marker.spec(kind=kind, mutating=mutating, path=path)


KUBEBUILDER_LIKE = """\
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-crew-testproject-org-v1-captain
  failurePolicy: Fail
  name: mcaptain-v1.kb.io
  rules:
  - apiGroups:
    - crew.testproject.org
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - captains
  sideEffects: None
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-apps-v1-deployment
  failurePolicy: Fail
  name: mdeployment-v1.kb.io
  rules:
  - apiGroups:
    - apps
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - deployments
  sideEffects: None
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate--v1-pod
  failurePolicy: Fail
  name: mpod-v1.kb.io
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - pods
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /custom-validate-captain
  failurePolicy: Fail
  name: vcaptain-v1.kb.io
  rules:
  - apiGroups:
    - crew.testproject.org
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - captains
  sideEffects: None
"""


def test_defaults_match_the_kubebuilder_scaffold() -> None:
    default = WebhookMarker()
    specs = [
        # Registration order is not the output order: webhooks are sorted by name.
        spec(default, Pod, True),
        spec(default, Captain, False, "/custom-validate-captain"),
        spec(default, "apps/v1/Deployment", True),
        spec(default, Captain, True),
    ]
    assert webhooks_yaml(webhook_configurations(specs)) == KUBEBUILDER_LIKE


EVERY_OPTION = """\
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  - v1beta1
  clientConfig:
    service:
      name: captain-webhooks
      namespace: crew-system
      path: /mutate-crew-testproject-org-v1-captain
      port: 8443
  failurePolicy: Ignore
  matchConditions:
  - expression: request.userInfo.username != 'system:admin'
    name: not-admin
  matchPolicy: Exact
  name: default.captain.crew.testproject.org
  namespaceSelector:
    matchExpressions:
    - key: environment
      operator: In
      values:
      - dev
      - test
  objectSelector:
    matchLabels:
      webhook-enabled: "true"
  reinvocationPolicy: IfNeeded
  rules:
  - apiGroups:
    - crew.testproject.org
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    - DELETE
    resources:
    - captains
    - captains/status
    scope: Namespaced
  sideEffects: NoneOnDryRun
  timeoutSeconds: 5
"""


def test_every_option_is_written_where_controller_gen_writes_it() -> None:
    @admission_webhook(
        verbs=["create", "update", "delete"],
        failure_policy="ignore",
        side_effects="noneondryrun",
        name="default.captain.crew.testproject.org",
        resources=["captains", "captains/status"],
        scope="Namespaced",
        match_policy="exact",
        namespace_selector=kubeforge.models.LabelSelector.model_validate(
            {
                "matchExpressions": [
                    {"key": "environment", "operator": "In", "values": ["dev", "test"]}
                ]
            }
        ),
        object_selector={"matchLabels": {"webhook-enabled": "true"}},
        timeout_seconds=5,
        reinvocation_policy="IfNeeded",
        match_conditions=[("not-admin", "request.userInfo.username != 'system:admin'")],
        admission_review_versions=["v1", "v1beta1"],
        service_name="captain-webhooks",
        service_namespace="crew-system",
        service_port=8443,
    )
    class CaptainDefaulter(kubeforge.webhook.Defaulter[Captain]):
        def default(self, obj: Captain) -> None:
            return None

    marker = marker_for(CaptainDefaulter(), True)
    assert marker is not None
    text = webhooks_yaml(webhook_configurations([spec(marker, Captain, True)]))
    assert text == EVERY_OPTION


def test_a_url_marker_and_a_local_server_with_its_ca() -> None:
    @admission_webhook(
        kind=Pod, mutating=False, verbs="create", url="https://policy.example.com/validate-pods"
    )
    def external(
        request: kubeforge.webhook.AdmissionRequest,
    ) -> kubeforge.webhook.AdmissionResponse:
        return kubeforge.webhook.AdmissionResponse.allow()

    served = spec(WebhookMarker(), Captain, True)
    elsewhere = markers_of(external)[0].spec()
    [mutating, validating] = webhook_configurations(
        [served, elsewhere], base_url="https://127.0.0.1:34567/", ca_bundle=b"PEM"
    )
    bundle = base64.b64encode(b"PEM").decode()
    assert mutating["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:34567/mutate-crew-testproject-org-v1-captain",
        "caBundle": bundle,
    }
    # A webhook declared with its own URL keeps it; only path-served ones move.
    assert validating["webhooks"][0]["clientConfig"] == {
        "url": "https://policy.example.com/validate-pods",
        "caBundle": bundle,
    }
    assert validating["webhooks"][0]["rules"][0]["operations"] == ["CREATE"]


def test_paths_names_and_kinds() -> None:
    assert mutate_path(kind_of(Pod)[0]) == "/mutate--v1-pod"
    assert validate_path(kind_of(Captain)[0]) == "/validate-crew-testproject-org-v1-captain"
    assert kind_of("networking.k8s.io/v1/Ingress")[1] == "ingresses"
    assert kind_of(kubeforge.meta.GroupVersionKind("", "v1", "Pod"))[1] == "pods"
    assert default_name(kind_of(Captain)[0], False) == "vcaptain-v1.kb.io"


def test_markers_stack_and_the_matching_one_is_chosen() -> None:
    @admission_webhook(mutating=True, failure_policy="Ignore")
    @admission_webhook(mutating=False, verbs=["delete"])
    class Both(kubeforge.webhook.Validator[Captain]):
        def default(self, obj: Captain) -> None:
            return None

    mutating = marker_for(Both, True)
    validating = marker_for(Both(), False)
    assert mutating is not None and mutating.failure_policy == "Ignore"
    assert validating is not None and validating.verbs == ("DELETE",)

    @admission_webhook(verbs=["create"])
    class Either(kubeforge.webhook.Validator[Captain]):
        pass

    assert marker_for(Either, True) is marker_for(Either, False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"verbs": ["patch"]}, "verbs must be one of"),
        ({"verbs": []}, "at least one verb"),
        ({"failure_policy": "Retry"}, "failure_policy must be one of"),
        ({"side_effects": "Some"}, "side_effects must be one of"),
        ({"timeout_seconds": 31}, "between 1 and 30"),
        ({"timeout_seconds": 0}, "between 1 and 30"),
        ({"path": "mutate-captain"}, "does not match"),
        ({"path": "/a", "url": "https://x/a"}, "mutually exclusive"),
        ({"mutating": False, "reinvocation_policy": "IfNeeded"}, "reinvocation policy"),
        ({"admission_review_versions": ["v2"]}, "admission review versions"),
        ({"kind": "Pod"}, "is not a kind"),
        ({"object_selector": {"labels": {}}}, "unknown keys"),
        ({"match_conditions": [("a", "true"), ("a", "false")]}, "unique"),
    ],
)
def test_bad_markers_fail_at_the_declaration(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        admission_webhook(**options)


def test_registration_must_agree_with_the_marker() -> None:
    marker = WebhookMarker(path="/mutate-captains", mutating=True)
    with pytest.raises(ValueError, match="not the served path"):
        marker.spec(kind=Captain, mutating=True, path="/elsewhere")
    with pytest.raises(ValueError, match="declares a mutating webhook"):
        marker.spec(kind=Captain, mutating=False)
    with pytest.raises(ValueError, match="without a kind"):
        WebhookMarker(mutating=True, path="/x").spec()
    with pytest.raises(ValueError, match="fully qualified"):
        WebhookMarker(name="captain").spec(kind=Captain, mutating=True)


def test_configurations_refuse_duplicate_names() -> None:
    one = spec(WebhookMarker(), Captain, True)
    two = spec(WebhookMarker(), Captain, True, "/other-path")
    with pytest.raises(ValueError, match=r"named 'mcaptain-v1\.kb\.io'"):
        webhook_configurations([one, two])


def test_nothing_to_configure_writes_nothing() -> None:
    assert webhook_configurations([]) == []
    assert webhooks_yaml([]) == ""


def test_yaml_quotes_strings_that_read_back_as_other_types() -> None:
    text = dump_yaml(
        {"labels": {"a": "true", "b": "1", "c": "null", "d": "x: y", "e": "*", "f": "v1"}}
    )
    assert text.splitlines()[1:] == [
        "labels:",
        '  a: "true"',
        '  b: "1"',
        '  c: "null"',
        "  d: 'x: y'",
        "  e: '*'",
        "  f: v1",
    ]
    assert yaml.safe_load(text)["labels"]["a"] == "true"
