"""cnat v1alpha1."""

from api.v1alpha1.at import At, AtSpec, AtStatus

__all__ = ["At", "AtSpec", "AtStatus"]
