"""The names a scaffold is built from, checked as kubebuilder checks them.

kubebuilder (pkg/model/resource/gvk.go) requires the qualified group (`<group>.<domain>`) to
be a DNS-1123 subdomain, the kind's lowercase form to be a DNS-1035 label and its first
letter to be uppercase, and a project name to be a DNS-1123 label. Versions follow the
Kubernetes version scheme (`v1`, `v1alpha1`, `v2beta3`) so that API servers order them as
the CRD intends. Kinds are also Python class names here, so only letters and digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubeforge._api.machinery.names import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain
from kubeforge._api.resource import pluralize

__all__ = [
    "InvalidName",
    "ResourceNames",
    "check_domain",
    "check_group",
    "check_kind",
    "check_plural",
    "check_project_name",
    "check_version",
    "project_name_from",
]

_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?\Z")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*\Z")


class InvalidName(ValueError):
    """A name the scaffold cannot use; the message says which and why."""


def check_domain(domain: str) -> str:
    if not domain:
        raise InvalidName("--domain is required, e.g. --domain example.com")
    problems = is_dns1123_subdomain(domain)
    if problems:
        raise InvalidName(f"invalid domain {domain!r}: {problems[0]}")
    return domain


def check_project_name(name: str) -> str:
    problems = is_dns1123_label(name)
    if problems:
        raise InvalidName(
            f"invalid project name {name!r}: {problems[0]} (choose one with --project-name)"
        )
    return name


def project_name_from(directory_name: str) -> str:
    """A project name for a directory: kubebuilder takes the directory's name as it is; a
    name that is not a DNS-1123 label is lowercased and its other characters made dashes."""
    name = re.sub(r"[^a-z0-9-]+", "-", directory_name.lower()).strip("-")
    return name[:63].rstrip("-")


def check_group(group: str, domain: str) -> str:
    """The qualified group `<group>.<domain>` (or either alone when the other is empty)."""
    qualified = ".".join(part for part in (group, domain) if part)
    if not qualified:
        raise InvalidName("--group is required when the project has no domain")
    if group and is_dns1123_subdomain(group):
        raise InvalidName(
            f"invalid group {group!r}: {is_dns1123_subdomain(group)[0]} (e.g. 'batch', 'webapp')"
        )
    problems = is_dns1123_subdomain(qualified)
    if problems:
        raise InvalidName(f"invalid group {qualified!r}: {problems[0]}")
    return qualified


def check_version(version: str) -> str:
    if not _VERSION.match(version):
        raise InvalidName(
            f"invalid version {version!r}: must look like v1, v1alpha1 or v2beta3 "
            "(v<number>, optionally alpha<number> or beta<number>)"
        )
    return version


def check_kind(kind: str) -> str:
    if not kind:
        raise InvalidName("--kind is required, e.g. --kind CronJob")
    if not _KIND.match(kind):
        raise InvalidName(
            f"invalid kind {kind!r}: must be PascalCase, starting with an uppercase letter, "
            "letters and digits only (e.g. CronJob)"
        )
    problems = is_dns1035_label(kind.lower())
    if problems:
        raise InvalidName(f"invalid kind {kind!r}: its lowercase form {problems[0]}")
    return kind


def check_plural(plural: str) -> str:
    problems = is_dns1035_label(plural)
    if problems or plural != plural.lower():
        why = problems[0] if problems else "must be lowercase"
        raise InvalidName(f"invalid plural {plural!r}: {why}")
    return plural


@dataclass(frozen=True, slots=True)
class ResourceNames:
    """Every spelling of one kind a scaffold needs."""

    group: str  # as given: `ship`
    domain: str  # the project's: `example.com`
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @classmethod
    def of(
        cls,
        *,
        group: str,
        domain: str,
        version: str,
        kind: str,
        plural: str | None = None,
        namespaced: bool = True,
    ) -> ResourceNames:
        """Checked names (InvalidName naming the first bad one)."""
        check_group(group, domain)
        check_version(version)
        check_kind(kind)
        if plural is not None:
            check_plural(plural)
        return cls(group, domain, version, kind, plural or pluralize(kind), namespaced)

    @property
    def qualified_group(self) -> str:
        return ".".join(part for part in (self.group, self.domain) if part)

    @property
    def api_version(self) -> str:
        return f"{self.qualified_group}/{self.version}"

    @property
    def module(self) -> str:
        """The module name of the kind's files (kubebuilder's lowercase kind)."""
        return self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.qualified_group}"

    @property
    def sample_file(self) -> str:
        prefix = f"{self.group}_" if self.group else ""
        return f"{prefix}{self.version}_{self.module}.yaml"

    @property
    def default_plural(self) -> bool:
        return self.plural == pluralize(self.kind)
