"""The finalizer first, then the record (kubeforge.with_finalizer): the same operator as
finalizer_order's correct twin."""

from __future__ import annotations

from finalizer_order.correct import WidgetReconciler, setup

__all__ = ["WidgetReconciler", "setup"]
