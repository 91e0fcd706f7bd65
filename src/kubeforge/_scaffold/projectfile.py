"""The PROJECT file: what the scaffold knows about a project, in kubebuilder's format (version 3).

    cliVersion: 0.1.0
    domain: example.com
    layout:
    - kubeforge.dev/v1
    projectName: guestbook
    resources:
    - api: {crdVersion: v1, namespaced: true}
      controller: true
      domain: example.com
      group: webapp
      kind: Guestbook
      path: api/v1
      version: v1
      webhooks: {defaulting: true, validation: true, webhookVersion: v1}
    version: "3"

A multigroup project (`kubeforge edit --multigroup`) has `multigroup: true` and its kinds'
paths name their group (`path: api/webapp/v1`). Keys are written in alphabetical order, as
kubebuilder writes them; keys this module does not know (plugin settings, ...) are kept as
they are. `cliVersion` is the kubeforge release whose scaffold the project has (kubebuilder's
config/v3 records its own the same way): `init` writes it, `alpha update` and `alpha
generate` move it on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["LAYOUT", "ProjectFile", "ProjectFileError"]

LAYOUT = "kubeforge.dev/v1"
HEADER = """\
# What `kubeforge` knows about this project (kubebuilder's PROJECT file, version 3).
# `kubeforge init` and `kubeforge create` keep it up to date; edit it with care.
"""


class ProjectFileError(ValueError):
    """The PROJECT file is missing or unreadable; the message says which."""


@dataclass
class ProjectFile:
    """The PROJECT file's content; `resources` are kubebuilder's resource entries (dicts)."""

    domain: str
    project_name: str
    layout: list[str] = field(default_factory=lambda: [LAYOUT])
    resources: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> ProjectFile:
        path = root / "PROJECT"
        if not path.is_file():
            raise ProjectFileError(
                f"{root}: not a kubeforge project (no PROJECT file); run `kubeforge init` first"
            )
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ProjectFileError(f"{path}: cannot be read: {exc}") from None
        if not isinstance(data, dict):
            raise ProjectFileError(f"{path}: not a PROJECT file (expected a mapping)")
        extra = {
            k: v
            for k, v in data.items()
            if k not in ("domain", "projectName", "layout", "resources", "version")
        }
        resources = data.get("resources") or []
        if not isinstance(resources, list) or not all(isinstance(r, dict) for r in resources):
            raise ProjectFileError(f"{path}: resources must be a list of mappings")
        return cls(
            domain=str(data.get("domain") or ""),
            project_name=str(data.get("projectName") or root.name),
            layout=list(data.get("layout") or [LAYOUT]),
            resources=resources,
            extra=extra,
        )

    def render(self) -> str:
        body: dict[str, Any] = {**self.extra, "layout": self.layout}
        if self.domain:
            body["domain"] = self.domain
        body["projectName"] = self.project_name
        if self.resources:
            body["resources"] = self.resources
        text = yaml.safe_dump(body, sort_keys=True, default_flow_style=False, allow_unicode=True)
        # kubebuilder writes the version as a double-quoted string.
        return HEADER + text + 'version: "3"\n'

    @property
    def cli_version(self) -> str:
        """The kubeforge release whose scaffold the project has ("" when not recorded)."""
        return str(self.extra.get("cliVersion") or "")

    @cli_version.setter
    def cli_version(self, version: str) -> None:
        self.extra["cliVersion"] = version

    @property
    def multigroup(self) -> bool:
        """kubebuilder's `multigroup: true`: new kinds go to api/<group>/<version>/ and the
        group's other directories (kubeforge._scaffold.layout)."""
        return bool(self.extra.get("multigroup"))

    @multigroup.setter
    def multigroup(self, on: bool) -> None:
        # kubebuilder writes the key only when it is true (omitempty).
        if on:
            self.extra["multigroup"] = True
        else:
            self.extra.pop("multigroup", None)

    def find(self, group: str, version: str, kind: str) -> dict[str, Any] | None:
        """The entry of a group (as given to `create api`), version and kind."""
        for entry in self.resources:
            if (
                entry.get("group", "") == group
                and entry.get("version") == version
                and entry.get("kind") == kind
            ):
                return entry
        return None

    def versions_of(self, group: str, kind: str) -> list[dict[str, Any]]:
        """The entries of a kind in every version."""
        return [e for e in self.resources if e.get("group", "") == group and e.get("kind") == kind]
