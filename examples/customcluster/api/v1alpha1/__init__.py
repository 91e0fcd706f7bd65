"""customcluster v1alpha1."""

from api.v1alpha1.customcluster import Customcluster, CustomclusterSpec, CustomclusterStatus

__all__ = ["Customcluster", "CustomclusterSpec", "CustomclusterStatus"]
