"""Versions of a kind and the conversion between them, as controller-runtime's
`conversion` package: the storage version is the hub (`Hub` among its bases), every other
version a spoke (`Convertible[Hub]` with `to_hub` and `from_hub`); `stash` and `unstash` keep
what a version cannot hold; `convert` converts an object to any version of its kind.

`ConversionWebhook` answers the API server's ConversionReviews (the manager serves it when a
kind has spokes), and `WebhookConversion` changes where a CRD sends them. docs/versions.md
is the guide.
"""

from __future__ import annotations

from kubeforge._api.conversion import (
    ConversionError,
    Convertible,
    Hub,
    KindVersions,
    convert,
    kind_versions,
    stash,
    unstash,
)
from kubeforge._api.meta import WebhookConversion
from kubeforge._webhook.conversion import ConversionWebhook

__all__ = [
    "ConversionError",
    "ConversionWebhook",
    "Convertible",
    "Hub",
    "KindVersions",
    "WebhookConversion",
    "convert",
    "kind_versions",
    "stash",
    "unstash",
]
