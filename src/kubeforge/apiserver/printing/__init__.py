"""printing."""
