"""The types the server serves, and what it knows of each: the served resources and their
registry (`resource.py`, `registry.py`, `builtin_types.py`), the built-in schemas and typed
decoding (`builtin_schemas.py`, `typesupport.py`, `customobjects.py`), defaults, per-kind
strategies and semantic validation (`validation/`, one module per API group), conversion
between a CRD's versions (`conversion.py`), and the environment admission expressions
compile in (`admissioncel.py`).

Nothing here reads or writes the store.

May import the stages below it: webhookclient, request, http.
"""
