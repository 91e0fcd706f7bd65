"""The kinds the corpus's operators share: a namespaced Widget (what a user asks for) and a
cluster-scoped Record (something outside the Widget's namespace that only a finalizer can
clean up, as a cloud resource would be)."""

from __future__ import annotations

from typing import Annotated, Literal

import kubeforge
from kubeforge import markers

GROUP = "corpus.kubeforge.dev"
FINALIZER = f"{GROUP}/cleanup"
WIDGET_LABEL = f"{GROUP}/widget"


class WidgetSpec(kubeforge.Model):
    """What the user asks for."""

    mode: Literal["a", "b"] = "a"
    """Which flavour of child the widget has."""

    message: Annotated[str, markers.MaxLength(40)] = "hello"
    """What the child says."""

    seconds: Annotated[int, markers.Minimum(0), markers.Maximum(30)] = 1
    """How long the widget's pod runs (for the operators that run one)."""


class WidgetStatus(kubeforge.Model):
    """What the operator did."""

    phase: str | None = None
    child: str | None = None


@kubeforge.resource(group=GROUP, version="v1")
class Widget(kubeforge.Resource[WidgetSpec, WidgetStatus]):
    """A user's request for a child object."""


class RecordSpec(kubeforge.Model):
    """Which widget the record stands for."""

    widget: str = ""


class RecordStatus(kubeforge.Model):
    """Nothing to report."""


@kubeforge.resource(group=GROUP, version="v1", scope="Cluster")
class Record(kubeforge.Resource[RecordSpec, RecordStatus]):
    """A cluster-wide record of a widget: not garbage-collected with it."""


def record_name(widget: Widget) -> str:
    """The record of a widget: its namespace and name."""
    return f"{widget.metadata.namespace}.{widget.metadata.name}"


def key(widget: Widget) -> str:
    return f"{widget.metadata.namespace}/{widget.metadata.name}"
