"""The manager: runs the shared cache, the controllers, the webhook server, probes, metrics
and leader election.

Start-up order follows controller-runtime: the health/metrics server, the webhook server (once
a webhook is registered) and the caches start at once (they need no leadership); controllers
start once the caches have synced and, with leader election on, once this process leads. A
sharded controller (`Builder.sharded`) is started instead by its ring, in every replica, while
the replica holds its shard Lease.
Between the webhook server and the caches come the webhook registrations
(`add_webhook_registration`): a cluster told to call this process's webhooks before the
caches' first list, which may need its conversion webhook. Shutdown (SIGTERM/SIGINT or
`stop()`) lets in-flight reconciles finish within the graceful-shutdown timeout, releases the
lease, stops the caches, ends the registrations and, last, stops the webhook server (the API
server may call it until then). `kill()` is the other end, a `kill -9`: nothing more reaches
the cluster, and nothing is finished or handed over. Losing leadership stops everything and
`start()` raises LeadershipLost: another process is in charge now, so this one must not keep
reconciling.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar, overload

from aiohttp import web

from kubeforge._api.meta import GroupVersionKind
from kubeforge._client.client import Call, Client, KindLike
from kubeforge._client.config import ClusterConfig, load_config
from kubeforge._runtime.builder import Builder
from kubeforge._runtime.cache import Cache, CacheOptions
from kubeforge._runtime.cached_client import CachedClient, SyncClient
from kubeforge._runtime.controller import Controller, ControllerOptions
from kubeforge._runtime.events import EventRecorder
from kubeforge._runtime.handler import EnqueueRequestForOwner
from kubeforge._runtime.informer import DEFAULT_RESYNC, Transform, strip_managed_fields
from kubeforge._runtime.leaderelection import LeaderElector, LeadershipLost
from kubeforge._runtime.logs import current_reconcile
from kubeforge._runtime.metrics import Metrics
from kubeforge._runtime.observer import Observer, Observers, Read, Write, object_version
from kubeforge._runtime.reconcile import SyncReconciler
from kubeforge._webhook.builder import WebhookBuilder
from kubeforge._webhook.server import WebhookServer

__all__ = ["LeadershipLost", "Manager", "WebhookRegistrationHook"]

log = logging.getLogger("kubeforge.manager")

# The client's calls that read (the rest write).
_READS = frozenset({"get", "list", "logs"})

T = TypeVar("T")

Check = Callable[[], bool | Awaitable[bool]]
Runnable = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
# Given the started webhook server; entered before the caches start, left after they stop.
WebhookRegistrationHook = Callable[[WebhookServer], contextlib.AbstractAsyncContextManager[Any]]


def _describe(runnable: Runnable) -> str:
    """A runnable's name for logs: its qualified name (bound methods name their class)."""
    return str(getattr(runnable, "__qualname__", None) or repr(runnable))


def _parse_address(address: str | None) -> tuple[str, int] | None:
    """ ":8081" -> ("0.0.0.0", 8081); "127.0.0.1:0" -> ("127.0.0.1", 0); None or "0" -> off."""
    if address is None or address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return (host or "0.0.0.0", int(port))


