"""Validation of coordination.k8s.io/v1 Leases."""

from __future__ import annotations

from kubeforge._api.machinery.access import as_dict, as_int
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._apiserver.types.validation.common import Errors, Obj, nonnegative

__all__ = ["validate_lease", "validate_lease_update"]


def validate_lease(obj: Obj) -> list[FieldError]:
    """ValidateLeaseSpec: a positive duration and non-negative transitions."""
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    duration = as_int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(
            FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    errs += nonnegative("spec.leaseTransitions", spec.get("leaseTransitions"))
    return errs


def validate_lease_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Lease."""
    return validate_lease(obj)
