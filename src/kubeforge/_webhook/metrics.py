"""What the webhook server reports, named by the manager's metrics (controller-runtime's
`controller_runtime_webhook_*`, `controller_runtime_conversion_webhook_panics_total` and
`certwatcher_*` families; see _runtime/metrics.py).

A server run without a manager reports to nothing.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["NoMetrics", "WebhookMetrics"]


class WebhookMetrics(Protocol):
    """The webhook server's instrumentation, one call per event."""

    def registered(self, path: str) -> None:
        """A webhook was registered at `path`: publish its series at zero."""

    def request_started(self, path: str) -> None:
        """A request to `path` is being served (requests in flight +1)."""

    def request_finished(self, path: str, code: int, seconds: float) -> None:
        """A request to `path` was answered with HTTP status `code` after `seconds`."""

    def panic(self) -> None:
        """A handler raised an unexpected exception (it was answered as an internal error)."""

    def conversion_panic(self) -> None:
        """A conversion raised an unexpected exception (answered as a failed conversion)."""

    def certificate_read(self, ok: bool) -> None:
        """The serving certificate was read (successfully or not)."""


class NoMetrics:
    """WebhookMetrics that records nothing."""

    def registered(self, path: str) -> None:
        pass

    def request_started(self, path: str) -> None:
        pass

    def request_finished(self, path: str, code: int, seconds: float) -> None:
        pass

    def panic(self) -> None:
        pass

    def conversion_panic(self) -> None:
        pass

    def certificate_read(self, ok: bool) -> None:
        pass
