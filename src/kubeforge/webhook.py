"""Admission webhooks, as controller-runtime's `webhook` package: a `Defaulter` or
`Validator` for one kind, declared with `@admission_webhook(...)` and registered with
`manager.webhook_for(Kind)`; raw handlers on `AdmissionRequest` and `AdmissionResponse`;
the refusals (`Denied`, `InvalidObject` with `FieldError`s); the HTTPS server the manager
runs (`WebhookServer`); the webhook configurations made from the declarations; and serving
a project's webhooks from this machine to a cluster (`serve_locally`,
`register_webhook_server`). docs/webhooks.md is the guide.
"""

from __future__ import annotations

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.webhooks import (
    MatchCondition,
    WebhookRule,
    WebhookSpec,
    admission_webhook,
    webhook_configurations,
)
from kubeforge._runtime.localwebhooks import (
    LocalServing,
    WebhookRegistration,
    register_webhook_server,
    registered_while_serving,
    serve_locally,
)
from kubeforge._webhook.admission import AdmissionHandler, Denied, InvalidObject, admission_request
from kubeforge._webhook.builder import WebhookBuilder
from kubeforge._webhook.certwatcher import CertificateError
from kubeforge._webhook.review import AdmissionRequest, AdmissionResponse, AdmissionReview, UserInfo
from kubeforge._webhook.server import RegisteredWebhook, WebhookServer
from kubeforge._webhook.typed import Defaulter, Validator, Warnings

__all__ = [
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "CertificateError",
    "Defaulter",
    "Denied",
    "FieldError",
    "InvalidObject",
    "LocalServing",
    "MatchCondition",
    "RegisteredWebhook",
    "UserInfo",
    "Validator",
    "Warnings",
    "WebhookBuilder",
    "WebhookRegistration",
    "WebhookRule",
    "WebhookServer",
    "WebhookSpec",
    "admission_request",
    "admission_webhook",
    "register_webhook_server",
    "registered_while_serving",
    "serve_locally",
    "webhook_configurations",
]
