"""Internal: the Kubernetes client behind `kubeforge.client` and the root's `Client`:
configuration and credentials (`config`, `auth`), the HTTP transport (`transport`,
`http1`), discovery, the verbs (`protocols` defines each once, `options` their options,
`client` implements them, `forwarding` forwards them), watches, errors, retries and storage
migration. Imports `kubeforge._api` only.
"""
