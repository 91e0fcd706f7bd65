"""webhookclient."""
