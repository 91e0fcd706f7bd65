"""API types of this project."""
