"""Admission webhooks for Watcher (watch.kubeforge.dev/v1alpha1).

The API server calls them before it stores a Watcher; `kubeforge manifests` writes their
configurations (config/webhook/manifests.yaml) from the @admission_webhook markers, and
`setup_watcher_webhook(manager)`, called from main.setup, serves them.
"""

from __future__ import annotations

import logging

import kubeforge

from api.v1alpha1 import Watcher

log = logging.getLogger(__name__)


# The mutating webhook: called for creates and updates; a failure refuses the write.
@kubeforge.admission_webhook(verbs=["create", "update"], failure_policy="Fail", side_effects="None")
class WatcherDefaulter(kubeforge.Defaulter[Watcher]):
    """Fills in what a Watcher's author left out. Change the object in place: the patch
    the API server applies is computed from what changed."""

    async def default(self, watcher: Watcher) -> None:
        log.info("defaulting %s %s", "Watcher", watcher.metadata.name)
        # TODO(user): set the defaults, e.g. a ConfigMap volume's mount path.


# The validating webhook: called for creates and updates (add "delete" to the verbs to be
# asked about deletions); a failure refuses the write.
@kubeforge.admission_webhook(verbs=["create", "update"], failure_policy="Fail", side_effects="None")
class WatcherValidator(kubeforge.Validator[Watcher]):
    """Refuses a Watcher that is not valid: raise `kubeforge.InvalidObject(kubeforge.FieldError
    .invalid("spec.foo", value, "why"))` (or `kubeforge.Denied("why")`); return warnings, or
    None, to admit it."""

    async def validate_create(self, watcher: Watcher) -> kubeforge.Warnings | None:
        log.info("validating the creation of %s %s", "Watcher", watcher.metadata.name)
        # TODO(user): check the new object.
        return None

    async def validate_update(self, old: Watcher, new: Watcher) -> kubeforge.Warnings | None:
        log.info("validating the update of %s %s", "Watcher", new.metadata.name)
        # TODO(user): check the change from old to new.
        return None

    async def validate_delete(self, watcher: Watcher) -> kubeforge.Warnings | None:
        log.info("validating the deletion of %s %s", "Watcher", watcher.metadata.name)
        # TODO(user): check the deletion (called only with "delete" in the verbs).
        return None


def setup_watcher_webhook(manager: kubeforge.Manager) -> None:
    """Serve the Watcher webhooks from the manager's webhook server."""
    manager.webhook_for(Watcher).defaulter(WatcherDefaulter()).validator(
        WatcherValidator()
    ).complete()
