"""Writing a project's files from commands, one report line per file.

    wrote      config/crd/bases/ship.example.com_frigates.yaml
    unchanged  config/rbac/role.yaml
    kept       config/rbac/kustomization.yaml
    skipped    controllers/frigate.py (exists; left as it is)
    updated    main.py
    removed    config/webhook/manifests.yaml

Generated files are rewritten when their content changes; scaffolded files are written
once and then belong to the project, so a command run again never overwrites them.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["Files"]


class Files:
    """Writes files under a project root, reporting one line per file."""

    def __init__(self, root: Path, *, quiet: bool = False, brief: bool = False) -> None:
        self.root = root
        self.quiet = quiet
        # brief: files left as they were (unchanged, kept) are counted but not listed.
        self.brief = brief
        self.counts = {
            "wrote": 0,
            "updated": 0,
            "unchanged": 0,
            "kept": 0,
            "skipped": 0,
            "removed": 0,
        }

    def _report(self, what: str, path: Path, note: str = "") -> None:
        self.counts[what] += 1
        if not self.quiet and not (self.brief and what in ("unchanged", "kept")):
            typer.echo(f"{what:<10} {path.relative_to(self.root)}{note}")

    def write(self, path: Path, content: str) -> None:
        """Generated content: (re)written when it differs."""
        if path.is_file() and path.read_text(encoding="utf-8") == content:
            self._report("unchanged", path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        self._report("wrote", path)

    def create(self, path: Path, content: str, *, replaces: tuple[str, ...] = ()) -> None:
        """Scaffolded content: written when missing, the project's own afterwards; a file
        still holding one of the scaffolds in `replaces` (never edited) is rewritten."""
        if not path.exists():
            self.write(path, content)
            return
        current = path.read_text(encoding="utf-8")
        if current == content:
            self._report("unchanged", path)
        elif current in replaces:
            self.write(path, content)
        else:
            self._report("kept", path)

    def scaffold(self, path: Path, content: str) -> bool:
        """The project's code, written only when missing: whether it was written."""
        if path.exists():
            self._report("skipped", path, " (exists; left as it is)")
            return False
        self.write(path, content)
        return True

    def update(self, path: Path, content: str) -> None:
        """A file the project owns, changed by the command (an insertion): rewritten."""
        if path.read_text(encoding="utf-8") == content:
            self._report("unchanged", path)
            return
        path.write_text(content, encoding="utf-8")
        self._report("updated", path)

    def remove(self, path: Path) -> None:
        path.unlink()
        self._report("removed", path)

    def summary(self) -> str:
        labels = {"wrote": "written"}
        return ", ".join(f"{n} {labels.get(w, w)}" for w, n in self.counts.items() if n)
