"""HTTP/1.1 for the API server: framing on llhttp (through httptools), keep-alive and
pipelining, `Expect: 100-continue`, whole responses and chunked streams, size limits,
timeouts and the connection cap (decisions 0012 and 0013).

It knows nothing of Kubernetes: it hands each request to one callable (the router) and
writes what that returns. May import: nothing else of the API server.
"""
