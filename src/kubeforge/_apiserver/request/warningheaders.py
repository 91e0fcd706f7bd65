"""`Warning` response headers, written as kube-apiserver writes them.

Warnings quote what a request sent (`unknown field "<name>"`), so their text is the
client's: kube-apiserver's warning recorder (k8s.io/apiserver/pkg/endpoints/filters/
warning.go) drops repeats and bounds the total, 4096 characters; past that it shortens each
warning to 256 characters and leaves out what still does not fit. Go's HTTP server writes
header values as UTF-8 and turns line breaks into spaces; here every control character
becomes a space, so no text can end the header early or make a client refuse it.
"""

from __future__ import annotations

import re

__all__ = ["warning_headers"]

_TOTAL_CHARS = 4096
_SHORTENED_CHARS = 256
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _header(text: str) -> tuple[str, str]:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if _CONTROL.search(escaped):
        escaped = _CONTROL.sub(" ", escaped)
    return ("Warning", f'299 - "{escaped}"')


def warning_headers(warnings: list[str] | None) -> list[tuple[str, str]]:
    """`Warning: 299 - "text"` headers for `warnings`, without repeats or empty ones, within
    kube-apiserver's bounds."""
    if not warnings:
        return []
    unique = list(dict.fromkeys(w for w in warnings if w))
    if sum(len(w) for w in unique) <= _TOTAL_CHARS:
        return [_header(w) for w in unique]
    headers = []
    written = 0
    for text in unique:
        if written >= _TOTAL_CHARS:
            break
        text = text[:_SHORTENED_CHARS]
        written += len(text)
        headers.append(_header(text))
    return headers
