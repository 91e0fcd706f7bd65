"""CustomResourceDefinitions from resource classes, written the way controller-gen writes them.

    crds = group_crds(registered_resources())      # one CRD per (group, kind)
    text = dump_yaml(crds[0])                       # what config/crd/bases/<file> holds

Every class decorated with `@resource` is one version of a kind; the classes of one kind make
one CRD (versions in Kubernetes priority order, exactly one of them stored). When the versions
are a hub and its spokes (_api/conversion.py), the CRD converts between them through the
conversion webhook (`spec.conversion`, strategy Webhook). The YAML is deterministic: keys
sorted, block style, no line wrapping, multi-line text as literal blocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from kubeforge._api.conversion import conversion_versions
from kubeforge._api.machinery.versions import version_priority
from kubeforge._api.meta import PrinterColumn, ResourceInfo, WebhookConversion
from kubeforge._api.schema import schema_for_model
from kubeforge._version import __version__

__all__ = [
    "VERSION_ANNOTATION",
    "crd_filename",
    "crd_for",
    "dump_yaml",
    "group_crds",
    "resource_info",
]

VERSION_ANNOTATION = "kubeforge.dev/version"


def resource_info(cls: type) -> ResourceInfo:
    """The ResourceInfo `@resource` stored on a class (TypeError for other classes)."""
    info = getattr(cls, "__kubeforge__", None)
    if not isinstance(info, ResourceInfo):
        name = getattr(cls, "__qualname__", repr(cls))
        raise TypeError(f"{name} is not a custom resource class: decorate it with @resource")
    return info


def crd_for(resource_classes: Sequence[type]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind, given one class per version."""
    classes = list(resource_classes)
    if not classes:
        raise ValueError("a CRD needs at least one resource class")
    infos = [resource_info(cls) for cls in classes]
    names = ", ".join(cls.__qualname__ for cls in classes)
    first = infos[0]
    group, kind = first.gvk.group, first.gvk.kind
    if any((i.gvk.group, i.gvk.kind) != (group, kind) for i in infos):
        raise ValueError(f"{names}: the versions of one CRD must share group and kind")
    versions = [i.gvk.version for i in infos]
    if len(set(versions)) != len(versions):
        raise ValueError(f"{names}: each version of {kind}.{group} may be declared only once")
    for attr in ("plural", "namespaced"):
        if len({getattr(i, attr) for i in infos}) != 1:
            raise ValueError(f"{names}: the versions of {kind}.{group} disagree on {attr}")
    stored = [cls for cls, i in zip(classes, infos, strict=True) if i.storage]
    if len(classes) == 1:
        storage_class = classes[0]  # a lone version is the storage version
    elif len(stored) == 1:
        storage_class = stored[0]
    else:
        which = ", ".join(c.__qualname__ for c in stored) if stored else "none"
        raise ValueError(
            f"{names}: exactly one version of {kind}.{group} must be the storage version "
            f"(marked as storage: {which}); pass storage=False to the others"
        )
    storage = resource_info(storage_class)
    order = sorted(
        zip(classes, infos, strict=True), key=lambda pair: version_priority(pair[1].gvk.version)
    )
    spec: dict[str, Any] = {
        "group": group,
        "names": _names(storage, infos),
        "scope": "Namespaced" if storage.namespaced else "Cluster",
        "versions": [_version(cls, info, cls is storage_class) for cls, info in order],
    }
    try:
        convertible = conversion_versions(classes) is not None
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    conversion = _conversion(names, [i.conversion for i in infos], convertible)
    if conversion is not None:
        spec["conversion"] = conversion
    annotations = {VERSION_ANNOTATION: __version__}
    labels: dict[str, str] = {}
    # The storage version's values win over the others'.
    for info in [*infos, storage]:
        annotations.update(info.crd_annotations)
        labels.update(info.crd_labels)
    metadata: dict[str, Any] = {"name": f"{storage.plural}.{group}", "annotations": annotations}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": spec,
    }


