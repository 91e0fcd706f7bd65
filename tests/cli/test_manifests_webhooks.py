"""`kubeforge manifests` for a project with webhooks: config/webhook and config/certmanager as
kubebuilder lays them out, regenerated with no change, removed when the webhooks go."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli_project import GROUP, kubeforge, kustomize, snapshot, write_project

WEBHOOKS = '''\
"""The widget's webhooks."""

from api.v1alpha1 import Widget
from kubeforge import webhook


@webhook.admission_webhook(verbs=["create", "update"])
class WidgetDefaulter(webhook.Defaulter[Widget]):
    def default(self, widget: Widget) -> None:
        widget.spec.size = max(widget.spec.size, 1)


@webhook.admission_webhook(verbs=["create", "update", "delete"], failure_policy="Ignore")
class WidgetValidator(webhook.Validator[Widget]):
    pass


@webhook.admission_webhook(
    kind="v1/Pod",
    mutating=True,
    verbs="create",
    name="mpod.widgets.kubeforge.dev",
    object_selector={"matchLabels": {"widgets.kubeforge.dev/inject": "true"}},
    reinvocation_policy="IfNeeded",
)
async def inject(request: webhook.AdmissionRequest) -> webhook.AdmissionResponse:
    return webhook.AdmissionResponse.allow()


def unmarked(request: webhook.AdmissionRequest) -> webhook.AdmissionResponse:
    return webhook.AdmissionResponse.allow()
'''

SETUP = """

from webhooks.widget import WidgetDefaulter, WidgetValidator, inject, unmarked


def setup_webhooks(manager: kubeforge.Manager) -> None:
    manager.webhook_for(Widget).defaulter(WidgetDefaulter()).validator(WidgetValidator()).complete()
    manager.webhook_server.register("/mutate--v1-pod", inject)
    manager.webhook_server.register("/audit", unmarked)
"""

EXPECTED = f"""\
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
      path: /mutate--v1-pod
  failurePolicy: Fail
  name: mpod.widgets.kubeforge.dev
  objectSelector:
    matchLabels:
      widgets.kubeforge.dev/inject: "true"
  reinvocationPolicy: IfNeeded
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    resources:
    - pods
  sideEffects: None
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-demo-kubeforge-dev-v1alpha1-widget
  failurePolicy: Fail
  name: mwidget-v1alpha1.kb.io
  rules:
  - apiGroups:
    - {GROUP}
    apiVersions:
    - v1alpha1
    operations:
    - CREATE
    - UPDATE
    resources:
    - widgets
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
      path: /validate-demo-kubeforge-dev-v1alpha1-widget
  failurePolicy: Ignore
  name: vwidget-v1alpha1.kb.io
  rules:
  - apiGroups:
    - {GROUP}
    apiVersions:
    - v1alpha1
    operations:
    - CREATE
    - UPDATE
    - DELETE
    resources:
    - widgets
  sideEffects: None
"""


def add_webhooks(root: Path) -> None:
    (root / "webhooks").mkdir()
    (root / "webhooks/__init__.py").write_text("")
    (root / "webhooks/widget.py").write_text(WEBHOOKS)
    main = root / "main.py"
    text = main.read_text() + SETUP
    main.write_text(
        text.replace(
            "def setup(manager: kubeforge.Manager) -> None:\n",
            "def setup(manager: kubeforge.Manager) -> None:\n    setup_webhooks(manager)\n",
        )
    )


async def test_manifests_write_the_webhook_configuration_and_its_kustomizations(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path / "widgets")
    add_webhooks(root)
    first = await kubeforge("manifests", "--dir", str(root))
    assert first.code == 0, first.err
    written = {line.split()[1] for line in first.out.splitlines() if line.startswith("wrote")}
    assert {
        "config/webhook/manifests.yaml",
        "config/webhook/service.yaml",
        "config/webhook/kustomization.yaml",
        "config/certmanager/issuer.yaml",
        "config/certmanager/certificate-webhook.yaml",
        "config/certmanager/kustomization.yaml",
        "config/certmanager/kustomizeconfig.yaml",
    } <= written
    assert "/audit has no @admission_webhook marker" in first.err
    assert (root / "config/webhook/manifests.yaml").read_text() == EXPECTED

    before = snapshot(root)
    second = await kubeforge("manifests", "--dir", str(root))
    assert second.code == 0, second.err
    assert "wrote" not in second.out
    assert snapshot(root) == before

    webhook = await kustomize(root / "config/webhook")
    assert sorted((o["kind"], o["metadata"]["name"]) for o in webhook) == [
        ("MutatingWebhookConfiguration", "mutating-webhook-configuration"),
        ("Service", "webhook-service"),
        ("ValidatingWebhookConfiguration", "validating-webhook-configuration"),
    ]
    [service] = [o for o in webhook if o["kind"] == "Service"]
    assert service["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]
    assert service["spec"]["selector"]["app.kubernetes.io/name"] == "widgets"
    certs = await kustomize(root / "config/certmanager")
    assert sorted(o["kind"] for o in certs) == ["Certificate", "Issuer"]
    [certificate] = [o for o in certs if o["kind"] == "Certificate"]
    assert certificate["spec"]["secretName"] == "webhook-server-cert"
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "selfsigned-issuer"}

    # The webhooks go: so does the generated configuration; the scaffolded files stay.
    (root / "main.py").write_text(
        (root / "main.py").read_text().replace("    setup_webhooks(manager)\n", "")
    )
    third = await kubeforge("manifests", "--dir", str(root))
    assert third.code == 0, third.err
    assert "removed    config/webhook/manifests.yaml" in third.out
    assert not (root / "config/webhook/manifests.yaml").exists()
    assert (root / "config/webhook/service.yaml").exists()


async def test_a_project_without_webhooks_gets_no_webhook_files(tmp_path: Path) -> None:
    root = write_project(tmp_path / "widgets")
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 0, result.err
    assert not (root / "config/webhook").exists()
    assert not (root / "config/certmanager").exists()


async def test_conflicting_webhooks_fail_without_writing(tmp_path: Path) -> None:
    root = write_project(tmp_path / "widgets")
    add_webhooks(root)
    webhooks = root / "webhooks/widget.py"
    # Two webhooks of one configuration under one name: the API server would refuse it.
    webhooks.write_text(
        webhooks.read_text().replace(
            'name="mpod.widgets.kubeforge.dev"', 'name="mwidget-v1alpha1.kb.io"'
        )
    )
    result = await kubeforge("manifests", "--dir", str(root))
    assert result.code == 1
    assert "two webhooks in mutating-webhook-configuration are named" in result.err
    assert not (root / "config").exists()
