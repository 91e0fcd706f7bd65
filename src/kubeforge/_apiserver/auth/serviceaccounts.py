"""ServiceAccounts at the API server: TokenRequest and the pod admission that mounts tokens.

TokenRequest (`POST serviceaccounts/<name>/token`) signs a token for the account, bound to
a Pod or Secret when asked. The admission step gives every new pod a service account
(`default` unless named) that must exist and, unless automounting is turned off on the pod
or the account, the projected `kube-api-access-<random>` volume (token, ca.crt,
namespace) mounted at /var/run/secrets/kubernetes.io/serviceaccount in each container, as
kube-apiserver's ServiceAccount admission plugin does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from typing import Any

from kubeforge._api.machinery.timestamps import format_time, now_rfc3339
from kubeforge._apiserver.auth.tokenrequest import read_token_request, validate_token_request
from kubeforge._apiserver.auth.tokens import BoundObject, TokenIssuer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.resource import GroupResource, ResourceType
from kubeforge._apiserver.types.validation.core_pods import MIRROR_ANNOTATION

__all__ = [
    "MOUNT_PATH",
    "ROOT_CA_CONFIGMAP",
    "PodAdmission",
    "token_request",
]

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
PROJECTED_SECONDS = 3607
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"

SERVICE_ACCOUNTS = GroupResource("", "serviceaccounts")
PODS = GroupResource("", "pods")
SECRETS = GroupResource("", "secrets")
NODES = GroupResource("", "nodes")


def token_request(
    call: Call, body: Any, store: Store, issuer: TokenIssuer, schemas: BuiltinSchemas
) -> dict[str, Any]:
    """Answer `POST serviceaccounts/<name>/token`."""
    request = read_token_request(schemas, body, call.namespace, call.name)
    account = store.get(SERVICE_ACCOUNTS, call.namespace, call.name)
    if account is None:
        raise StatusError.not_found("", "serviceaccounts", call.name)
    validate_token_request(request)
    spec = request["spec"]
    seconds = spec["expirationSeconds"]
    audiences = tuple(str(a) for a in spec.get("audiences") or ()) or issuer.audiences
    bound, node, ref = _bound_object(call, spec.get("boundObjectRef"), store)
    meta = account.obj["metadata"]
    token, expires = issuer.issue(
        call.namespace,
        call.name,
        str(meta.get("uid") or ""),
        audiences=audiences,
        seconds=seconds,
        bound=bound,
        node=node,
    )
    out_spec: dict[str, Any] = {"audiences": list(audiences), "expirationSeconds": seconds}
    if ref is not None:
        out_spec["boundObjectRef"] = ref
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": call.name,
            "namespace": call.namespace,
            "creationTimestamp": now_rfc3339(),
        },
        "spec": out_spec,
        "status": {
            "token": token,
            "expirationTimestamp": format_time(dt.datetime.fromtimestamp(expires, dt.UTC)),
        },
    }


def _bound_object(
    call: Call, ref: Any, store: Store
) -> tuple[BoundObject | None, BoundObject | None, dict[str, Any] | None]:
    if not ref:
        return None, None, None
    if not isinstance(ref, dict):
        raise StatusError.bad_request("spec.boundObjectRef must be an object")
    # As kubernetes pkg/registry/core/serviceaccount/storage/token.go (TokenREST.Create).
    kind = str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    api_version = str(ref.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    where = {"Pod": PODS, "Secret": SECRETS, "Node": NODES}.get(kind) if not group else None
    if where is None:
        raise StatusError.bad_request(
            f"cannot bind token to object of type {group}/{version}, Kind={kind}"
        )
    namespace = "" if kind == "Node" else call.namespace
    stored = store.get(where, namespace, name)
    if stored is None:
        raise StatusError.not_found("", where.resource, name)
    if kind == "Pod":
        # A token bound to a pod carries its identity: only the pod's own account gets one.
        running_as = (stored.obj.get("spec") or {}).get("serviceAccountName") or ""
        if running_as != call.name:
            raise StatusError.bad_request(
                f'cannot bind token for serviceaccount "{call.name}" to pod running with '
                "different serviceaccount name."
            )
    meta = stored.obj["metadata"]
    uid = str(meta.get("uid") or "")
    wanted_uid = ref.get("uid")
    if wanted_uid and wanted_uid != uid:
        raise StatusError.conflict(
            "",
            kind,
            name,
            f"the UID in the bound object reference ({wanted_uid}) does not match the UID in "
            "record. The object might have been deleted and then recreated",
        )
    bound: BoundObject | None = BoundObject(kind, name, uid)
    node: BoundObject | None = None
    if kind == "Pod":
        node_name = (stored.obj.get("spec") or {}).get("nodeName")
        if node_name:
            found = store.get(NODES, "", str(node_name))
            if found is not None:
                node = BoundObject("Node", str(node_name), found.obj["metadata"].get("uid", ""))
    elif kind == "Node":
        node, bound = bound, None
    out = {"kind": kind, "apiVersion": str(ref.get("apiVersion") or "v1"), "name": name, "uid": uid}
    return bound, node, out


class PodAdmission:
    """The ServiceAccount admission plugin for pods (a mutator of the write pipeline)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def missing_account(self, call: Call, body: Any) -> bool:
        """Whether a pod about to be created names the `default` account of a namespace that
        does not have it yet (the controller creating it may not have run)."""
        if not isinstance(body, dict):
            return False
        spec = body.get("spec")
        name = (spec.get("serviceAccountName") if isinstance(spec, dict) else None) or "default"
        if name != "default":
            return False
        return self.store.get(SERVICE_ACCOUNTS, call.namespace, "default") is None

    async def wait_for_default(self, namespace: str, timeout: float = 10.0) -> None:
        """Wait a little for a namespace's default account, as upstream's plugin retries.
        The machine's time: this waits for another component to act, and a request held on a
        virtual clock nobody advances would never be answered."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.store.get(SERVICE_ACCOUNTS, namespace, "default") is None:
            if loop.time() >= deadline:
                return
            await asyncio.sleep(0.05)

    def __call__(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if old is not None or rt.group != "" or rt.plural != "pods":
            return
        meta = obj["metadata"]
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        # Mirror pods (made by a kubelet of a static pod) get no account, and may name none
        # (plugin/pkg/admission/serviceaccount/admission.go).
        if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            if spec.get("serviceAccountName"):
                raise StatusError.forbidden(
                    "",
                    "pods",
                    str(meta.get("name") or ""),
                    "a mirror pod may not reference service accounts",
                )
            return
        namespace = str(meta.get("namespace") or "")
        name = str(spec.get("serviceAccountName") or "default")
        account = self.store.get(SERVICE_ACCOUNTS, namespace, name)
        if account is None:
            raise StatusError.forbidden(
                "",
                "pods",
                str(meta.get("name") or ""),
                f"error looking up service account {namespace}/{name}: serviceaccount "
                f'"{name}" not found',
            )
        pull = account.obj.get("imagePullSecrets")
        if pull and not spec.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [
                {"name": s.get("name")} for s in pull if isinstance(s, dict)
            ]
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = account.obj.get("automountServiceAccountToken")
        if automount is False:
            return
        volumes = spec.setdefault("volumes", [])
        if not isinstance(volumes, list):
            return
        suffix = "".join(secrets.choice(_SUFFIX_CHARS) for _ in range(5))
        volume_name = f"kube-api-access-{suffix}"
        mounted = False
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or ():
                if not isinstance(container, dict):
                    continue
                mounts = container.setdefault("volumeMounts", [])
                if not isinstance(mounts, list):
                    continue
                if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                    continue
                mounts.append({"name": volume_name, "readOnly": True, "mountPath": MOUNT_PATH})
                mounted = True
        if mounted:
            volumes.append(_projected_volume(volume_name))


def _projected_volume(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": PROJECTED_SECONDS, "path": "token"}},
                {
                    "configMap": {
                        "name": ROOT_CA_CONFIGMAP,
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
            "defaultMode": 420,
        },
    }
