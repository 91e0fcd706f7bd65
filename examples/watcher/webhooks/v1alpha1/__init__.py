"""Webhooks for the watch.kubeforge.dev/v1alpha1 API types."""
