"""Admission: calling mutating and validating webhooks, and ValidatingAdmissionPolicies.

`chain` holds the server's admission (configurations kept compiled, the per-request entry
points), `matching` the rules and selectors, `expressions` the CEL environment, `webhooks`
and `policy` the two kinds of admission, `review` and `client` the calls to webhooks.
"""

from kubeforge.apiserver.admission.attributes import Attributes
from kubeforge.apiserver.admission.chain import Admission, RequestAdmission
from kubeforge.apiserver.admission.expressions import Authorize, allow_all
from kubeforge.apiserver.webhookclient.client import ServiceResolver

__all__ = [
    "Admission",
    "Attributes",
    "Authorize",
    "RequestAdmission",
    "ServiceResolver",
    "allow_all",
]
