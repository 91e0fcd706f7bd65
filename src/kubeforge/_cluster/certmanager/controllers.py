"""The controllers of the built-in cert-manager subset: issuers' readiness, issuing
Certificates into their Secrets, and injecting CA bundles (cert-manager's cainjector).

Followed: cert-manager's documented behaviour (cert-manager.io/docs: the Certificate and
Issuer resources, the SelfSigned and CA issuers, the CA injector). The Secret gets the
type `kubernetes.io/tls`, the keys `tls.crt`, `tls.key` and `ca.crt`, and cert-manager's
`cert-manager.io/*` annotations; the Certificate's status gets the Ready condition,
`notBefore`, `notAfter`, `renewalTime` and `revision`, and it is issued again at its
renewal time or when its spec, its issuer or its Secret no longer match.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.access import annotations_of, meta_of, namespace_of
from kubeforge._api.machinery.timestamps import format_time
from kubeforge._client.errors import AlreadyExists, Conflict, NotFound
from kubeforge._cluster.certmanager.crds import GROUP
from kubeforge._cluster.certmanager.issuance import CertificateError, Signer, issue, up_to_date
from kubeforge._runtime.events import EventRecorder
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["CLUSTER_RESOURCE_NAMESPACE", "setup"]

ISSUER = f"{GROUP}/v1/Issuer"
CLUSTER_ISSUER = f"{GROUP}/v1/ClusterIssuer"
CERTIFICATE = f"{GROUP}/v1/Certificate"
SECRET = "v1/Secret"
INJECTABLES = (
    "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration",
    "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
    "apiextensions.k8s.io/v1/CustomResourceDefinition",
)
# Where a ClusterIssuer's CA Secret lives (cert-manager's --cluster-resource-namespace).
CLUSTER_RESOURCE_NAMESPACE = "cert-manager"
INJECT_FROM = "cert-manager.io/inject-ca-from"
INJECT_FROM_SECRET = "cert-manager.io/inject-ca-from-secret"
INJECT_APISERVER_CA = "cert-manager.io/inject-apiserver-ca"
ALLOW_DIRECT_INJECTION = "cert-manager.io/allow-direct-injection"
UP_TO_DATE = "Certificate is up to date and has not expired"


def _now() -> dt.datetime:
    # The machine's time: the certificates are TLS material OpenSSL checks against the
    # machine's clock, so their issuing and renewal keep to it, on any cluster clock.
    return dt.datetime.now(dt.UTC)


def _decode(data: Mapping[str, Any], key: str) -> bytes:
    try:
        return base64.b64decode(str(data.get(key) or ""))
    except ValueError:
        return b""


def _ready_condition(
    obj: Mapping[str, Any], ready: bool, reason: str, message: str
) -> list[dict[str, Any]]:
    """The object's conditions with Ready set (its transition time kept when unchanged)."""
    status = "True" if ready else "False"
    conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
    old = next((c for c in conditions if c.get("type") == "Ready"), None)
    when = (
        old["lastTransitionTime"]
        if old is not None and old.get("status") == status and old.get("lastTransitionTime")
        else format_time(_now())
    )
    condition = {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": when,
        "observedGeneration": meta_of(obj).get("generation", 1),
    }
    return [c for c in conditions if c.get("type") != "Ready"] + [condition]


async def _set_status(
    reconciler: Reconciler, kind: str, obj: Mapping[str, Any], status: dict[str, Any]
) -> None:
    current = obj.get("status") or {}
    if all(current.get(k) == v for k, v in status.items()):
        return
    meta = meta_of(obj)
    await reconciler.client.patch_status(
        kind, str(meta.get("name")), {"status": status}, namespace=meta.get("namespace")
    )


# -- issuers -------------------------------------------------------------------------------------


