"""fleet.kubeforge.dev/v1alpha1: the API types of this version."""

from api.v1alpha1.tenant import Tenant, TenantSpec, TenantStatus

# +kubeforge:scaffold:imports

__all__ = [
    "Tenant",
    "TenantSpec",
    "TenantStatus",
    # +kubeforge:scaffold:exports
]
