"""Client-side faults: a client whose calls go through hooks first.

As controller-runtime's `interceptor.NewClient(c, interceptor.Funcs{...})`
(pkg/client/interceptor): `intercept(client, Interceptors(update=hook))` is a client like
`client` whose `update` calls `hook(client, call)` instead. The hook gets the wrapped client
and the call (`InterceptedCall`: verb, kind, namespace, name, arguments) and answers for it:
it may raise, wait, look, or make the call (`await call.proceed()`), before or after doing
something else. A verb with no hook of its own goes to the `default` hook, else straight to
the wrapped client; every other attribute (`namespace`, `watch`, `api` ...) is the wrapped
client's own.

`fail_with`, `delay_by` and `observe` make the usual hooks, and `conflict`, `not_found`,
`server_error`, `too_many_requests` and `server_timeout` the errors the API server would
answer with (docs/testing.md has a recipe for each). An error a hook raises reaches the
caller as is: the client's own retries (of a 429, or of a 5xx for reads) happen below the
hooks, so to test those, fail the request on the server instead (`ServerFaults`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, cast

from kubeforge import clock
from kubeforge._api.meta import GroupVersionKind, gvk_of
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._client.client import Client, to_dict
from kubeforge._client.errors import ApiError, error_from_status
from kubeforge._client.forwarding import Verb
from kubeforge._client.protocols import Reader, StatusWriter, Writer
from kubeforge._runtime.cached_client import CachedClient

__all__ = [
    "ErrorFactory",
    "Hook",
    "InterceptedCall",
    "InterceptedClient",
    "Interceptors",
    "conflict",
    "delay_by",
    "fail_with",
    "intercept",
    "not_found",
    "observe",
    "server_error",
    "server_timeout",
    "too_many_requests",
]

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C")

# The verbs that change something; a dry run of one changes nothing.
WRITE_VERBS = frozenset(
    {
        "create",
        "update",
        "patch",
        "apply",
        "delete",
        "delete_all_of",
        "update_status",
        "patch_status",
        "apply_status",
        "scale",
        "create_subresource",
    }
)


@dataclass(frozen=True, slots=True)
class InterceptedCall:
    """One call through an intercepted client, as its hook sees it.

    `verb` names the hook it went to (`get_metadata` calls are `get`s, `delete_object` ones
    `delete`s, an `update` of the status subresource an `update_status`); `method` is the
    client method called. `kind` is `"<apiVersion>/<Kind>"` (`"apps/v1/Deployment"`),
    `namespace` the one given (None: the client's default, or a cluster-scoped kind), `name`
    the object's (None for lists and for a create with `generateName`). `args` and `options`
    are the call's own; `proceed()` makes it with the wrapped client."""

    verb: str
    method: str
    kind: str
    namespace: str | None
    name: str | None
    args: tuple[Any, ...]
    options: Mapping[str, Any]
    client: Any
    # The served resource (plural, group) when the wrapped client knows the kind.
    resource: str = ""
    group: str = ""

    @property
    def write(self) -> bool:
        """Whether the call changes something (a write that is not a dry run)."""
        return self.verb in WRITE_VERBS and not self.options.get("dry_run")

    @property
    def obj(self) -> Any:
        """The object given to create, update, apply or delete_object (else None)."""
        return self.args[0] if _SHAPES.get(self.method) == "obj" else None

    async def proceed(self) -> Any:
        """Make the call with the wrapped client and return what it returns."""
        return await getattr(self.client, self.method)(*self.args, **self.options)

    def matches(
        self, *, kind: Any = None, name: str | None = None, namespace: str | None = None
    ) -> bool:
        """Whether the call is about `kind` (a typed class, a GroupVersionKind, an
        `"apps/v1/Deployment"` string or a bare `"Deployment"`), `name` and `namespace`
        (each left out matches any)."""
        if name is not None and self.name != name:
            return False
        if namespace is not None and self.namespace != namespace:
            return False
        if kind is None:
            return True
        wanted = kind_text(kind)
        return self.kind == wanted or ("/" not in wanted and self.kind.endswith("/" + wanted))


Hook = Callable[[Any, InterceptedCall], Awaitable[Any]]
"""`hook(client, call)`: answers for a call; `client` is the wrapped client."""

ErrorFactory = Callable[[InterceptedCall], BaseException]
"""Makes the error a failed call raises."""


@dataclass(frozen=True)
class Interceptors:
    """Hooks by verb (controller-runtime's interceptor.Funcs); `default` takes the verbs
    that have none. A verb with neither goes straight to the wrapped client."""

    get: Hook | None = None
    list: Hook | None = None
    create: Hook | None = None
    update: Hook | None = None
    patch: Hook | None = None
    apply: Hook | None = None
    delete: Hook | None = None
    delete_all_of: Hook | None = None
    update_status: Hook | None = None
    patch_status: Hook | None = None
    apply_status: Hook | None = None
    scale: Hook | None = None
    create_subresource: Hook | None = None
    default: Hook | None = None

    def hook_for(self, verb: str) -> Hook | None:
        """The hook a call of `verb` goes to, or None."""
        found: Hook | None = getattr(self, verb, None) if verb in _VERBS else None
        return found or self.default


_VERBS = frozenset(f.name for f in fields(Interceptors)) - {"default"}

# How each intercepted method names its object: by the object given, by kind and name, or
# by kind alone (a collection).
Shape = Literal["obj", "kind_name", "kind"]
_SHAPES: dict[str, Shape] = {
    "get": "kind_name",
    "get_metadata": "kind_name",
    "list": "kind",
    "list_metadata": "kind",
    "create": "obj",
    "update": "obj",
    "patch": "kind_name",
    "apply": "obj",
    "delete": "kind_name",
    "delete_object": "obj",
    "delete_all_of": "kind",
    "update_status": "obj",
    "patch_status": "kind_name",
    "apply_status": "obj",
    "scale": "kind_name",
    "create_subresource": "kind_name",
}
_FAMILY = {"get_metadata": "get", "list_metadata": "list", "delete_object": "delete"}


def kind_text(kind: Any) -> str:
    """A kind as `"<apiVersion>/<Kind>"`: from a typed class, a GroupVersionKind or a string
    (a bare `"Kind"` stays as it is)."""
    info = getattr(kind, "__kubeforge__", None)
    gvk = getattr(info, "gvk", None)
    if isinstance(gvk, GroupVersionKind):
        return str(gvk)
    if isinstance(kind, GroupVersionKind):
        return str(kind)
    text = str(kind)
    if "/" not in text:
        return text
    try:
        return str(GroupVersionKind.parse(text))
    except ValueError:
        return text


def _verb_of(method: str, options: Mapping[str, Any]) -> str:
    verb = _FAMILY.get(method, method)
    if verb in ("update", "patch", "apply") and options.get("subresource") == "status":
        return f"{verb}_status"
    return verb


async def _resource_of(client: Any, kind: Any) -> tuple[str, str]:
    """(plural, group) of `kind` as the wrapped client knows it, or ("", "")."""
    info = getattr(kind, "__kubeforge__", None)
    if info is not None and isinstance(getattr(info, "gvk", None), GroupVersionKind):
        return info.plural, info.gvk.group
    api = getattr(client, "api", client)
    resolve = getattr(api, "resource", None)
    if resolve is None:
        return "", ""
    try:
        found = await resolve(kind)
    except Exception:  # an unknown kind: the call itself will say so
        return "", ""
    return found.plural, found.group


class _Intercepted:
    """A client method that builds an InterceptedCall and hands it to the hook for its
    verb (or makes it at once when there is none)."""

    def __init__(self, verb: Callable[..., Any]) -> None:
        self.__doc__ = verb.__doc__
        self._method = getattr(verb, "__name__", "")

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._method = name

    def __get__(self, obj: InterceptedClient | None, owner: type[Any] | None = None) -> Any:
        if obj is None:
            return self
        method = self._method

        async def call(*args: Any, **options: Any) -> Any:
            return await obj._dispatch(method, args, options)

        call.__name__ = method
        call.__doc__ = self.__doc__
        return call


def _intercepted(verb: Callable[Concatenate[Any, P], R]) -> Verb[P, R]:
    """The client method `verb` (a protocol's or a client's), through the hooks; typed as
    `verb`."""
    return cast(Verb[P, R], _Intercepted(verb))


class InterceptedClient:
    """A client whose calls go through `interceptors` before the wrapped client (see
    `intercept`). Attributes other than the verbs are the wrapped client's."""

    def __init__(self, client: Any, interceptors: Interceptors) -> None:
        self._client = client
        self._interceptors = interceptors

    @property
    def wrapped(self) -> Any:
        """The client the calls go to."""
        return self._client

    @property
    def interceptors(self) -> Interceptors:
        return self._interceptors

    def __getattr__(self, name: str) -> Any:
        # Only for attributes this class does not define: the wrapped client's own.
        return getattr(self._client, name)

    async def _dispatch(self, method: str, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
        verb = _verb_of(method, options)
        hook = self._interceptors.hook_for(verb)
        client = self._client
        if hook is None:
            return await getattr(client, method)(*args, **options)
        shape = _SHAPES[method]
        namespace: str | None = options.get("namespace")
        name: str | None = None
        if shape == "obj":
            kind_arg: Any = _kind_of_object(args[0])
            meta = to_dict(args[0]).get("metadata") or {}
            name = meta.get("name") or None
            namespace = namespace or meta.get("namespace") or None
        else:
            kind_arg = args[0]
            if shape == "kind_name":
                name = args[1]
        plural, group = await _resource_of(client, kind_arg)
        call = InterceptedCall(
            verb,
            method,
            kind_text(kind_arg),
            namespace,
            name,
            args,
            options,
            client,
            plural,
            group,
        )
        return await hook(client, call)

    get = _intercepted(Reader.get)
    list = _intercepted(Reader.list)
    get_metadata = _intercepted(Reader.get_metadata)
    list_metadata = _intercepted(Reader.list_metadata)
    create = _intercepted(Writer.create)
    update = _intercepted(Writer.update)
    patch = _intercepted(Writer.patch)
    apply = _intercepted(Writer.apply)
    delete = _intercepted(Writer.delete)
    delete_object = _intercepted(Writer.delete_object)
    delete_all_of = _intercepted(Writer.delete_all_of)
    update_status = _intercepted(StatusWriter.update_status)
    patch_status = _intercepted(StatusWriter.patch_status)
    apply_status = _intercepted(StatusWriter.apply_status)
    scale = _intercepted(Client.scale)
    create_subresource = _intercepted(CachedClient.create_subresource)


def _kind_of_object(obj: Any) -> Any:
    if getattr(type(obj), "__kubeforge__", None) is not None:
        return type(obj)
    return gvk_of(to_dict(obj))


def intercept(client: C, *interceptors: Interceptors) -> C:
    """`client`, with its calls going through `interceptors` first (the first given is the
    outermost: its hooks see a call before the next one's do). The result stands in for
    `client` (its type is `client`'s); every attribute but the verbs is `client`'s own."""
    wrapped: Any = client
    for layer in reversed(interceptors):
        wrapped = InterceptedClient(wrapped, layer)
    return cast(C, wrapped)


# hooks ----------------------------------------------------------------------------------------


def _chooser(
    kind: Any, name: str | None, namespace: str | None, when: Callable[[InterceptedCall], bool]
) -> Callable[[InterceptedCall], bool]:
    def chosen(call: InterceptedCall) -> bool:
        return call.matches(kind=kind, name=name, namespace=namespace) and when(call)

    return chosen


def _always(call: InterceptedCall) -> bool:
    return True


def fail_with(
    error: BaseException | ErrorFactory,
    *,
    kind: Any = None,
    name: str | None = None,
    namespace: str | None = None,
    when: Callable[[InterceptedCall], bool] = _always,
    times: int | None = None,
    applied: bool = False,
) -> Hook:
    """A hook that raises `error` (an exception, or a function of the call making one) for
    the calls about `kind`, `name` and `namespace` that `when` chooses, the first `times`
    of them (None: every one); the others go through. With `applied`, the call is made
    first and its answer replaced by the error: a write that happened though its caller
    hears it failed (a timeout after the commit)."""
    chosen = _chooser(kind, name, namespace, when)
    left = [times]

    async def hook(client: Any, call: InterceptedCall) -> Any:
        if left[0] == 0 or not chosen(call):
            return await call.proceed()
        if left[0] is not None:
            left[0] -= 1
        if applied:
            await call.proceed()
        raise error(call) if callable(error) else error

    return hook


def delay_by(
    seconds: float,
    *,
    kind: Any = None,
    name: str | None = None,
    namespace: str | None = None,
    when: Callable[[InterceptedCall], bool] = _always,
    times: int | None = None,
) -> Hook:
    """A hook that waits `seconds` (of kubeforge.clock) before making the chosen calls (as
    `fail_with` chooses them)."""
    chosen = _chooser(kind, name, namespace, when)
    left = [times]

    async def hook(client: Any, call: InterceptedCall) -> Any:
        if left[0] != 0 and chosen(call):
            if left[0] is not None:
                left[0] -= 1
            await clock.sleep(seconds)
        return await call.proceed()

    return hook


def observe(callback: Callable[[InterceptedCall, Any], object]) -> Hook:
    """A hook that makes every call and then tells `callback(call, outcome)`: what the call
    returned, or the exception it raised (raised on after the callback)."""

    async def hook(client: Any, call: InterceptedCall) -> Any:
        try:
            result = await call.proceed()
        except Exception as exc:
            callback(call, exc)
            raise
        callback(call, result)
        return result

    return hook


# errors, as the API server answers them -------------------------------------------------------


def _api_error(status: StatusError, call: InterceptedCall) -> ApiError:
    error = error_from_status(status.code, status.status())
    error.call = f"{call.method} {call.kind.rpartition('/')[2]} " + "/".join(
        part for part in (call.namespace, call.name) if part
    )
    return error


def _resource(call: InterceptedCall) -> tuple[str, str]:
    """(group, plural) for messages; the kind's name when the plural is not known."""
    if call.resource:
        return call.group, call.resource
    if "/" not in call.kind:
        return "", call.kind
    gvk = GroupVersionKind.parse(call.kind)
    return gvk.group, gvk.kind


def conflict() -> ErrorFactory:
    """409 Conflict, as for a stale resourceVersion ("the object has been modified")."""

    def make(call: InterceptedCall) -> BaseException:
        group, plural = _resource(call)
        return _api_error(StatusError.stale(group, plural, call.name or ""), call)

    return make


def not_found() -> ErrorFactory:
    """404 NotFound for the object the call names (as a cache that has not seen it yet)."""

    def make(call: InterceptedCall) -> BaseException:
        group, plural = _resource(call)
        return _api_error(StatusError.not_found(group, plural, call.name or ""), call)

    return make


_SERVER_REASONS = {500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


def server_error(code: int = 500, message: str = "injected server error") -> ErrorFactory:
    """A 5xx answer: 500 InternalError, 503 ServiceUnavailable, ... with `message`."""
    if not 500 <= code <= 599:
        raise ValueError(f"a server error's code is 5xx, not {code}")

    def make(call: InterceptedCall) -> BaseException:
        if code == 500:
            return _api_error(StatusError.internal(message), call)
        return _api_error(StatusError(code, _SERVER_REASONS.get(code, ""), message), call)

    return make


def too_many_requests(retry_after: int = 1) -> ErrorFactory:
    """429 TooManyRequests with Retry-After `retry_after` seconds (in the Status details, as
    API priority and fairness answers)."""

    def make(call: InterceptedCall) -> BaseException:
        status = StatusError.too_many_requests(
            "Too many requests, please try again later.", retry_after
        )
        return _api_error(status, call)

    return make


def server_timeout() -> ErrorFactory:
    """504 Timeout, as kube-apiserver's timeout filter answers a request that ran out of
    time (the request may still have been carried out: see `fail_with(applied=True)`)."""

    def make(call: InterceptedCall) -> BaseException:
        status = StatusError.timeout(
            "Timeout: request did not complete within requested timeout - context deadline exceeded"
        )
        return _api_error(status, call)

    return make
