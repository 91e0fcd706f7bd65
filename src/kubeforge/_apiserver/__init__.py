"""Internal: the embedded Kubernetes API server behind `kubeforge.apiserver`.

Its stages are sub-packages, each importing only those below it (docs/concepts.md draws
them; tests/test_layering.py holds the code to it), from the bottom: `http` (framing),
`request` (what is asked, decoded; Status errors), `webhookclient` (calling webhooks),
`types` (served types, schemas, defaults, strategies, validation, conversion), `storage`
(store, watch fan-out, persistence, managed fields, patches, commits), `printing` (tables),
`discovery` (discovery and OpenAPI documents), `handlers` (one module per verb family, the
write pipeline), `admission`, `auth` and `controllers` (the server's own loops). The modules
here are the top: `server` puts the stages together, `router` sends each request to its
stage, `config`, `tls` and `kubeconfig` are the server's settings and credentials.
"""
