"""Where a development cluster keeps the data of its persistent volumes on this machine.

One private directory (mode 0700) stands for the nodes' disks: `<data dir>/volumes` with
`--data-dir`, so volumes outlive the cluster as its objects do, else a temporary directory
removed when the cluster stops. The provisioner makes each volume's directory in it (as
local-path-provisioner makes `/var/local-path-provisioner/<pv>_<namespace>_<claim>` on a
kind node) and removes it when the volume is deleted; containers run as local processes see
the directory at their mount path (containers.py).

A volume whose source is not such a directory (a static PersistentVolume with a hostPath
elsewhere, an NFS share, a CSI volume) gets a directory of its own here too, named after
it: its data is kept the same way, and nothing outside the cluster's directory is ever
handed to a container or removed.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubeforge._api.machinery.access import as_dict, name_of, spec_of
from kubeforge._cluster.sandboxpaths import UnsafePath, make_directory_within

__all__ = ["VolumeDirectories"]

# Where volumes without a directory of the cluster's keep their data (provisioned ones are
# named `<pv>_<namespace>_<claim>` and cannot clash).
STATIC = "static"


class VolumeDirectories:
    """The cluster's directory for volume data: `root` (None: a temporary one, made on first
    use and removed by `close()`)."""

    def __init__(self, root: Path | None = None) -> None:
        self._root = root
        self._temporary = root is None

    @property
    def root(self) -> Path:
        """The directory itself (made, private, when missing)."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="kubeforge-volumes-"))
        elif not self._root.exists():
            self._root.mkdir(mode=0o700, parents=True)
        return self._root

    def new(self, name: str) -> Path:
        """Make (or keep) the directory `name` for a new volume; its path."""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise UnsafePath(f"invalid volume directory name: {name!r}")
        path = self.root / name
        make_directory_within(self.root, path)
        return path

    def inside(self, path: str) -> Path | None:
        """`path` once its links are followed, when it is a directory below the root;
        else None."""
        if not path:
            return None
        root = self.root.resolve()
        real = Path(path).resolve()
        if root not in real.parents:
            return None
        return real

    def of_volume(self, volume: Mapping[str, Any]) -> Path:
        """The directory holding a PersistentVolume's data (made when missing): its hostPath
        or local path when that lies below the root, else one named after the volume."""
        spec = spec_of(volume)
        for source in ("hostPath", "local"):
            path = self.inside(str(as_dict(spec.get(source)).get("path") or ""))
            if path is not None:
                make_directory_within(self.root, path)
                return path
        path = self.root / STATIC / name_of(volume)
        make_directory_within(self.root, path)
        return path

    def remove(self, path: str) -> bool:
        """Remove a volume's directory and what it holds, when it lies below the root (a
        link is never followed); whether it was below the root."""
        real = self.inside(path)
        if real is None:
            return False
        if real.is_dir() and not Path(path).is_symlink():
            shutil.rmtree(real, ignore_errors=True)
        return True

    def close(self) -> None:
        """Remove a temporary root with everything in it (a kept root stays)."""
        if self._temporary and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
