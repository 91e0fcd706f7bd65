"""watcher v1alpha1."""

from api.v1alpha1.watcher import Watcher, WatcherSpec, WatcherStatus

__all__ = ["Watcher", "WatcherSpec", "WatcherStatus"]
