"""store.kubeforge.dev/v1alpha1: the API types of this version."""

from api.v1alpha1.kvstore import BackupSpec, KVStore, KVStoreSpec, KVStoreStatus, Member

# +kubeforge:scaffold:imports

__all__ = [
    "BackupSpec",
    "KVStore",
    "KVStoreSpec",
    "KVStoreStatus",
    "Member",
    # +kubeforge:scaffold:exports
]
