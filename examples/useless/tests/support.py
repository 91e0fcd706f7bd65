"""What the tests share: manifests, and reading kubectl's tables by column."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import kubeforge
from kubeforge.testing import Kubectl, KubectlResult

from main import setup

Row = dict[str, str]


def machine(name: str, *, switches: int | str = 1, position: str = "down") -> str:
    """A Machine manifest for `kubectl apply`."""
    return f"""
apiVersion: useless.container.training/v1alpha1
kind: Machine
metadata:
  name: {name}
spec:
  switchPosition: {position}
  switches: {switches}
"""


def with_interval(seconds: float) -> Callable[[kubeforge.Manager], None]:
    """main.setup with a shorter flip interval, for tests that are not about the 5 s."""
    return functools.partial(setup, interval=seconds)


def table(result: KubectlResult) -> list[Row]:
    """kubectl's table as one dict per row, by column header (an empty cell, such as a SEEN
    column with nothing to show, stays an empty string)."""
    rows = result.rows()
    if not rows:
        return []  # "No resources found" goes to stderr
    header, *cells = rows
    return [dict(zip(header, row, strict=True)) for row in cells]


async def machine_row(kubectl: Kubectl, name: str, *args: str) -> Row:
    """`kubectl get machine NAME` as a row."""
    (row,) = table(await kubectl.run("get", "machine", name, *args))
    return row


async def switch_rows(kubectl: Kubectl, machine_name: str) -> list[Row]:
    """`kubectl get switches -l machine=NAME`, oldest first (as positions lists them)."""
    found = await kubectl.json("get", "switches", "-l", f"machine={machine_name}")
    order = {
        item["metadata"]["name"]: (item["metadata"]["creationTimestamp"], item["metadata"]["name"])
        for item in found["items"]
    }
    rows = table(await kubectl.run("get", "switches", "-l", f"machine={machine_name}"))
    return sorted(rows, key=lambda row: order.get(row["NAME"], ("", "")))


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference marked controller, from `kubectl get -o json`."""
    refs = obj["metadata"].get("ownerReferences") or []
    return next((ref for ref in refs if ref.get("controller")), None)
