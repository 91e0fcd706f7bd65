"""discovery."""
