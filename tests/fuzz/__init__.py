"""Property-based fuzzing of the API server over HTTP (Hypothesis): hostile bodies, patches
and query strings for built-in kinds and a custom resource, and the invariants the server
must keep under them. Used by tests/fuzz/test_fuzz_apiserver.py (bounded) and
tools/fuzz_apiserver.py (a long run)."""
