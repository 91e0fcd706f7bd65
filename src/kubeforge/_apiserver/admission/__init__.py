"""Admission: calling mutating and validating webhooks, and ValidatingAdmissionPolicies.

`chain` holds the server's admission (configurations kept compiled, the per-request entry
points the handlers call through `handlers/call.py`'s protocols), `matching` the rules and
selectors, `expressions` the evaluation of CEL, `webhooks` and `policy` the two kinds of
admission, `review` the AdmissionReviews sent and read.

May import the stages below it: handlers, discovery, printing, storage, types,
webhookclient, request, http.
"""

from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.chain import Admission, RequestAdmission
from kubeforge._apiserver.admission.expressions import Authorize, allow_all

__all__ = ["Admission", "Attributes", "Authorize", "RequestAdmission", "allow_all"]
