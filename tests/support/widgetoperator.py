"""A small operator for the fault-injection tests: for each Widget it makes a ConfigMap
holding the widget's size, then writes the widget's status (Ready, with that size): two
dependent writes, each of which a fault can hit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import yaml

import kubeforge
from kubeforge.cluster import ClusterOptions
from kubeforge.testing import TestEnv
from tests.support.crds import widget, widget_crd

WIDGET = "example.com/v1/Widget"
CONFIGMAP = "v1/ConfigMap"
NAMESPACE = "faults"

__all__ = [
    "CONFIGMAP",
    "NAMESPACE",
    "WIDGET",
    "WidgetReconciler",
    "config_name",
    "ready",
    "setup_with",
    "widget",
    "widget_env",
]


def config_name(name: str) -> str:
    return f"{name}-config"


class WidgetReconciler(kubeforge.Reconciler):
    """Widget -> ConfigMap `<name>-config` (data.size), then status {phase: Ready,
    replicas: size}. `seen` lists (name, size) of every reconcile that read its widget."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        self.errors: list[BaseException] = []

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            return await self._reconcile(request)
        except Exception as exc:
            self.errors.append(exc)
            raise

    async def _reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            found = await self.client.get(WIDGET, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        size = int(found["spec"]["size"])
        self.seen.append((request.name, size))
        name = config_name(request.name)
        data = {"size": str(size)}
        try:
            config = await self.client.get(CONFIGMAP, name, namespace=request.namespace)
        except kubeforge.NotFound:
            config = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": request.namespace},
                "data": data,
            }
            kubeforge.set_controller_reference(found, config)
            await kubeforge.ignore_already_exists(self.client.create(config))
        else:
            if config.get("data") != data:
                config["data"] = data
                await self.client.update(config)
        status = {"phase": "Ready", "replicas": size}
        if found.get("status") != status:
            found["status"] = status
            await self.client.update_status(found)
        return None


def setup_with(reconciler: WidgetReconciler) -> Callable[[kubeforge.Manager], None]:
    """A project's setup(manager) registering `reconciler` for Widgets (and their
    ConfigMaps)."""

    def setup(manager: kubeforge.Manager) -> None:
        manager.controller().for_(WIDGET).owns(CONFIGMAP).named("widgets").complete(reconciler)

    return setup


@asynccontextmanager
async def widget_env(directory: Path) -> AsyncIterator[TestEnv]:
    """A bare test cluster with the Widget CRD, working in namespace `faults`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "widgets.yaml").write_text(yaml.safe_dump(widget_crd()))
    env = TestEnv(crd_paths=[directory], options=ClusterOptions.bare(), namespace=NAMESPACE)
    async with env:
        yield env


async def ready(client: kubeforge.Client, name: str, size: int = 1) -> bool:
    """Whether the widget's ConfigMap and status both say `size`."""
    found = await client.get(WIDGET, name)
    if (found.get("status") or {}) != {"phase": "Ready", "replicas": size}:
        return False
    try:
        config = await client.get(CONFIGMAP, config_name(name))
    except kubeforge.NotFound:
        return False
    return config.get("data") == {"size": str(size)}
