"""What a pod's containers are given by the kubelet: their environment variables and the
files of their volumes, read from the pod spec, the API (ConfigMaps, Secrets, TokenRequest)
and the downward API.

A container whose environment refers to a missing ConfigMap or Secret cannot be created
(`ConfigError`, the kubelet's CreateContainerConfigError); a pod whose volume needs one that
is missing cannot be set up (`MountError`, FailedMount). The kubelet retries both.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from kubeforge._client.client import Client
from kubeforge._client.errors import NotFound
from kubeforge._cluster.commandline import expand_references
from kubeforge._cluster.options import ClusterOptions

__all__ = ["ConfigError", "MountError", "PodSources", "token_lifetimes"]


class ConfigError(Exception):
    """A container's environment refers to something missing (CreateContainerConfigError)."""


class MountError(Exception):
    """A volume refers to something missing (FailedMount)."""


class PodSources:
    """Reads what one pod's containers refer to, as the node running it (`pod_ip` is set
    once the pod has its address)."""

    def __init__(
        self,
        client: Client,
        pod: Mapping[str, Any],
        node_name: str,
        node_address: str,
        options: ClusterOptions,
        *,
        cached: Callable[[str, str, str], dict[str, Any] | None] | None = None,
    ) -> None:
        meta = pod["metadata"]
        self.client = client
        # (kind, namespace, name) -> the object from the node's caches, or None.
        self.cached = cached
        self.meta = meta
        self.spec: Mapping[str, Any] = pod.get("spec") or {}
        self.namespace = str(meta.get("namespace") or "")
        self.name = str(meta["name"])
        self.uid = str(meta.get("uid") or "")
        self.node_name = node_name
        self.node_address = node_address
        self.options = options
        self.pod_ip = ""
        # The PersistentVolumes the pod's claims are bound to, by volume name (volumes()).
        self.persistent: dict[str, dict[str, Any]] = {}

    # environment -------------------------------------------------------------------------------

    async def environment(self, container: Mapping[str, Any]) -> dict[str, str]:
        """The container's variables: envFrom, then env (with `$(VAR)` references), as the
        kubelet resolves them; raises ConfigError when a source is missing."""
        env: dict[str, str] = {"HOSTNAME": str(self.spec.get("hostname") or self.name)}
        for source in container.get("envFrom") or []:
            prefix = str(source.get("prefix") or "")
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                ref = source.get(key)
                if ref is not None:
                    data = await self._text_data(kind, ref)
                    env.update({prefix + k: v for k, v in (data or {}).items()})
        for item in container.get("env") or []:
            name = str(item.get("name") or "")
            if "value" in item or "valueFrom" not in item:
                env[name] = expand_references(str(item.get("value") or ""), env)
                continue
            source = item.get("valueFrom") or {}
            value: str | None = None
            if "fieldRef" in source:
                value = self.field(str(source["fieldRef"].get("fieldPath") or ""))
            elif "resourceFieldRef" in source:
                value = self._resource(container, source["resourceFieldRef"])
            else:
                for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                    ref = source.get(key)
                    if ref is None:
                        continue
                    data = await self._text_data(kind, ref)
                    if data is None:
                        break
                    wanted = str(ref.get("key") or "")
                    if wanted not in data:
                        if ref.get("optional"):
                            break
                        raise ConfigError(
                            f"couldn't find key {wanted} in {kind} "
                            f"{self.namespace}/{ref.get('name')}"
                        )
                    value = data[wanted]
            if value is not None:
                env[name] = value
        return env

    async def _data(self, kind: str, name: str, optional: bool) -> dict[str, bytes] | None:
        """A ConfigMap's or Secret's data as bytes; None when it is missing and optional.
        Read from the node's caches when they have it, as the kubelet's watch-based
        ConfigMap and Secret managers serve it, else from the API server."""
        obj = None if self.cached is None else self.cached(f"v1/{kind}", self.namespace, name)
        if obj is None:
            try:
                obj = await self.client.get(f"v1/{kind}", name, namespace=self.namespace)
            except NotFound:
                if optional:
                    return None
                raise ConfigError(f'{kind.lower()} "{name}" not found') from None
        if kind == "Secret":
            return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        values = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
        for key, value in (obj.get("binaryData") or {}).items():
            values[key] = base64.b64decode(value)
        return values

    async def _text_data(self, kind: str, ref: Mapping[str, Any]) -> dict[str, str] | None:
        data = await self._data(kind, str(ref.get("name") or ""), bool(ref.get("optional")))
        if data is None:
            return None
        return {k: v.decode(errors="replace") for k, v in data.items()}

    def field(self, path: str) -> str:
        """A downward API field of the pod (`metadata.name`, `status.podIP`, ...)."""
        meta = self.meta
        for prefix, source in (
            ("metadata.labels", "labels"),
            ("metadata.annotations", "annotations"),
        ):
            if path.startswith(prefix + "["):
                key = path[len(prefix) + 1 : -1].strip("'\"")
                return str((meta.get(source) or {}).get(key, ""))
        values = {
            "metadata.name": self.name,
            "metadata.namespace": self.namespace,
            "metadata.uid": self.uid,
            "spec.nodeName": self.node_name,
            "spec.serviceAccountName": str(self.spec.get("serviceAccountName") or ""),
            "status.hostIP": self.node_address,
            "status.hostIPs": self.node_address,
            "status.podIP": self.pod_ip,
            "status.podIPs": self.pod_ip,
        }
        return values.get(path, "")

    def _resource(self, container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
        # The container's own value when set, else what the node offers.
        kind, _, resource = str(ref.get("resource") or "").partition(".")
        resources = container.get("resources") or {}
        value = (resources.get(kind) or {}).get(resource)
        if value is None and kind == "requests":
            value = (resources.get("limits") or {}).get(resource)
        if value is None:
            value = {"cpu": self.options.node_cpu, "memory": self.options.node_memory}
            value = value.get(resource, "0")
        return str(value)

    # volumes -----------------------------------------------------------------------------------

    async def volumes(self, claims: bool = True) -> dict[str, dict[str, bytes]]:
        """The files of the pod's volumes that have any: volume -> path -> content
        (`claims=False`: leaving the pod's claims as they were found when it started).

        Projected volumes (the ServiceAccount's token from TokenRequest, bound to this pod,
        its `ca.crt` and `namespace`), Secret, ConfigMap and downward API volumes, and
        emptyDir (no files). A claim's volume has no files here: its PersistentVolume goes
        to `persistent`. Other kinds (hostPath) are not set up. Raises MountError when a
        Secret or ConfigMap a volume needs is missing, or a claim is not bound.
        """
        volumes: dict[str, dict[str, bytes]] = {}
        persistent: dict[str, dict[str, Any]] = {}
        for volume in self.spec.get("volumes") or []:
            if not isinstance(volume, dict):
                continue
            name = str(volume.get("name"))
            claim = volume.get("persistentVolumeClaim")
            if isinstance(claim, dict):
                if claims:
                    claim_name = str(claim.get("claimName") or "")
                    persistent[name] = await self._claimed_volume(claim_name)
                continue
            try:
                files = await self._volume(volume)
            except ConfigError as exc:
                raise MountError(f'MountVolume.SetUp failed for volume "{name}" : {exc}') from None
            if files is not None:
                volumes[name] = files
        if claims:
            self.persistent = persistent
        return volumes

    async def _claimed_volume(self, claim_name: str) -> dict[str, Any]:
        """The PersistentVolume a claim is bound to; MountError while there is none, as the
        kubelet's volume manager waits (getPVCExtractPV in desired_state_of_world_populator.go)."""
        failed = f"error processing PVC {self.namespace}/{claim_name}"
        try:
            claim = await self.client.get(
                "v1/PersistentVolumeClaim", claim_name, namespace=self.namespace
            )
        except NotFound as exc:
            raise MountError(f"{failed}: failed to fetch PVC from API server: {exc}") from None
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            raise MountError(f"{failed}: PVC is being deleted")
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if (claim.get("status") or {}).get("phase") != "Bound" or not volume_name:
            raise MountError(f"{failed}: PVC is not bound")
        try:
            volume: dict[str, Any] = await self.client.get("v1/PersistentVolume", volume_name)
        except NotFound as exc:
            raise MountError(f"{failed}: failed to fetch PV {volume_name}: {exc}") from None
        return volume

    async def _volume(self, volume: Mapping[str, Any]) -> dict[str, bytes] | None:
        if isinstance(volume.get("projected"), dict):
            files: dict[str, bytes] = {}
            for source in volume["projected"].get("sources") or []:
                files.update(await self._source(source))
            return files
        for kind, key, name_key in (
            ("Secret", "secret", "secretName"),
            ("ConfigMap", "configMap", "name"),
        ):
            ref = volume.get(key)
            if isinstance(ref, dict):
                return await self._items(kind, str(ref.get(name_key) or ""), ref)
        if isinstance(volume.get("downwardAPI"), dict):
            return self._downward(volume["downwardAPI"])
        if "emptyDir" in volume:
            return {}
        return None

    async def _source(self, source: Mapping[str, Any]) -> dict[str, bytes]:
        token_source = source.get("serviceAccountToken")
        if isinstance(token_source, dict):
            token = await self._token(token_source)
            return {str(token_source.get("path") or "token"): token}
        for kind, key in (("ConfigMap", "configMap"), ("Secret", "secret")):
            ref = source.get(key)
            if isinstance(ref, dict):
                return await self._items(kind, str(ref.get("name") or ""), ref)
        downward = source.get("downwardAPI")
        if isinstance(downward, dict):
            return self._downward(downward)
        return {}

    async def _items(self, kind: str, name: str, ref: Mapping[str, Any]) -> dict[str, bytes]:
        data = await self._data(kind, name, bool(ref.get("optional"))) or {}
        items = ref.get("items") or [{"key": k, "path": k} for k in data]
        files: dict[str, bytes] = {}
        for item in items:
            key = str(item.get("key"))
            if key in data:
                files[str(item.get("path") or key)] = data[key]
            elif not ref.get("optional"):
                what = "config" if kind == "ConfigMap" else "secret"
                raise ConfigError(f"{kind.lower()} references non-existent {what} key: {key}")
        return files

    def _downward(self, source: Mapping[str, Any]) -> dict[str, bytes]:
        return {
            str(item.get("path")): self.field(
                str((item.get("fieldRef") or {}).get("fieldPath") or "")
            ).encode()
            for item in source.get("items") or []
            if item.get("fieldRef")
        }

    async def _token(self, source: Mapping[str, Any]) -> bytes:
        spec: dict[str, Any] = {
            "expirationSeconds": int(source.get("expirationSeconds") or 3600),
            "boundObjectRef": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": self.name,
                "uid": self.uid,
            },
        }
        if source.get("audience"):
            spec["audiences"] = [source["audience"]]
        account = str(self.spec.get("serviceAccountName") or "default")
        reply = await self.client.create_subresource(
            "v1/ServiceAccount",
            account,
            "token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
            namespace=self.namespace,
        )
        return str((reply.get("status") or {}).get("token") or "").encode()


def token_lifetimes(spec: Mapping[str, Any]) -> list[int]:
    """The `expirationSeconds` of each projected token of a pod spec (the kubelet renews a
    token once 80% of its lifetime has passed)."""
    lifetimes = []
    for volume in spec.get("volumes") or []:
        projected = volume.get("projected") if isinstance(volume, dict) else None
        for source in (projected or {}).get("sources") or []:
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                lifetimes.append(int(token.get("expirationSeconds") or 3600))
    return lifetimes
