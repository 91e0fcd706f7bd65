"""HTTP/1.1 for the API server (decisions 0012 and 0013). It knows nothing of Kubernetes: it
hands each request to one callable (the router) and writes what that returns.

- `messages.py`: what a handler sees — the `Request` (its `Headers`, body, query, client
  certificate) and its answers: a whole `Response`, a chunked `ResponseStream` (watch,
  logs), or the connection switched to another protocol (`Upgraded`: exec, attach,
  port-forward). A message knows its connection only as the `Connection` protocol it declares.
- `server.py`: `HTTPServer` and its connections — framing on llhttp (through httptools),
  keep-alive and pipelining, `Expect: 100-continue`, flow control, upgrades, the size limits,
  timeouts and the connection cap (`ConnectionLimits`, fitted to the open-file limit).

May import: nothing else of the API server.
"""
