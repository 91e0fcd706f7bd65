"""`kubectl get` columns of the kinds that configure the control plane: RBAC bindings,
admission webhook configurations and policies, CertificateSigningRequests, APIServices,
API Priority and Fairness, Leases, PriorityClasses and RuntimeClasses, as
pkg/printers/internalversion/printers.go prints them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, name_of
from kubeforge._api.machinery.durations import human_duration
from kubeforge._api.machinery.selectors import SelectorError, selector_from_dict
from kubeforge._apiserver.printing.columns import AGE, NAME, Cells, Column, Obj, Printer, object_age

__all__ = ["PRINTERS"]


def _priority_class_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        as_int(obj.get("value"), 0),
        bool(obj.get("globalDefault")),
        object_age(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


def _lease_cells(obj: Obj, now: datetime) -> Cells:
    holder = as_dict(obj.get("spec")).get("holderIdentity")
    return [name_of(obj), "" if holder is None else str(holder), object_age(obj, now)]


def _binding_cells(obj: Obj, now: datetime) -> Cells:
    ref = as_dict(obj.get("roleRef"))
    users, groups, accounts = [], [], []
    for subject in as_list(obj.get("subjects")):
        subject = as_dict(subject)
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        name_of(obj),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        object_age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _binding_columns(kind: str) -> tuple[Column, ...]:
    return (
        NAME,
        Column("Role", "string", f"The role the {kind} grants, as Kind/name."),
        AGE,
        Column("Users", "string", f"Users named as subjects of the {kind}.", 1),
        Column("Groups", "string", f"Groups named as subjects of the {kind}.", 1),
        Column(
            "ServiceAccounts",
            "string",
            f"Service accounts named as subjects of the {kind}, as namespace/name.",
            1,
        ),
    )


def _webhook_configuration_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(as_list(obj.get("webhooks"))), object_age(obj, now)]


_WEBHOOK_COLUMNS = (
    NAME,
    Column("Webhooks", "integer", "Number of webhooks the configuration declares."),
    AGE,
)


def _admission_policy_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    param = spec.get("paramKind")
    kind = "<unset>"
    if isinstance(param, dict):
        kind = f"{param.get('apiVersion', '')}/{param.get('kind', '')}"
    return [name_of(obj), len(as_list(spec.get("validations"))), kind, object_age(obj, now)]


def _admission_policy_binding_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            # The param's scope is not known here: a name without namespace shows `*/`.
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), dict):
            try:
                param = str(selector_from_dict(ref["selector"]))
            except (SelectorError, KeyError, TypeError):
                param = "<invalid>"
    return [name_of(obj), spec.get("policyName", ""), param, object_age(obj, now)]


def _api_service_cells(obj: Obj, now: datetime) -> Cells:
    # As kube-aggregator's pkg/registry/apiservice/etcd/etcd.go prints them.
    service = as_dict(obj.get("spec")).get("service")
    where = (
        f"{as_dict(service).get('namespace') or ''}/{as_dict(service).get('name') or ''}"
        if isinstance(service, dict)
        else "Local"
    )
    available = "Unknown"
    for condition in as_list(as_dict(obj.get("status")).get("conditions")):
        condition = as_dict(condition)
        if condition.get("type") == "Available":
            available = str(condition.get("status") or "")
            if available != "True" and condition.get("reason"):
                available += f" ({condition['reason']})"
            break
    return [name_of(obj), where, available, object_age(obj, now)]


def _csr_condition(obj: Obj) -> str:
    """Pending, Approved or Denied, with `,Failed` and `,Issued` as they apply."""
    kinds = {as_dict(c).get("type") for c in as_list(as_dict(obj.get("status")).get("conditions"))}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if as_dict(obj.get("status")).get("certificate"):
        text += ",Issued"
    return text


def _csr_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    seconds = as_int(spec.get("expirationSeconds"))
    return [
        name_of(obj),
        object_age(obj, now),
        str(spec.get("signerName") or "<none>"),
        str(spec.get("username") or ""),
        "<none>" if seconds is None else human_duration(seconds),
        _csr_condition(obj),
    ]


def _flow_schema_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    dangling = "?"
    for condition in as_list(as_dict(obj.get("status")).get("conditions")):
        if as_dict(condition).get("type") == "Dangling":
            dangling = str(as_dict(condition).get("status") or "")
            break
    return [
        name_of(obj),
        str(as_dict(spec.get("priorityLevelConfiguration")).get("name") or ""),
        as_int(spec.get("matchingPrecedence"), 0),
        str(as_dict(method).get("type") or "") if isinstance(method, dict) else "<none>",
        object_age(obj, now),
        dangling,
    ]


def _priority_level_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    length: Any = "<none>"
    limited = spec.get("limited")
    if isinstance(limited, dict):
        shares = as_int(limited.get("nominalConcurrencyShares"), 0)
        queuing = as_dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            queues = as_int(queuing.get("queues"), 0)
            hand = as_int(queuing.get("handSize"), 0)
            length = as_int(queuing.get("queueLengthLimit"), 0)
    return [
        name_of(obj),
        str(spec.get("type") or ""),
        shares,
        queues,
        hand,
        length,
        object_age(obj, now),
    ]


def _runtime_class_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), str(obj.get("handler") or ""), object_age(obj, now)]


PRINTERS: dict[tuple[str, str], Printer] = {
    ("scheduling.k8s.io", "PriorityClass"): Printer(
        (
            NAME,
            Column("Value", "integer", "The priority pods of this class receive."),
            Column("Global-Default", "boolean", "Whether pods without a class get this one."),
            AGE,
            Column("PreemptionPolicy", "string", "Whether pods of the class may preempt."),
        ),
        _priority_class_cells,
    ),
    ("coordination.k8s.io", "Lease"): Printer(
        (NAME, Column("Holder", "string", "The identity currently holding the lease."), AGE),
        _lease_cells,
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): Printer(
        _binding_columns("role binding"), _binding_cells
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): Printer(
        _binding_columns("cluster role binding"), _binding_cells
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): Printer(
        _WEBHOOK_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): Printer(
        _WEBHOOK_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): Printer(
        (
            NAME,
            Column("Validations", "integer", "Number of validation rules the policy defines."),
            Column("ParamKind", "string", "The kind of resource that parameterizes the policy."),
            AGE,
        ),
        _admission_policy_cells,
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): Printer(
        (
            NAME,
            Column("PolicyName", "string", "The policy the binding binds."),
            Column("ParamRef", "string", "The param resource the binding uses."),
            AGE,
        ),
        _admission_policy_binding_cells,
    ),
    ("apiregistration.k8s.io", "APIService"): Printer(
        (
            NAME,
            Column("Service", "string", "The Service serving the API, or Local."),
            Column("Available", "string", "Whether the API is available (and why not)."),
            AGE,
        ),
        _api_service_cells,
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"): Printer(
        (
            NAME,
            AGE,
            Column("SignerName", "string", "The signer asked to sign the request."),
            Column("Requestor", "string", "The user who created the request."),
            Column("RequestedDuration", "string", "How long the certificate is asked to last."),
            Column("Condition", "string", "Approval, failure and issuance of the request."),
        ),
        _csr_cells,
    ),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): Printer(
        (
            NAME,
            Column("PriorityLevel", "string", "The priority level matching requests get."),
            Column("MatchingPrecedence", "string", "Lower values are matched first."),
            Column("DistinguisherMethod", "string", "How matching requests form flows."),
            AGE,
            Column("MissingPL", "string", "Whether the priority level is missing."),
        ),
        _flow_schema_cells,
    ),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): Printer(
        (
            NAME,
            Column("Type", "string", "Exempt, or Limited by concurrency."),
            Column("NominalConcurrencyShares", "string", "The level's share of concurrency."),
            Column("Queues", "string", "Number of queues of the level."),
            Column("HandSize", "string", "Queues each flow is dealt."),
            Column("QueueLengthLimit", "string", "Requests a queue may hold."),
            AGE,
        ),
        _priority_level_cells,
    ),
    ("node.k8s.io", "RuntimeClass"): Printer(
        (NAME, Column("Handler", "string", "The container runtime handler."), AGE),
        _runtime_class_cells,
    ),
}
