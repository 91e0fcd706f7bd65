"""Stale state: the operator counts its children in the cache, which may not show a child
it created a moment ago, and makes another under a generated name."""
