"""TestEnv: a cluster for tests (envtest's role), a development cluster started in-process.

    async with TestEnv(crd_paths=["config/crd/bases"]) as env:
        await env.client.create(...)

It starts a DevCluster on a free port (or, with KUBEFORGE_USE_EXISTING_CLUSTER=1, uses the
current kubeconfig's cluster), installs the CRDs found under `crd_paths` and waits until they
are established, and hands out a client. Unlike envtest's bare API server, garbage
collection, namespace deletion, Deployments, Jobs and pods all work (ClusterOptions.bare()
gives the bare server, `controllers` turns single controllers off).

With `namespace`, the client, kubectl and the managers the environment starts default to that
namespace, created if missing; on an existing cluster the environment removes what the test
made when it stops (testing/cleanup.py).

On a cluster it started, the environment can also make things go wrong: `faults` fails,
delays, holds back or records what the API server answers (serverfaults.py), and
`run_manager` can intercept its controllers' client (interceptors.py) or kill the manager
right after a chosen write (crashpoints.py). Managers it starts there authenticate as a user
of their own (`manager_user`), so that faults can tell their requests from the test's.

With `virtual_time`, the process runs on a VirtualClock from start to stop: the cluster, the
managers and the test read one clock that stands still until `env.clock.advance(...)` moves it
(docs/testing.md, "Virtual time").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from kubeforge import clock as process_clock
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig, kubeconfig_context, load_config
from kubeforge._client.errors import AlreadyExists, NotFound
from kubeforge._cluster.options import ClusterOptions
from kubeforge._runtime.localconversion import CRD_KIND
from kubeforge._runtime.localwebhooks import (
    LocalServing,
    registered_while_serving,
    serve_locally,
)
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.timeline import Timeline
from kubeforge._testing.cleanup import TestObjects, project_kinds
from kubeforge._testing.crashpoints import CrashAfter, CrashPoint, ManagerCrashed
from kubeforge._testing.interceptors import Interceptors, intercept
from kubeforge._webhook.server import WebhookServer

if TYPE_CHECKING:
    from kubeforge._cluster.devcluster import DevCluster
    from kubeforge._cluster.nodehealth import NodeHealth
    from kubeforge._testing.serverfaults import ServerFaults

__all__ = ["TEST_MANAGER", "USE_EXISTING_CLUSTER", "TestEnv"]

USE_EXISTING_CLUSTER = "KUBEFORGE_USE_EXISTING_CLUSTER"
FIELD_MANAGER = "kubeforge-testenv"
# Who the managers run_manager starts are, on a cluster the environment started: a user of
# their own, with the environment's own (admin) rights.
MANAGER_USER = "kubeforge-manager"
MANAGER_GROUPS = ("system:masters",)
CRD_TIMEOUT = 10.0
# What the managers run_manager starts are called on a recorded timeline.
TEST_MANAGER = "manager"
# The context a kubeconfig written for kubectl adds over an existing cluster's kubeconfig.
CONTEXT = "kubeforge-testenv"

log = logging.getLogger("kubeforge.testing")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


class TestEnv:
    """A cluster to run operator tests against, with the project's CRDs installed."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        crd_paths: Iterable[str | Path] = ("config/crd/bases",),
        options: ClusterOptions | None = None,
        use_existing_cluster: bool | None = None,
        kubeconfig: str | None = None,
        error_if_crd_path_missing: bool = False,
        namespace: str | None = None,
        virtual_time: bool | process_clock.VirtualClock = False,
    ) -> None:
        self.crd_paths = [Path(p) for p in crd_paths]
        self.options = options or ClusterOptions()
        self.use_existing = (
            _truthy(os.environ.get(USE_EXISTING_CLUSTER))
            if use_existing_cluster is None
            else use_existing_cluster
        )
        self.kubeconfig = kubeconfig
        self.error_if_crd_path_missing = error_if_crd_path_missing
        # The DevCluster this environment started (None for an existing cluster). Typed Any
        # so that the cluster package is imported only when one is started.
        self.cluster: DevCluster | None = None
        self.config: ClusterConfig | None = None
        self._client: Client | None = None
        self.installed: list[str] = []
        self._namespace = namespace
        # What the test makes on an existing cluster, removed when the environment stops.
        self._made: TestObjects | None = None
        self._managers = 0  # run_manager blocks running now
        self._faults: ServerFaults | None = None
        self._manager_config: ClusterConfig | None = None
        self._virtual = (
            process_clock.VirtualClock()
            if virtual_time is True
            else virtual_time
            if isinstance(virtual_time, process_clock.VirtualClock)
            else None
        )
        self._real = process_clock.RealClock()
        # The block of clock.use() the environment is in while it runs on virtual time.
        self._on_clock: contextlib.ExitStack | None = None
        # What the managers run_manager starts report to, when a timeline is recorded
        # (testing/timelines.py).
        self.timeline: Timeline | None = None

    @property
    def clock(self) -> process_clock.VirtualClock | process_clock.RealClock:
        """The environment's clock: the VirtualClock the process runs on while the
        environment is started with `virtual_time`, else a RealClock (which refuses
        `advance`)."""
        return self._virtual if self._virtual is not None else self._real

    @property
    def namespace(self) -> str:
        """The namespace the client, kubectl and started managers default to: the one
        given, else the kubeconfig's (`default` on a started cluster)."""
        if self.config is not None:
            return self.config.namespace
        return self._namespace or "default"

    @property
    def client(self) -> Client:
        """The environment's client (field manager `kubeforge-testenv`)."""
        if self._client is None:
            raise RuntimeError("the test environment is not started")
        return self._client

    @property
    def faults(self) -> ServerFaults:
        """The faults injected into the started cluster's API server (a ServerFaults:
        `fail`, `delay`, `drop_watches`, `expire_watches`, `delay_watches`, `stale_reads`,
        `coalesce_events`, `record_writes`, `clear`)."""
        if self.cluster is None:
            raise RuntimeError("faults are injected into a cluster the environment started")
        if self._faults is None:
            from kubeforge._testing.serverfaults import ServerFaults

            self._faults = ServerFaults(self.cluster.server)
        return self._faults

    @property
    def manager_user(self) -> str | None:
        """The user the managers `run_manager` starts authenticate as (with the
        environment's rights): `kubeforge-manager` on a cluster the environment started;
        None on an existing cluster, where they use the kubeconfig's own."""
        return MANAGER_USER if self.cluster is not None or not self.use_existing else None

    def _manager_settings(self) -> ClusterConfig:
        """The connection settings of the managers `run_manager` starts."""
        assert self.config is not None
        if self.cluster is None:
            return self.config
        if self._manager_config is None:
            from kubeforge._apiserver.tls import client_certificate

            certificates = self.cluster.server.certificates
            assert certificates is not None, "the cluster serves TLS"
            cert, key = client_certificate(certificates, MANAGER_USER, MANAGER_GROUPS)
            self._manager_config = dataclasses.replace(
                self.config, credentials=None, client_cert_data=cert, client_key_data=key
            )
        return self._manager_config

    def write_kubeconfig(self, path: str | Path) -> Path:
        """A kubeconfig for the started environment (for kubectl or subprocesses), its
        context in the environment's namespace."""
        if self.cluster is not None:
            written = self.cluster.write_kubeconfig(path, namespace=self.namespace)
            return written
        raise RuntimeError("an existing cluster has its own kubeconfig")

    def kubeconfig_variable(self, path: str | Path) -> str | None:
        """The KUBECONFIG with which a subprocess (kubectl) reaches the environment as its
        client does, in its namespace. For a started cluster, a kubeconfig written at `path`;
        for an existing one, `path` holds only a context over the kubeconfig's cluster and
        user and is listed before the kubeconfig files themselves, whose credentials (exec
        plugins included) are used as they are. None in a pod without kubeconfig (kubectl
        uses the pod's service account)."""
        if self.cluster is not None:
            return str(self.write_kubeconfig(path))
        if self.config is None:
            raise RuntimeError("the test environment is not started")
        found = kubeconfig_context(kubeconfig=self.kubeconfig)
        if found is None:
            return None
        context = {"cluster": found.cluster, "user": found.user, "namespace": self.namespace}
        layer = {
            "apiVersion": "v1",
            "kind": "Config",
            "contexts": [{"name": CONTEXT, "context": context}],
            "current-context": CONTEXT,
        }
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(layer, sort_keys=False), encoding="utf-8")
        return os.pathsep.join([str(target), *found.files])

    async def start(self) -> None:
        """Start (or connect to) the cluster, install the CRDs and wait until they are
        established; a failure on the way leaves nothing running."""
        # Read the CRDs first: a missing path or a broken file fails before any cluster.
        documents = self._crd_documents()
        self.installed = []
        try:
            if self._virtual is not None:
                # Before anything is made: every part reads the clock it was made under.
                self._on_clock = contextlib.ExitStack()
                self._on_clock.enter_context(process_clock.use(self._virtual))
            if self.use_existing:
                config = load_config(kubeconfig=self.kubeconfig)
            else:
                from kubeforge._cluster.devcluster import DevCluster

                self.cluster = DevCluster(self.options)
                await self.cluster.start()
                config = self.cluster.cluster_config()
            if self._namespace is not None:
                config = dataclasses.replace(config, namespace=self._namespace)
            self.config = config
            self._client = Client(self.config, field_manager=FIELD_MANAGER)
            created = await self._create_namespace() if self._namespace is not None else None
            if self.use_existing:
                self._made = TestObjects(self.client, project_kinds(documents), created)
            await self._install(documents)
            if self._made is not None:
                await self._made.snapshot()
        except BaseException:
            await self.stop()
            raise

    async def _create_namespace(self) -> str | None:
        """Create the environment's namespace; its name, or None when it existed already."""
        name = self.namespace
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            await self.client.create(body)
        except AlreadyExists:
            return None
        return name

    def _crd_documents(self) -> list[dict[str, Any]]:
        docs: list[dict[str, Any]] = []
        for path in self.crd_paths:
            if not path.exists():
                if self.error_if_crd_path_missing:
                    raise FileNotFoundError(f"CRD path {path} does not exist")
                continue
            files = (
                sorted(path.glob("*.y*ml")) + sorted(path.glob("*.json"))
                if path.is_dir()
                else [path]
            )
            for file in files:
                try:
                    loaded = list(yaml.safe_load_all(file.read_text()))
                except yaml.YAMLError as exc:
                    exc.add_note(f"while reading CRDs from {file}")
                    raise
                docs.extend(
                    doc
                    for doc in loaded
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"
                )
        return docs

    async def install_crds(self) -> None:
        """Apply every CRD under `crd_paths` and wait until all are established."""
        await self._install(self._crd_documents())

    async def _install(self, documents: list[dict[str, Any]]) -> None:
        for doc in documents:
            if self.use_existing:
                await self._replace_conversion(doc)
            await self.client.apply(doc, field_manager=FIELD_MANAGER, force=True)
            self.installed.append(doc["metadata"]["name"])
        if documents:
            names = [d["metadata"]["name"] for d in documents]
            try:
                await self.client.wait_established(names, timeout=CRD_TIMEOUT)
            except TimeoutError:
                raise TimeoutError(
                    f"CRDs not established within {CRD_TIMEOUT} s: {', '.join(names)}"
                ) from None

    async def _replace_conversion(self, doc: dict[str, Any]) -> None:
        """Give an installed CRD the document's conversion as a whole before it is applied.

        An apply merges: a conversion webhook left pointing at a local server by a run that
        did not end cleanly (or by `kubeforge run` against the same cluster) would keep its
        `url` beside the document's `service`, a CRD the server refuses (422, exactly one of
        url or service). envtest replaces the whole CRD on update for the same reason."""
        wanted = (doc.get("spec") or {}).get("conversion")
        if not isinstance(wanted, dict) or wanted.get("strategy") != "Webhook":
            return
        try:
            await self.client.patch(
                CRD_KIND,
                doc["metadata"]["name"],
                [{"op": "replace", "path": "/spec/conversion", "value": wanted}],
                patch_type="json",
                field_manager=FIELD_MANAGER,
            )
        except NotFound:
            pass

    async def clean_up(self, *, timeout: float = 30.0) -> None:
        """On an existing cluster, remove what the test made (once): delete the namespace
        the environment created, without waiting for the namespace, and the objects of the
        installed CRDs' cluster-scoped kinds made since start, and wait until the project's
        objects among them are gone. While a manager of `run_manager` runs, its controllers
        take their finalizers off first (a warning names what is still there after
        `timeout` s); with none running the environment takes them off. Nothing for a
        cluster the environment started, which goes as a whole; `stop()` calls it."""
        if self._made is not None and self._client is not None:
            await self._made.remove(release=self._managers == 0, timeout=timeout)

    async def set_node_health(self, name: str, health: NodeHealth) -> None:
        """Take a simulated node of the started cluster down or bring it back: "not-ready"
        (its kubelet reports NotReady), "unreachable" (it loses contact with the API server;
        the node lifecycle controller marks it Unknown after the node monitor grace period)
        or "ready"; returns once its kubelet acts so (DevCluster.set_node_health)."""
        if self.cluster is None:
            raise RuntimeError("simulated nodes belong to a cluster the environment started")
        await self.cluster.set_node_health(name, health)

    async def service_account_config(self, rbac_dir: str | Path = "config/rbac") -> ClusterConfig:
        """Install a project's config/rbac and return connection settings that authenticate
        as its ServiceAccount (tokens from TokenRequest): a manager run with them has only
        the permissions the project's roles grant."""
        from kubeforge._runtime.serviceaccount import as_service_account, install_rbac

        if self.config is None:
            raise RuntimeError("the test environment is not started")
        account = await install_rbac(self.client, Path(rbac_dir))
        return as_service_account(self.client, self.config, account)

    @contextlib.asynccontextmanager
    async def run_manager(
        self,
        setup: Callable[[Manager], Any] | None = None,
        *,
        config: ClusterConfig | None = None,
        webhooks: bool = True,
        interceptors: Interceptors | Sequence[Interceptors] = (),
        crash_after_writes: CrashAfter | None = None,
        **options: Any,
    ) -> AsyncIterator[Manager]:
        """A Manager for this environment with the controllers `setup(manager)` registers
        (a sync or async function, as a project's main.setup), started and running while
        the block runs and stopped after it. It connects as `manager_user` with the
        environment's rights; `config` replaces those settings (see
        service_account_config); `options` go to Manager(); a manager that dies fails the
        block with its error.

        `interceptors` wrap the client the manager gives its controllers (`intercept`, the
        first outermost). With `crash_after_writes` (N, or a function choosing the write),
        the manager is killed right after that write of its controllers succeeds, as
        `kill -9` would stop it, and the block is interrupted with ManagerCrashed; a new
        `run_manager` is the restarted pod (crashpoints.py).

        The webhooks `setup` registers are served on 127.0.0.1 (a free port, a generated
        certificate) and registered with the cluster as soon as the server answers, before
        the manager's caches list anything, so the test's requests (and the caches' reads in
        another version) go through them: the admission configurations are applied and the
        CRDs the server converts are pointed at it. When the manager stops, after its caches
        and while its server still answers, the configurations are deleted and the CRDs get
        their own conversion back. With `webhooks=False` the webhook server is left as
        `setup` configured it and nothing is registered."""
        if self.config is None:
            raise RuntimeError("the test environment is not started")
        manager = Manager(config or self._manager_settings(), **options)
        if self.timeline is not None:
            manager.add_observer(self.timeline.observer(TEST_MANAGER))
        layers = [interceptors] if isinstance(interceptors, Interceptors) else list(interceptors)
        crash = CrashPoint(crash_after_writes) if crash_after_writes is not None else None
        if crash is not None:
            # Innermost: it counts the writes that reached the server.
            layers.append(crash.interceptors)
        if layers:
            manager.client = intercept(manager.client, *layers)
        local: LocalServing | None = None
        try:
            if setup is not None:
                pending = setup(manager)
                if inspect.isawaitable(pending):
                    await pending
            if webhooks and manager.webhook_server.webhooks:
                local = serve_locally(manager.webhook_server)
        except BaseException:
            await manager.api_reader.close()
            raise
        if local is not None:
            serving = local

            def register(server: WebhookServer) -> AbstractAsyncContextManager[Any]:
                return registered_while_serving(
                    self.client, server, ca_bundle=serving.ca_bundle, field_manager=FIELD_MANAGER
                )

            manager.add_webhook_registration(register)
        try:
            async with self._running(manager, crash) as running:
                self._managers += 1
                try:
                    yield running
                finally:
                    self._managers -= 1
        finally:
            if local is not None:
                local.cleanup()

    @contextlib.asynccontextmanager
    async def _running(self, manager: Manager, crash: CrashPoint | None) -> AsyncIterator[Manager]:
        block = asyncio.current_task()
        inside = interrupted = False
        if crash is not None:

            def crashed(error: ManagerCrashed) -> None:
                nonlocal interrupted
                manager.kill()
                # Interrupt the block, as asyncio.timeout does; a write the block made
                # itself raises ManagerCrashed on its own.
                if inside and block is not None and asyncio.current_task() is not block:
                    interrupted = True
                    block.cancel()

            crash.on_crash = crashed
        task = asyncio.create_task(manager.start(), name="testenv manager")
        running = asyncio.create_task(manager.running.wait())
        try:
            await asyncio.wait({task, running}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            # Cancelled while the manager starts: leave nothing running.
            manager.stop()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            running.cancel()
        if crash is not None and crash.crashed is not None:
            await task
            raise crash.crashed
        if task.done():
            task.result()  # raises what ended it
            raise RuntimeError("the manager stopped before it was running")
        caught = False
        try:
            inside = True
            yield manager
        except asyncio.CancelledError:
            if not interrupted:
                raise
            caught = True
            assert block is not None
            if block.uncancel() > 0:
                raise  # the test itself was cancelled as well
        finally:
            inside = False
            if crash is not None:
                crash.armed = False
            manager.stop()
            await task
        if interrupted:
            assert block is not None and crash is not None and crash.crashed is not None
            if not caught:
                block.uncancel()  # the block took the interruption and went on
            raise crash.crashed

    async def stop(self) -> None:
        """Close the client and stop the cluster this environment started. On an existing
        cluster, what the test made is removed (clean_up) and the CRDs stay installed."""
        if self._faults is not None:
            self._faults.clear()
            self._faults = None
        if self._client is not None:
            try:
                await self.clean_up()
            except Exception:
                log.warning("could not remove what the test made", exc_info=True)
            await self._client.close()
            self._client = None
        if self.cluster is not None:
            await self.cluster.stop()
            self.cluster = None
        if self._on_clock is not None:
            self._on_clock.close()
            self._on_clock = None

    async def __aenter__(self) -> TestEnv:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