class IssuerReconciler(Reconciler):
    """Reports whether an Issuer or ClusterIssuer can issue: `selfSigned` always can, `ca`
    once its Secret holds a key pair; other kinds of issuer are not supported here."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def reconcile(self, request: Request) -> Result | None:
        try:
            issuer = await self.client.get(
                self.kind, request.name, namespace=request.namespace or None
            )
        except NotFound:
            return None
        ready, reason, message = await self.check(issuer, request.namespace)
        conditions = _ready_condition(issuer, ready, reason, message)
        await _set_status(self, self.kind, issuer, {"conditions": conditions})
        return None

    async def check(self, issuer: Mapping[str, Any], namespace: str) -> tuple[bool, str, str]:
        spec = issuer.get("spec") or {}
        if "selfSigned" in spec:
            return True, "IsReady", ""
        if isinstance(spec.get("ca"), dict):
            try:
                await signer_of(self, issuer, namespace)
            except CertificateError as exc:
                return False, "ErrGetKeyPair", f"Error getting keypair for CA issuer: {exc}"
            return True, "KeyPairVerified", "Signing CA verified"
        return (
            False,
            "NotSupported",
            "the development cluster's cert-manager issues with selfSigned and ca issuers only",
        )


async def signer_of(
    reconciler: Reconciler, issuer: Mapping[str, Any], namespace: str
) -> Signer | None:
    """A `ca` issuer's key pair (None for a self-signed issuer); CertificateError when it
    cannot be read."""
    ca = (issuer.get("spec") or {}).get("ca")
    if not isinstance(ca, dict):
        return None
    name = str(ca.get("secretName") or "")
    where = namespace or CLUSTER_RESOURCE_NAMESPACE
    try:
        secret = await reconciler.client.get(SECRET, name, namespace=where)
    except NotFound:
        raise CertificateError(f'secrets "{name}" not found') from None
    data = secret.get("data") or {}
    cert, key = _decode(data, "tls.crt"), _decode(data, "tls.key")
    if not cert or not key:
        raise CertificateError(f'secret "{name}" has no tls.crt and tls.key')
    return Signer(cert, key)


# -- certificates --------------------------------------------------------------------------------


class CertificateReconciler(Reconciler):
    """Issues a Certificate into its Secret and keeps it current."""

    def __init__(self, events: EventRecorder) -> None:
        self.events = events

    async def reconcile(self, request: Request) -> Result | None:
        try:
            certificate = await self.client.get(
                CERTIFICATE, request.name, namespace=request.namespace
            )
        except NotFound:
            return None
        if meta_of(certificate).get("deletionTimestamp"):
            return None
        spec = certificate.get("spec") or {}
        status = dict(certificate.get("status") or {})
        problem = await self._issuer_problem(spec, request.namespace)
        if problem is not None:
            status["conditions"] = _ready_condition(certificate, False, *problem)
            await _set_status(self, CERTIFICATE, certificate, status)
            return None
        ref = spec.get("issuerRef") or {}
        kind = str(ref.get("kind") or "Issuer")
        issuer_namespace = request.namespace if kind == "Issuer" else ""
        issuer = await self.client.get(
            ISSUER if kind == "Issuer" else CLUSTER_ISSUER,
            str(ref.get("name")),
            namespace=issuer_namespace or None,
        )
        secret_name = str(spec.get("secretName") or "")
        try:
            secret: dict[str, Any] | None = await self.client.get(
                SECRET, secret_name, namespace=request.namespace
            )
        except NotFound:
            secret = None
        now = _now()
        renewal: dt.datetime | None = None
        if secret is not None and self._same_issuer(secret, ref):
            data = secret.get("data") or {}
            renewal = up_to_date(spec, _decode(data, "tls.crt"), _decode(data, "tls.key"), now)
        if renewal is None:
            why = "Secret does not exist" if secret is None else "its Secret no longer matches"
            self.events.record(certificate, "Normal", "Issuing", f"Issuing certificate as {why}")
            try:
                issued = issue(spec, await signer_of(self, issuer, issuer_namespace))
            except CertificateError as exc:
                status["conditions"] = _ready_condition(certificate, False, "Failed", str(exc))
                await _set_status(self, CERTIFICATE, certificate, status)
                return None
            await self._write_secret(
                certificate, secret, issued.cert_pem, issued.key_pem, issued.ca_pem
            )
            self.events.record(
                certificate, "Normal", "Issuing", "The certificate has been successfully issued"
            )
            status["revision"] = int(status.get("revision") or 0) + 1
            status["notBefore"] = format_time(issued.not_before)
            status["notAfter"] = format_time(issued.not_after)
            renewal = up_to_date(spec, issued.cert_pem, issued.key_pem, now)
            assert renewal is not None
        status["renewalTime"] = format_time(renewal)
        status["conditions"] = _ready_condition(certificate, True, "Ready", UP_TO_DATE)
        await _set_status(self, CERTIFICATE, certificate, status)
        return Result(requeue_after=max((renewal - _now()).total_seconds(), 1.0))

    async def _issuer_problem(
        self, spec: Mapping[str, Any], namespace: str
    ) -> tuple[str, str] | None:
        ref = spec.get("issuerRef") or {}
        kind = str(ref.get("kind") or "Issuer")
        if str(ref.get("group") or GROUP) != GROUP or kind not in ("Issuer", "ClusterIssuer"):
            return "NotSupported", f"issuers of {kind}.{ref.get('group')} are not served here"
        if not spec.get("secretName"):
            return "Failed", "spec.secretName: Required value"
        name = str(ref.get("name") or "")
        try:
            issuer = await self.client.get(
                ISSUER if kind == "Issuer" else CLUSTER_ISSUER,
                name,
                namespace=namespace if kind == "Issuer" else None,
            )
        except NotFound:
            return "Pending", f'Issuer "{name}" not found'
        conditions = (issuer.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return "Pending", f'Issuer "{name}" is not ready'
        return None

    @staticmethod
    def _same_issuer(secret: Mapping[str, Any], ref: Mapping[str, Any]) -> bool:
        annotations = annotations_of(secret)
        return annotations.get("cert-manager.io/issuer-name") == ref.get(
            "name"
        ) and annotations.get("cert-manager.io/issuer-kind") == (ref.get("kind") or "Issuer")

    async def _write_secret(
        self,
        certificate: Mapping[str, Any],
        secret: Mapping[str, Any] | None,
        cert_pem: bytes,
        key_pem: bytes,
        ca_pem: bytes,
    ) -> None:
        spec = certificate.get("spec") or {}
        ref = spec.get("issuerRef") or {}
        meta = meta_of(certificate)
        template = spec.get("secretTemplate") or {}
        annotations = {
            **(template.get("annotations") or {}),
            "cert-manager.io/alt-names": ",".join(spec.get("dnsNames") or ()),
            "cert-manager.io/certificate-name": str(meta.get("name")),
            "cert-manager.io/common-name": str(spec.get("commonName") or ""),
            "cert-manager.io/ip-sans": ",".join(spec.get("ipAddresses") or ()),
            "cert-manager.io/issuer-group": str(ref.get("group") or ""),
            "cert-manager.io/issuer-kind": str(ref.get("kind") or "Issuer"),
            "cert-manager.io/issuer-name": str(ref.get("name") or ""),
            "cert-manager.io/uri-sans": ",".join(spec.get("uris") or ()),
        }
        labels = {**(template.get("labels") or {}), "controller.cert-manager.io/fao": "true"}
        data = {
            "tls.crt": base64.b64encode(cert_pem).decode(),
            "tls.key": base64.b64encode(key_pem).decode(),
            "ca.crt": base64.b64encode(ca_pem).decode(),
        }
        name, namespace = str(spec.get("secretName")), str(meta.get("namespace"))
        if secret is None:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": annotations,
                    "labels": labels,
                },
                "data": data,
            }
            try:
                await self.client.create(body)
                return
            except AlreadyExists:
                pass  # written meanwhile: update it below
        patch = {"metadata": {"annotations": annotations, "labels": labels}, "data": data}
        await self.client.patch(SECRET, name, patch, namespace=namespace)


# -- CA injection --------------------------------------------------------------------------------


class CAInjector(Reconciler):
    """Puts the CA an annotation names into the `caBundle` of a webhook configuration's
    webhooks, or of a CRD's conversion webhook: `cert-manager.io/inject-ca-from`
    (`<namespace>/<Certificate>`: its Secret's ca.crt), `cert-manager.io/inject-ca-from-secret`
    (`<namespace>/<Secret>`, which must allow it with `cert-manager.io/allow-direct-injection:
    "true"`) or `cert-manager.io/inject-apiserver-ca: "true"` (the cluster's CA)."""

    def __init__(self, kind: str, apiserver_ca: bytes) -> None:
        self.kind = kind
        self.apiserver_ca = apiserver_ca

    async def reconcile(self, request: Request) -> Result | None:
        try:
            obj = await self.client.get(self.kind, request.name)
        except NotFound:
            return None
        ca = await self.source_ca(obj)
        if not ca:
            return None
        bundle = base64.b64encode(ca).decode()
        changed = False
        body = dict(obj)
        if self.kind.endswith("/CustomResourceDefinition"):
            conversion = ((body.get("spec") or {}).get("conversion")) or {}
            webhook = conversion.get("webhook")
            if conversion.get("strategy") == "Webhook" and isinstance(webhook, dict):
                config = webhook.setdefault("clientConfig", {})
                changed = config.get("caBundle") != bundle
                config["caBundle"] = bundle
        else:
            for webhook in body.get("webhooks") or []:
                config = webhook.setdefault("clientConfig", {})
                changed = changed or config.get("caBundle") != bundle
                config["caBundle"] = bundle
        if changed:
            try:
                await self.client.update(body)
            except Conflict:
                return Result(requeue=True)
        return None

    async def source_ca(self, obj: Mapping[str, Any]) -> bytes:
        """The CA the object's annotations name, or b"" when there is none (yet)."""
        annotations = annotations_of(obj)
        if annotations.get(INJECT_APISERVER_CA) == "true":
            return self.apiserver_ca
        secret_ref = await self.source_secret(obj)
        if secret_ref is None:
            return b""
        namespace, name, direct = secret_ref
        try:
            secret = await self.client.get(SECRET, name, namespace=namespace)
        except NotFound:
            return b""
        if direct and annotations_of(secret).get(ALLOW_DIRECT_INJECTION) != "true":
            return b""
        return _decode(secret.get("data") or {}, "ca.crt")

    async def source_secret(self, obj: Mapping[str, Any]) -> tuple[str, str, bool] | None:
        """(namespace, Secret, named directly) the object takes its CA from."""
        annotations = annotations_of(obj)
        direct = annotations.get(INJECT_FROM_SECRET)
        if direct and "/" in direct:
            namespace, _, name = direct.partition("/")
            return namespace, name, True
        reference = annotations.get(INJECT_FROM)
        if not reference or "/" not in reference:
            return None
        namespace, _, name = reference.partition("/")
        try:
            certificate = await self.client.get(CERTIFICATE, name, namespace=namespace)
        except NotFound:
            return None
        secret = str((certificate.get("spec") or {}).get("secretName") or "")
        return (namespace, secret, False) if secret else None


# -- wiring ----------------------------------------------------------------------------------------


def setup(manager: Manager, apiserver_ca: bytes) -> None:
    """Register the cert-manager controllers with `manager` (its CRDs must be served)."""
    for kind, name in ((ISSUER, "issuers"), (CLUSTER_ISSUER, "clusterissuers")):
        issuers = IssuerReconciler(kind)

        async def issuers_of_secret(
            secret: Any, issuers: IssuerReconciler = issuers
        ) -> list[Request]:
            namespace = namespace_of(secret)
            wanted = namespace if issuers.kind == ISSUER else ""
            if issuers.kind == CLUSTER_ISSUER and namespace != CLUSTER_RESOURCE_NAMESPACE:
                return []
            found = await issuers.client.list(issuers.kind, namespace=wanted or None)
            return [
                Request(wanted, meta_of(i)["name"])
                for i in found
                if ((i.get("spec") or {}).get("ca") or {}).get("secretName")
                == meta_of(secret).get("name")
            ]

        (
            manager.controller()
            .named(f"cert-manager-{name}")
            .for_(kind)
            .watches(SECRET, issuers_of_secret)
            .with_options(max_concurrent_reconciles=1)
            .complete(issuers)
        )

    certificates = CertificateReconciler(manager.event_recorder("cert-manager-certificates"))

    async def certificates_of_secret(secret: Any) -> list[Request]:
        namespace = namespace_of(secret)
        found = await certificates.client.list(CERTIFICATE, namespace=namespace)
        name = meta_of(secret).get("name")
        return [
            Request(namespace, meta_of(c)["name"])
            for c in found
            if (c.get("spec") or {}).get("secretName") == name
        ]

    def certificates_of_issuer(kind: str) -> Any:
        async def mapped(issuer: Any) -> list[Request]:
            namespace = namespace_of(issuer) if kind == "Issuer" else None
            found = await certificates.client.list(CERTIFICATE, namespace=namespace)
            return [
                Request(namespace_of(c), meta_of(c)["name"])
                for c in found
                if ((c.get("spec") or {}).get("issuerRef") or {}).get("name")
                == meta_of(issuer).get("name")
                and (((c.get("spec") or {}).get("issuerRef") or {}).get("kind") or "Issuer") == kind
            ]

        return mapped

    (
        manager.controller()
        .named("cert-manager-certificates")
        .for_(CERTIFICATE)
        .watches(SECRET, certificates_of_secret)
        .watches(ISSUER, certificates_of_issuer("Issuer"))
        .watches(CLUSTER_ISSUER, certificates_of_issuer("ClusterIssuer"))
        .with_options(max_concurrent_reconciles=1)
        .complete(certificates)
    )

    for kind in INJECTABLES:
        injector = CAInjector(kind, apiserver_ca)

        async def injectables_of_secret(
            secret: Any, injector: CAInjector = injector
        ) -> list[Request]:
            key = (namespace_of(secret), meta_of(secret).get("name"))
            found = await injector.client.list(injector.kind)
            requests = []
            for obj in found:
                source = await injector.source_secret(obj)
                if source is not None and source[:2] == key:
                    requests.append(Request("", meta_of(obj)["name"]))
            return requests

        async def injectables_of_certificate(
            certificate: Any, injector: CAInjector = injector
        ) -> list[Request]:
            reference = f"{namespace_of(certificate)}/{meta_of(certificate).get('name')}"
            found = await injector.client.list(injector.kind)
            return [
                Request("", meta_of(o)["name"])
                for o in found
                if annotations_of(o).get(INJECT_FROM) == reference
            ]

        (
            manager.controller()
            .named(f"cert-manager-cainjector-{kind.rsplit('/', 1)[-1].lower()}")
            .for_(kind)
            .watches(SECRET, injectables_of_secret)
            .watches(CERTIFICATE, injectables_of_certificate)
            .with_options(max_concurrent_reconciles=1)
            .complete(injector)
        )
