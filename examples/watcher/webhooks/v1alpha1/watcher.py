"""Admission webhooks for Watcher (watch.kubeforge.dev/v1alpha1): refuse specs whose ConfigMap
the API server would refuse.

The CRD's schema checks each field alone; a ConfigMap has rules across fields that no schema
states. Without this webhook such a Watcher is stored, and the controller can only report a
`ConfigMapRefused` event; with it, the Watcher itself is refused, naming the field. A
container that mounts a volume the Watcher does not bring is allowed, with a warning.

`kubeforge manifests` writes its configuration (config/webhook/manifests.yaml) from the
@admission_webhook marker, and `setup_watcher_webhook(manager)`, called from main.setup,
serves it.
"""

from __future__ import annotations

import base64
import re

import kubeforge
from kubeforge import webhook

from api.v1alpha1 import Watcher

# A ConfigMap's keys (Kubernetes' IsConfigMapKey) and its size limit.
KEY = re.compile(r"[-._a-zA-Z0-9]+")
KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name', or 'KEY_NAME', or 'key-name', regex used for validation is "
    f"'{KEY.pattern}')"
)
MAX_BYTES = 1024 * 1024


def _key_errors(path: str, key: str) -> list[webhook.FieldError]:
    if len(key) > 253 or not KEY.fullmatch(key) or key in (".", "..") or key.startswith(".."):
        return [webhook.FieldError.invalid(path, key, KEY_MESSAGE)]
    return []


def problems(watcher: Watcher) -> list[webhook.FieldError]:
    """What keeps the Watcher's ConfigMap from being created, field by field."""
    data = watcher.spec.config_data or {}
    binary = watcher.spec.config_binary_data or {}
    errors: list[webhook.FieldError] = []
    for key in data:
        errors += _key_errors(f"spec.configData[{key}]", key)
    for key in binary:
        path = f"spec.configBinaryData[{key}]"
        errors += _key_errors(path, key)
        if key in data:
            errors.append(
                webhook.FieldError.invalid(path, key, "duplicate of key present in configData")
            )
    size = sum(len(v.encode()) for v in data.values())
    size += sum(len(base64.b64decode(v)) for v in binary.values())
    if size > MAX_BYTES:
        errors.append(webhook.FieldError.too_long("spec", MAX_BYTES))
    return errors


def warnings(watcher: Watcher) -> webhook.Warnings:
    """What works only in some pods: mounts of volumes the Watcher does not bring along."""
    own = watcher.spec.volume.name if watcher.spec.volume is not None else None
    return [
        f'spec.container.volumeMounts[{index}].name: volume "{mount.name}" is not the '
        "Watcher's spec.volume; pods asking for this Watcher must have it themselves"
        for index, mount in enumerate(watcher.spec.container.volume_mounts or [])
        if mount.name != own
    ]


# The validating webhook: called for creates and updates; a failure refuses the write.
@webhook.admission_webhook(verbs=["create", "update"], failure_policy="Fail", side_effects="None")
class WatcherValidator(webhook.Validator[Watcher]):
    """Refuses Watchers whose configuration cannot be kept in a ConfigMap, and warns about
    containers that need more than the Watcher brings."""

    def validate_create(self, watcher: Watcher) -> webhook.Warnings | None:
        return self.check(watcher)

    def validate_update(self, old: Watcher, new: Watcher) -> webhook.Warnings | None:
        return self.check(new)

    def check(self, watcher: Watcher) -> webhook.Warnings | None:
        """Raise InvalidObject listing every problem, if there is one; else the warnings."""
        errors = problems(watcher)
        if errors:
            raise webhook.InvalidObject(*errors)
        return warnings(watcher) or None


def setup_watcher_webhook(manager: kubeforge.Manager) -> None:
    """Serve the Watcher webhooks from the manager's webhook server."""
    manager.webhook_for(Watcher).validator(WatcherValidator()).complete()
