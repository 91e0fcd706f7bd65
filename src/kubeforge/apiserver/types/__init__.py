"""types."""
