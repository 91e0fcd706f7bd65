"""Internal: the operator's side of admission and conversion webhooks.

- review.py: AdmissionReview, AdmissionRequest and AdmissionResponse (admission.k8s.io/v1)
- admission.py: the raw handler contract, Denied / InvalidObject, admission_request()
- typed.py: Defaulter and Validator for one kind
- patch.py: JSON Patches from objects (the defaulter's changes only)
- conversion.py: the conversion webhook (ConversionReviews, hub and spokes)
- builder.py: manager.webhook_for(Kind).defaulter(...).validator(...).complete()
- server.py, certwatcher.py, metrics.py: the HTTPS server the manager runs

Imports `kubeforge._api` only; the public names are exported by `kubeforge.webhook` and
`kubeforge.conversion`.
"""
