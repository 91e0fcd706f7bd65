"""The server's own loops, which kube-apiserver and kube-controller-manager run beside the
API: CRDs turned into served types and cleaned up (`crds.py`), owner-reference garbage
collection (`gc.py`), namespace deletion (`namespaces.py`), APIServices (`apiservices.py`),
API Priority and Fairness objects (`apfconfig.py`), Service cluster IPs and node ports and
the `kubernetes` Service (`allocators.py`), the default ServiceCIDR.

Each follows commits as an observer and writes through the write pipeline as `writer.Writer`
describes it.

May import the stages below it: auth, admission, handlers, discovery, printing, storage,
types, webhookclient, request, http.
"""
