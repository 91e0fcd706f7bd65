"""Where a kind's files go: kubebuilder's single-group layout, or its multigroup layout
(PROJECT's `multigroup: true`, set by `kubeforge edit --multigroup`).

                      single-group                        multigroup
    API types         api/<version>/<kind>.py             api/<group>/<version>/<kind>.py
    controller        controllers/<kind>.py               controllers/<group>/<kind>.py
    controller test   tests/test_<kind>.py                tests/<group>/test_<kind>.py
    webhooks          webhooks/<version>/<kind>.py        webhooks/<group>/<version>/<kind>.py
    helper roles      config/rbac/<kind>_admin_role.yaml  config/rbac/<group>_<kind>_admin_role.yaml
    role names        <kind>-admin-role                   <group>-<kind>-admin-role
    controller name   <kind>                              <group>-<kind>

as kubebuilder's templates place them when the project is multigroup (the MultiGroupMixin of
pkg/plugins/golang/v4/scaffolds/internal/templates and of the kustomize/v2 rbac templates;
the controller's name from pkg/model/resource/controller.go). The `<group>` of a directory is
the group as given to `create api`, made a Python package name (`ship-yard` -> `ship_yard`);
a kind of the empty group (the domain alone) keeps the single-group places, as kubebuilder's
`MultiGroup && Group != ""` does.

A kind keeps the layout it was scaffolded in: its PROJECT entries' `path` (`api/v1` or
`api/ship/v1`) says which, so a new version, controller or webhook of a kind goes beside its
existing files whatever `multigroup` says now; only new kinds follow `multigroup`.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from kubeforge._scaffold.projectfile import ProjectFile

__all__ = ["Placement", "group_package", "placement"]

_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")


def group_package(group: str) -> str:
    """The package name of a group's directories: its dots and dashes made underscores (a
    group is a DNS subdomain, a directory Python imports must be an identifier)."""
    name = _NOT_IDENTIFIER.sub("_", group)
    if name[:1].isdigit():
        name = "_" + name
    return name + "_" if keyword.iskeyword(name) else name


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the files of one kind are; `package` is its group's directory name in the
    multigroup layout, "" in the single-group layout."""

    group: str
    kind: str
    package: str = ""

    @property
    def grouped(self) -> bool:
        return bool(self.package)

    @property
    def module(self) -> str:
        """The kind's module name (kubebuilder's lowercase kind)."""
        return self.kind.lower()

    @property
    def api_parent(self) -> str:
        """The package holding the kind's version packages: `api` or `api.<group>`."""
        return f"api.{self.package}" if self.grouped else "api"

    def api_package(self, version: str) -> str:
        return f"{self.api_parent}.{version}"

    def api_dir(self, version: str) -> str:
        return self.api_package(version).replace(".", "/")

    @property
    def controller_package(self) -> str:
        return f"controllers.{self.package}" if self.grouped else "controllers"

    @property
    def controller_module(self) -> str:
        return f"{self.controller_package}.{self.module}"

    @property
    def tests_dir(self) -> str:
        return f"tests/{self.package}" if self.grouped else "tests"

    def webhook_package(self, version: str) -> str:
        return f"webhooks.{self.package}.{version}" if self.grouped else f"webhooks.{version}"

    def webhook_dir(self, version: str) -> str:
        return self.webhook_package(version).replace(".", "/")

    @property
    def role_stem(self) -> str:
        """The helper roles' file stem: `<kind>`, or `<group>_<kind>` (kubebuilder's
        crd_admin_role.go names the file by the group as given)."""
        return f"{self.group}_{self.module}" if self.grouped else self.module

    @property
    def role_prefix(self) -> str:
        """The helper roles' name before `-admin-role`: `<kind>` or `<group>-<kind>`."""
        return f"{self.group}-{self.module}" if self.grouped else self.module

    @property
    def controller_name(self) -> str | None:
        """The controller's name when it is not the builder's default (the kind): kubebuilder
        names a multigroup project's controllers `<group>-<kind>` so that one Kind in two
        groups gives two names."""
        return f"{self.group}-{self.module}" if self.grouped else None

    def alias(self, what: str) -> str:
        """The name main.py imports one of the kind's modules under in the multigroup layout
        (`ship_v1`, `ship_frigate`), as kubebuilder's cmd/main.go imports `shipv1`: the same
        Kind may come from two groups."""
        return f"{self.package}_{what}"


def placement(project: ProjectFile, group: str, kind: str) -> Placement:
    """Where the files of `kind` in `group` are (an existing kind) or go (a new one)."""
    for entry in project.versions_of(group, kind):
        parts = str(entry.get("path") or "").split("/")
        if len(parts) == 3 and parts[0] == "api":
            return Placement(group, kind, parts[1])
        if len(parts) == 2 and parts[0] == "api":
            return Placement(group, kind)
    if project.multigroup and group:
        return Placement(group, kind, group_package(group))
    return Placement(group, kind)