def _names(storage: ResourceInfo, infos: list[ResourceInfo]) -> dict[str, Any]:
    kind = storage.gvk.kind
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": storage.plural,
        "singular": storage.singular or kind.lower(),
    }
    short_names = _union([storage.short_names, *(i.short_names for i in infos)])
    if short_names:
        names["shortNames"] = short_names
    categories = _union([storage.categories, *(i.categories for i in infos)])
    if categories:
        names["categories"] = categories
    return names


def _union(groups: Iterable[Iterable[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for group in groups:
        for item in group:
            seen.setdefault(item, None)
    return list(seen)


def _version(cls: type, info: ResourceInfo, storage: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": info.gvk.version,
        "served": info.served,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema_for_model(cls)},
    }
    if info.deprecated:
        version["deprecated"] = True
        if info.deprecation_warning:
            version["deprecationWarning"] = info.deprecation_warning
    if info.printer_columns:
        version["additionalPrinterColumns"] = [_column(c) for c in info.printer_columns]
    subresources: dict[str, Any] = {}
    if info.status_subresource:
        subresources["status"] = {}
    if info.scale is not None:
        scale: dict[str, Any] = {
            "specReplicasPath": info.scale.spec_replicas_path,
            "statusReplicasPath": info.scale.status_replicas_path,
        }
        if info.scale.label_selector_path:
            scale["labelSelectorPath"] = info.scale.label_selector_path
        subresources["scale"] = scale
    if subresources:
        version["subresources"] = subresources
    if info.selectable_fields:
        version["selectableFields"] = [{"jsonPath": p} for p in info.selectable_fields]
    return version


def _column(column: PrinterColumn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "type": column.type, "jsonPath": column.json_path}
    if column.format:
        out["format"] = column.format
    if column.priority:
        out["priority"] = column.priority
    if column.description:
        out["description"] = column.description
    return out


def _conversion(
    names: str, choices: list[WebhookConversion | None], convertible: bool
) -> dict[str, Any] | None:
    """The Webhook strategy when the versions convert through a hub (the webhook's options
    from `conversion=` on any of them, or the defaults) or when a version asks for it."""
    webhooks = {c for c in choices if c is not None}
    if not webhooks:
        if not convertible:
            return None
        webhooks = {WebhookConversion()}
    if len(webhooks) > 1:
        raise ValueError(f"{names}: the versions configure different conversion webhooks")
    hook = webhooks.pop()
    return {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": hook.service_name,
                    "namespace": hook.service_namespace,
                    "path": hook.path,
                    "port": hook.port,
                }
            },
            "conversionReviewVersions": list(hook.review_versions),
        },
    }


def group_crds(classes: Iterable[type]) -> list[dict[str, Any]]:
    """One CRD per (group, kind) of the given resource classes, sorted by CRD name."""
    kinds: dict[tuple[str, str], list[type]] = {}
    for cls in classes:
        gvk = resource_info(cls).gvk
        kinds.setdefault((gvk.group, gvk.kind), []).append(cls)
    crds = [crd_for(members) for members in kinds.values()]
    return sorted(crds, key=lambda crd: str(crd["metadata"]["name"]))


def crd_filename(crd: Mapping[str, Any]) -> str:
    """`<group>_<plural>.yaml`, controller-gen's file name for a CRD."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


class _Dumper(yaml.SafeDumper):
    """Block style, and no anchors for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_STR_TAG = "tag:yaml.org,2002:str"
# Plain scalars Go's YAML reader would take for something other than a string.
_TYPED_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "null", "timestamp", "merge")
)


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # As Go's YAML writer (sigs.k8s.io/yaml) has them: multi-line text as literal blocks, and
    # strings that would read back as another type ("", "true", "1", "null") double-quoted;
    # other strings that cannot stay plain get the single quotes both writers choose.
    if "\n" in data:
        style: str | None = "|"
    elif dumper.resolve(yaml.ScalarNode, data, (True, False)) in _TYPED_TAGS:  # type: ignore[no-untyped-call]
        style = '"'
    else:
        style = None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(crd: Mapping[str, Any]) -> str:
    """The CRD as controller-gen-style YAML: a leading `---`, sorted keys, no line wrapping."""
    body = yaml.dump(
        crd,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
    return "---\n" + body
