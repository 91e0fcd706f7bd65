"""Keeping objects: the versioned store with its watch fan-out (`store.py`), persistence
(`persistence.py`), lists and selectors (`listing.py`), commits and who hears of them
(`commits.py`), stored objects in the version asked for (`codec.py`), and what a write does
to an object before it is kept: patches, field ownership (`managedfields.py`), system
metadata, resourceVersion preconditions.

May import the stages below it: types, webhookclient, request, http.
"""
