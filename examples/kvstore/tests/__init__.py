"""Tests of kvstore, each on its own development cluster."""
