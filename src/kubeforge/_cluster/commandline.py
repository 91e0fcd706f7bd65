"""A container's command line, put together as a container runtime does: the image's
entrypoint and default arguments, replaced by the container's `command` and `args`, with
Kubernetes' `$(VAR)` references expanded.

A simulated container has no image to read, so what an image's entrypoint is comes from
one table: the images whose entrypoint is a shell (or none), where arguments without a
command are the command (`busybox`, `alpine`, `python`, ...). Every other image's entrypoint
is a program of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SHELL_IMAGES", "container_argv", "expand_references", "full_image", "image_name"]

SHELL_IMAGES = frozenset(
    [
        "busybox",
        "alpine",
        "ubuntu",
        "debian",
        "bash",
        "centos",
        "fedora",
        "rockylinux",
        "almalinux",
        "amazonlinux",
        "python",
        "node",
        "golang",
        "ruby",
        "perl",
        "bitnami/kubectl",
        "curlimages/curl",
    ]
)

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


def expand_references(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of command, args and env values: defined variables are
    replaced, undefined references stay as written and `$$` escapes a `$`."""
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        value = env.get(name)
        return match.group(0) if value is None else value

    return _REFERENCE.sub(replace, text)


def image_name(image: str) -> str:
    """`docker.io/library/busybox:1.36@sha256:..` -> `busybox`; keeps `owner/name`."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if parts and parts[0] == "library":
        parts = parts[1:]
    return "/".join(parts)


@functools.lru_cache(maxsize=256)
def full_image(image: str) -> str:
    """An image reference as the container runtime reports and resolves it:
    `nginx` -> `docker.io/library/nginx:latest`, so the spellings of one image match."""
    name, _, digest = image.strip().partition("@")
    parts = name.split("/")
    if len(parts) == 1 or not ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = ["docker.io", *(["library"] if len(parts) == 1 else []), *parts]
    full = "/".join(parts)
    if digest:
        return f"{full}@{digest}"
    if ":" not in parts[-1]:
        full += ":latest"
    return full


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str] | None:
    """The command line a container runs, or None for its image's default entrypoint."""
    command = [str(c) for c in container.get("command") or ()]
    args = [str(a) for a in container.get("args") or ()]
    if not command:
        image = image_name(str(container.get("image") or ""))
        if not args or (image not in SHELL_IMAGES and image.split("/")[-1] not in SHELL_IMAGES):
            return None
    return [expand_references(part, env) for part in command + args]
