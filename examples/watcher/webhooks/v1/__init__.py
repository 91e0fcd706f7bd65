"""Webhooks for the core/v1 API types."""
