"""Calling webhooks: the HTTPS client that posts AdmissionReviews and ConversionReviews
(`client.py`), and where a webhook's Service reference leads (`services.py`).

Admission (`admission/`) and CRD conversion (`types/conversion.py`) both call webhooks
through one client, as kube-apiserver's k8s.io/apiserver pkg/util/webhook serves both.

May import the stages below it: request, http.
"""
