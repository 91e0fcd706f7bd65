"""The documents that describe the API: discovery (`documents.py`: `/api`, `/apis`, group
versions, aggregated discovery), OpenAPI v3 (`openapi.py`) and v2 (`openapiv2.py`, with its
protobuf encoding in `openapiv2_proto.py`), all built from the registry of served types.

May import the stages below it: printing, storage, types, webhookclient, request, http.
"""
