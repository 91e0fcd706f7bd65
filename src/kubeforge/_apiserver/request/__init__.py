"""What a request asks and how it is read: the resource it addresses (`info.py`), its query
parameters, the user it comes from, its body decoded as kube-apiserver decodes JSON, YAML
and protobuf (with the nesting limit and Go's own error wording), DeleteOptions, ObjectMeta
decoded as the typed server decodes it; and the answer's vocabulary: media-type
negotiation, `Warning` headers, Status errors (`errors.py`), the request metrics.

The vocabulary every stage above speaks.

May import the stages below it: http.
"""
