"""What a simulated container sees of its volumes: each file of each mounted volume at its
path in the container (`/etc/config/key` for key `key` of a ConfigMap mounted at
`/etc/config`), a `subPath` mount showing that file or directory of its volume alone, as the
kubelet's bind mounts do. The in-memory file system of the container's shell scripts and of
`kubectl exec` starts from it."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["mounted_files"]


def mounted_files(
    volumes: Mapping[str, Mapping[str, bytes]], mounts: Sequence[Mapping[str, Any]]
) -> dict[str, bytes]:
    """Path in the container -> content, for the volumes' files `mounts` show."""
    files: dict[str, bytes] = {}
    for mount in mounts:
        target = str(mount.get("mountPath") or "")
        if not target.startswith("/"):
            continue
        target = posixpath.normpath(target)
        content = volumes.get(str(mount.get("name") or ""), {})
        sub = str(mount.get("subPath") or "").strip("/")
        for relative, data in content.items():
            path = posixpath.normpath(relative)
            if path.startswith("../") or path == "..":
                continue
            if sub:
                if path == sub:
                    files[target] = data
                    continue
                if not path.startswith(sub + "/"):
                    continue
                path = path[len(sub) + 1 :]
            files[posixpath.join(target, path)] = data
    return files
