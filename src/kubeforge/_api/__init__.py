"""Internal: the user's authoring vocabulary: typed resources (`resource`, `model`, `meta`),
schema markers, conversion hubs and spokes, webhook and RBAC declarations, and the manifests
made from them (CRDs from classes, `schema`, `crd`). Pure: no I/O. Its public names are
exported by `kubeforge`, `kubeforge.markers`, `kubeforge.meta`, `kubeforge.conversion` and
`kubeforge.webhook`.

What the server and runtime use to process objects (structural schemas, CEL, JSONPath,
selectors, quantities, timestamps, ...) lives below it in `kubeforge._api.machinery`; this
package may import that one, never the reverse.
"""
