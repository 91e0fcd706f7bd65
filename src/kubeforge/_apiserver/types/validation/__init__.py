"""Semantic validation of built-in objects, one module per API group as kube-apiserver keeps
it (`pkg/apis/<group>/validation`): the checks a real API server makes beyond the OpenAPI
schema, with its field paths and wording.

Objects arrive decoded and defaulted (see `types/defaults.py`); object metadata is checked
elsewhere (`kubeforge._api.machinery.names`). Bad values are shown the way a 1.33 server
prints them: strings quoted, numbers plain, maps, lists and structs as Go literals.

`registry.VALIDATORS` gives each kind's pair of validators (new object, update); `common`
holds what the groups share, `core_pods` the pod spec and template every workload embeds.
Custom resources are checked against their CRD's schema instead
(`kubeforge._api.machinery.crvalidation`); `_apiserver/types/typesupport.py` chooses between
the two.
"""
