"""The verbs, one module per family as k8s.io/apiserver pkg/endpoints/handlers has them:
`get.py` (get, list), `create.py`, `update.py`, `patch.py` (patches and server-side apply),
`delete.py` (delete, deletecollection), `watch.py`, `subresources.py` (with `scale.py`,
`pods.py`, `connect.py`); and the write pipeline they all end in (`writes.py`, as the
generic registry store). `call.py` is the request as they see it, `exchange.py` how a body
is read and an answer written.

What the stages above provide reaches them through protocols declared here (admission:
`call.Admissions`, `call.Admitting`; reviews, bindings, token requests, ServiceAccount
waits: `create.py`, `subresources.py`) or as the mutators, validators and admitters of the
write pipeline.

May import the stages below it: discovery, printing, storage, types, webhookclient, request,
http.
"""
