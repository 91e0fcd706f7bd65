"""cnat v1: the hub and storage version of At."""

from api.v1.at import At, AtSpec, AtStatus

__all__ = ["At", "AtSpec", "AtStatus"]