class Manager:
    """Everything a set of controllers needs, started and stopped together."""

    def __init__(
        self,
        config: ClusterConfig | None = None,
        *,
        client: Client | None = None,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        cache_options: Mapping[KindLike, CacheOptions] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        sync_period: float | None = DEFAULT_RESYNC,
        metrics_bind_address: str | None = None,
        secure_metrics: bool = False,
        metrics_cert_dir: str | None = None,
        health_probe_bind_address: str | None = None,
        leader_election: bool = False,
        leader_election_id: str | None = None,
        leader_election_namespace: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        graceful_shutdown_timeout: float = 30.0,
        identity: str | None = None,
        controller_defaults: ControllerOptions | None = None,
        field_manager: str | None = None,
        webhook_server: WebhookServer | None = None,
    ) -> None:
        self.metrics = Metrics()
        # Told what the controllers do (observer.py); while nobody observes, nothing is.
        self.observers = Observers(self._observed)
        if client is None:
            client = Client(
                config or load_config(),
                field_manager=field_manager,
                on_request=self.metrics.observe_request,
                on_retry=lambda verb, host, code, _s: self.metrics.observe_retry(verb, host, code),
            )
        self.api_reader = client
        self.cache = Cache(
            client,
            namespace=namespace,
            namespaces=namespaces,
            by_kind=cache_options,
            default_transform=default_transform,
            sync_period=sync_period,
            on_watch_restart=lambda kind, _why: self.metrics.informer_watch_restarts_total.labels(
                kind
            ).inc(),
        )
        self.client = CachedClient(client, self.cache, self.observers)
        self.controller_defaults = controller_defaults or ControllerOptions()
        self.controllers: dict[str, Controller] = {}
        self.metrics_address = _parse_address(metrics_bind_address)
        # HTTPS with TokenReview + SubjectAccessReview (kubebuilder's --metrics-secure).
        self.secure_metrics = secure_metrics
        self.metrics_cert_dir = metrics_cert_dir
        self.probe_address = _parse_address(health_probe_bind_address)
        self.leader_election = leader_election
        self.leader_election_id = leader_election_id
        self.leader_election_namespace = leader_election_namespace
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        # As client-go's os.Hostname() in a pod: the pod's name (HOSTNAME, which the kubelet
        # sets, also for a pod the development cluster runs as a local process).
        host = os.environ.get("HOSTNAME") or socket.gethostname()
        self.identity = identity or f"{host}_{uuid.uuid4()}"
        self._healthz: dict[str, Check] = {"ping": lambda: True}
        self._readyz: dict[str, Check] = {"ping": lambda: True}
        self._runnables: list[tuple[Runnable, bool]] = []
        self._owner_scopes: list[tuple[KindLike, EnqueueRequestForOwner]] = []
        self._stopping = asyncio.Event()
        self._runners: list[web.AppRunner] = []
        self.bound: dict[str, tuple[str, int]] = {}
        self.elector: LeaderElector | None = None
        self.synced = False
        # Set once the caches have synced and this process's controllers are running.
        self.running = asyncio.Event()
        self.leading = not leader_election
        self._sync_clients: list[SyncClient] = []
        self._recorders: list[EventRecorder] = []
        self._failure: BaseException | None = None
        self._webhook_server = webhook_server
        if webhook_server is not None:
            webhook_server.use_metrics(self.metrics.webhook)
        self._webhooks_started = False
        self._webhook_registrations: list[WebhookRegistrationHook] = []
        self._registered = contextlib.AsyncExitStack()
        self._killed = False

    # setup ----------------------------------------------------------------------------------

    def controller(self) -> Builder:
        """Start building a controller managed by this manager."""
        return Builder(self)

    def add_controller(self, controller: Controller) -> None:
        if controller.name in self.controllers:
            raise ValueError(
                f"a controller named {controller.name!r} already exists; controller names must "
                "be unique (use .named())"
            )
        self.controllers[controller.name] = controller
        controller.on_failure = self._fail
        controller.observers = self.observers
        reconciler = controller.reconciler
        if isinstance(reconciler, SyncReconciler) or not inspect.iscoroutinefunction(
            reconciler.reconcile
        ):
            sync = SyncClient(self.client)
            self._sync_clients.append(sync)
            reconciler.client = sync
        else:
            reconciler.client = self.client

    def resolve_owner_scope(self, owner: KindLike, handler: EnqueueRequestForOwner) -> None:
        """Owner requests of cluster-scoped owners carry no namespace; learned at start."""
        self._owner_scopes.append((owner, handler))

    def add_observer(self, observer: Observer) -> None:
        """Call `observer(record)` for everything the controllers do from now on: the
        events their watches deliver, each reconcile's start and end, and the reads and
        writes it makes (kubeforge._runtime.observer's records)."""
        self.observers.add(observer)

    def remove_observer(self, observer: Observer) -> None:
        """Stop calling `observer`."""
        self.observers.remove(observer)

    def _observed(self, observed: bool) -> None:
        """Hear of the API client's requests only while someone observes."""
        if observed:
            self.api_reader.add_call_observer(self._observe_call)
        else:
            self.api_reader.remove_call_observer(self._observe_call)

    def _observe_call(self, call: Call) -> None:
        """An API request as the observers' record: every write, and the reads a reconcile
        makes through the uncached client (the informers' own lists are not told). The
        answer's decoding is the caller's own, shared (`Call.decoded`); a Write decodes its
        object again only for an observer that reads it."""
        context = current_reconcile()
        reading = call.call in _READS
        if reading and context is None:
            return
        kind = str(call.resource.gvk)
        namespace, name = call.namespace or "", call.name or ""
        error = None if call.error is None else str(call.error)
        if reading:
            objects: tuple[tuple[str, str, str], ...] = ()
            if call.body and call.call != "logs":
                answer = call.decoded()
                items = answer.get("items") if call.call == "list" else [answer]
                objects = tuple(object_version(item) for item in items or ())
            verb = "list" if call.call == "list" else "get"
            self.observers.emit(Read(context, "api", verb, kind, namespace, name, objects, error))
            return
        manager = call.params.get("fieldManager", "")
        answer = call.decoded() if call.body else None
        version = ""
        body = None
        if isinstance(answer, dict) and answer.get("kind") != "Status":
            namespace, name, version = object_version(answer)
            namespace = namespace or call.namespace or ""
            body = call.body
        self.observers.emit(
            Write(
                context,
                call.call,
                kind,
                namespace,
                name,
                version,
                manager,
                call.code,
                error,
                answer=body,
            )
        )

    @property
    def webhook_server(self) -> WebhookServer:
        """The webhook server (port 9443, certificates from controller-runtime's default
        directory unless configured); it runs once a webhook is registered."""
        if self._webhook_server is None:
            self._webhook_server = WebhookServer(metrics=self.metrics.webhook)
        return self._webhook_server

    @overload
    def webhook_for(self, kind: type[T]) -> WebhookBuilder[T]: ...

    @overload
    def webhook_for(self, kind: str | GroupVersionKind) -> WebhookBuilder[dict[str, Any]]: ...

    def webhook_for(self, kind: Any) -> WebhookBuilder[Any]:
        """Start registering a kind's defaulting and validating webhooks (objects arrive as
        the kind's class, or as dicts for a kind given by name)."""
        return WebhookBuilder(self.webhook_server, kind)

    def add(self, runnable: Runnable, *, need_leader_election: bool = True) -> None:
        """Run `runnable(stopping)` with the controllers; it returns once `stopping` is set."""
        self._runnables.append((runnable, need_leader_election))

    def add_webhook_registration(self, hook: WebhookRegistrationHook) -> None:
        """Enter `hook(webhook_server)` once the webhook server has started (it starts when a
        webhook is registered), before the caches list anything, and leave it after the
        caches have stopped, while the server still answers: how a cluster is told to call
        the server. An error entering it stops the manager, and start() raises it."""
        self._webhook_registrations.append(hook)

    @property
    def runnables(self) -> list[str]:
        """The names of the runnables given to add(), in order."""
        return [_describe(runnable) for runnable, _ in self._runnables]

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._readyz[name] = check

    def event_recorder(self, name: str, *, correlate: bool = True) -> EventRecorder:
        """An event recorder reporting as controller `name` (events.k8s.io/v1); its
        `record()` works from plain `def` reconcilers' threads too, and aggregates similar
        events and rate limits each object's as client-go's recorder does (unless
        `correlate=False`)."""
        recorder = EventRecorder(self.api_reader, controller=name, correlate=correlate)
        self._recorders.append(recorder)
        return recorder

    # HTTP: probes and metrics -----------------------------------------------------------------

    async def _run_checks(self, checks: Mapping[str, Check]) -> list[str]:
        failed = []
        for name, check in checks.items():
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                if not result:
                    failed.append(name)
            except Exception:
                failed.append(name)
        return failed

    async def _probe(self, request: web.Request) -> web.Response:
        checks = self._healthz if request.path == "/healthz" else self._readyz
        failed = await self._run_checks(checks)
        if request.path == "/readyz" and not self.synced:
            failed.append("informer-sync")
        if failed:
            return web.Response(status=500, text="checks failed: " + ", ".join(failed) + "\n")
        return web.Response(text="ok")

    async def _metrics(self, request: web.Request) -> web.Response:
        body, content_type = self.metrics.render()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _serve(
        self,
        name: str,
        address: tuple[str, int],
        routes: list[web.RouteDef],
        secure: bool = False,
    ) -> None:
        ssl_context = None
        middlewares = []
        if secure:
            from kubeforge._runtime.metricsauth import MetricsAuth, serving_context

            ssl_context = serving_context(self.metrics_cert_dir, address[0])
            middlewares.append(MetricsAuth(self.api_reader).middleware)
        app = web.Application(middlewares=middlewares)
        app.add_routes(routes)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, address[0], address[1], ssl_context=ssl_context)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", [])
        self.bound[name] = sockets[0].getsockname()[:2]
        self._runners.append(runner)

    async def _start_http(self) -> None:
        probes = [web.get("/healthz", self._probe), web.get("/readyz", self._probe)]
        metrics = [web.get("/metrics", self._metrics)]
        if (
            self.probe_address
            and self.probe_address == self.metrics_address
            and not self.secure_metrics
        ):
            await self._serve("probes", self.probe_address, probes + metrics)
            self.bound["metrics"] = self.bound["probes"]
            return
        if self.probe_address:
            await self._serve("probes", self.probe_address, probes)
        if self.metrics_address:
            await self._serve("metrics", self.metrics_address, metrics, self.secure_metrics)

    async def _start_webhooks(self) -> None:
        server = self._webhook_server
        if server is None or not server.webhooks:
            return
        await server.start()
        self._webhooks_started = True
        self._readyz.setdefault("webhook", server.ready)

    # running --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Begin a graceful shutdown (what SIGTERM does)."""
        self._stopping.set()

    def kill(self) -> None:
        """Stop at once, as `kill -9` of the process does: from this call on nothing reaches
        the cluster (the client refuses to send, its connections and watches drop), running
        reconciles are cancelled where they stand, and nothing is handed over (the leader
        lease stays held until it expires). `start()` then returns; what is only this
        process's (its servers and sockets) is released as the process's end would."""
        if self._killed:
            return
        self._killed = True
        self.api_reader.abort()
        for controller in self.controllers.values():
            controller.kill()
        if self.elector is not None:
            self.elector.release_on_cancel = False
        self._stopping.set()

    @property
    def killed(self) -> bool:
        """Whether `kill()` stopped this manager."""
        return self._killed

    async def start(self) -> None:
        """Run until stop() (or leadership is lost, raising LeadershipLost)."""
        lost = asyncio.Event()
        tasks: list[asyncio.Task[Any]] = []
        try:
            for sync in self._sync_clients:
                sync.bind(asyncio.get_running_loop())
            for recorder in self._recorders:
                recorder.bind(asyncio.get_running_loop())
            await self._start_http()
            await self._start_webhooks()
            if self._webhooks_started:
                for hook in self._webhook_registrations:
                    await self._registered.enter_async_context(hook(self.webhook_server))
            for owner, handler in self._owner_scopes:
                resource = await self.api_reader.resource(owner)
                handler.owner_namespaced = resource.namespaced
            await self.cache.start()
            timeouts = [c.options.cache_sync_timeout for c in self.controllers.values()]
            if not await self.cache.wait_for_sync(max(timeouts, default=120.0)):
                raise TimeoutError("caches did not sync in time")
            self.synced = True
            log.info("caches synced")
            # Work that needs no leadership starts at once.
            for controller in self.controllers.values():
                if controller.started_by is None and not controller.options.need_leader_election:
                    await controller.start()
            for runnable, needs_leader in self._runnables:
                if not needs_leader:
                    tasks.append(self._start_runnable(runnable))
            if not self.leader_election or await self._lead(lost, tasks):
                await self._run_leading(lost, tasks)
        finally:
            self.running.clear()
            await self._shutdown(tasks)
        if self._killed:
            return  # what failed after the kill is its consequence, not news
        if self._failure is not None:
            raise self._failure
        if lost.is_set():
            raise LeadershipLost("leader election lost")

    async def _run_leading(self, lost: asyncio.Event, tasks: list[asyncio.Task[Any]]) -> None:
        """Start what needs leadership, then wait for a stop or the loss of the lease."""
        for controller in self.controllers.values():
            if controller.started_by is None:
                await controller.start()
        for runnable, needs_leader in self._runnables:
            if needs_leader:
                tasks.append(self._start_runnable(runnable))
        self.running.set()
        stop_wait = asyncio.create_task(self._stopping.wait())
        lost_wait = asyncio.create_task(lost.wait())
        await asyncio.wait({stop_wait, lost_wait}, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        lost_wait.cancel()

    def _fail(self, error: BaseException) -> None:
        """Something the manager runs failed for good: stop, and have start() raise it."""
        if self._failure is None:
            self._failure = error
        self._stopping.set()

    def _start_runnable(self, runnable: Runnable) -> asyncio.Task[None]:
        """Run an added runnable; one that fails stops the manager, and start() raises its
        error (a runnable that returns early is simply done)."""
        task = asyncio.create_task(runnable(self._stopping), name=_describe(runnable))

        def finished(done: asyncio.Task[None]) -> None:
            if done.cancelled() or done.exception() is None:
                return
            error = done.exception()
            assert error is not None
            log.error("runnable %s failed: %r; stopping", done.get_name(), error)
            self._fail(error)

        task.add_done_callback(finished)
        return task

    async def _lead(self, lost: asyncio.Event, tasks: list[asyncio.Task[Any]]) -> bool:
        """Block until this process leads (True) or a stop is asked for first (False)."""
        if not self.leader_election_id:
            raise ValueError("leader election needs leader_election_id")
        leading = asyncio.Event()
        namespace = self.leader_election_namespace or self.api_reader.namespace

        def started() -> None:
            self.leading = True
            self.metrics.set_leader(self.leader_election_id or "", True)
            leading.set()

        def stopped() -> None:
            self.leading = False
            self.metrics.set_leader(self.leader_election_id or "", False)
            if not self._stopping.is_set():
                lost.set()

        self.elector = LeaderElector(
            self.api_reader,
            name=self.leader_election_id,
            namespace=namespace,
            identity=self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            release_on_cancel=self.release_on_cancel,
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        elector_task = asyncio.create_task(self._run_elector(lost))
        tasks.append(elector_task)
        lead_wait = asyncio.create_task(leading.wait())
        stop_wait = asyncio.create_task(self._stopping.wait())
        await asyncio.wait({lead_wait, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        lead_wait.cancel()
        stop_wait.cancel()
        return leading.is_set() and not self._stopping.is_set()

    async def _run_elector(self, lost: asyncio.Event) -> None:
        assert self.elector is not None
        try:
            await self.elector.run()
        except LeadershipLost:
            lost.set()

    async def _shutdown(self, tasks: list[asyncio.Task[Any]]) -> None:
        self._stopping.set()
        # The machine's time: shutting down is bounded in real seconds on any clock.
        grace = 0.0 if self._killed else self.graceful_shutdown_timeout
        deadline = asyncio.get_running_loop().time() + grace

        def remaining() -> float:
            return max(deadline - asyncio.get_running_loop().time(), 0.0)

        await asyncio.gather(
            *(c.stop(timeout=remaining()) for c in self.controllers.values()),
            return_exceptions=True,
        )
        if self.elector is not None:
            # Nothing reconciles any more: hand the lease over now (when release_on_cancel).
            self.elector.stop()
        # Runnables were told to stop; give them what is left of the grace period.
        pending = [t for t in tasks if not t.done()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=remaining())
            for task in still:
                task.cancel()
            for task in still:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.cache.stop()
        try:
            # Nothing reads through the caches any more, and the server still answers.
            await self._registered.aclose()
        finally:
            if self._webhooks_started and self._webhook_server is not None:
                await self._webhook_server.stop()
                self._webhooks_started = False
            for runner in self._runners:
                await runner.cleanup()
            self._runners.clear()
            await self.api_reader.close()

    async def run(self) -> None:
        """start(), with SIGTERM and SIGINT starting a graceful shutdown (a second forces exit)."""
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        count = 0

        def on_signal() -> None:
            nonlocal count
            count += 1
            if count > 1:
                os._exit(1)
            log.info("shutting down (a second signal forces exit)")
            self.stop()

        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        try:
            await self.start()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
