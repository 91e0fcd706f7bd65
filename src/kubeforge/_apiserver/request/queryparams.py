"""Query parameters read as Kubernetes reads them.

Boolean options (`watch`, `allowWatchBookmarks`, `sendInitialEvents`, `orphanDependents`,
`follow`, `force` ...) go through apimachinery's query-parameter conversion
(`Convert_Slice_string_To_bool` in k8s.io/apimachinery/pkg/runtime/conversion.go): the first
value counts, and anything but `0` or `false` in any case, an empty value included, is true.
Clients rely on it: kubernetes_asyncio sends `True`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["parse_bool", "query_bool", "query_flag"]


def parse_bool(value: str) -> bool:
    """A boolean query value: false only for `0` and case-insensitive `false`."""
    return value != "0" and value.lower() != "false"


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """An optional boolean parameter (a Go `*bool`): None when absent."""
    value = query.get(name)
    return None if value is None else parse_bool(value)


def query_flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean parameter that is false when absent."""
    value = query.get(name)
    return value is not None and parse_bool(value)
