"""Internal: the schema machinery below the authoring vocabulary: what the API server, the
client and the runtime use to process Kubernetes objects, never what a user writes in a
types file.

It owns structural schemas and their checks (`structural`), custom objects against their
CRD's schema (`crvalidation`, with the compiled schema in `schemanode`, string formats in
`formats`, the extension checks in `schemaextensions`, CEL rules in `cel` and `schemarules`,
`pruning` and `defaulting`), JSONPath, label and field selectors, quantities, timestamps,
durations, names and metadata rules, field errors, values shown as Go prints them, JSON
accessors, compact JSON, schema views, the built-in type definitions, API version ordering
and certificate generation.

It imports nothing of kubeforge but `_version` and itself: `kubeforge._api` (the
authoring vocabulary) builds on it, never the other way round.
"""
