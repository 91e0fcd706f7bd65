"""Tests of fleet, each on its own development cluster."""
