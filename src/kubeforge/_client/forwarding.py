"""Verbs one client serves by calling another's, declared once each from the verb they call:
as they are (`forward`: the cached client's writes are the live client's) or blocking
(`blocking`: the sync client runs the cached client's calls on its event loop).

A forwarded verb's static type is the verb it forwards to, parameters, keywords and generic
result alike; a blocking one returns the result instead of a coroutine. `blocking_member`
declares a protocol's member the same way (a protocol's members need declared types).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from operator import attrgetter
from typing import Any, Concatenate, ParamSpec, Protocol, cast, overload

from typing_extensions import TypeVar

__all__ = ["Verb", "blocking", "blocking_member", "forward"]

P = ParamSpec("P")
# The default is the one of the verbs' own result variable (a kind given by name reads as
# dicts): where a verb's result is that variable itself, the checker carries it on as R.
R = TypeVar("R", default=dict[str, Any])
R_co = TypeVar("R_co", covariant=True)


class Verb(Protocol[P, R_co]):
    """A method as its class holds it: called on an instance, it takes `P` and returns `R_co`."""

    @overload
    def __get__(self, obj: None, owner: type[Any], /) -> Callable[Concatenate[Any, P], R_co]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None, /) -> Callable[P, R_co]: ...


class _Runner(Protocol):
    def run(self, coroutine: Coroutine[Any, Any, Any], /) -> Any: ...


class _Forwarded:
    """`name` of the object at attribute `via`, run to its result by the owner's `run` when
    `blocking`."""

    def __init__(self, verb: Callable[..., Any], via: str, blocking: bool) -> None:
        self._via = via
        self._target = attrgetter(via)  # the verb's name comes with __set_name__
        self._blocking = blocking
        self.__doc__ = verb.__doc__
        self.__wrapped__ = verb

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._target = attrgetter(f"{self._via}.{name}")

    def __get__(self, obj: object, owner: type[Any] | None = None) -> Any:
        if obj is None:
            return self
        target = self._target(obj)
        if not self._blocking:
            return target
        runner = cast(_Runner, obj)

        def call(*args: Any, **kwargs: Any) -> Any:
            return runner.run(target(*args, **kwargs))

        return call

    def __call__(self, obj: object, /, *args: Any, **kwargs: Any) -> Any:
        return self.__get__(obj)(*args, **kwargs)


def forward(verb: Callable[Concatenate[Any, P], R], *, via: str) -> Verb[P, R]:
    """The verb named as `verb` of the object at attribute `via`, typed as `verb`."""
    return cast(Verb[P, R], _Forwarded(verb, via, blocking=False))


def blocking(verb: Callable[Concatenate[Any, P], Awaitable[R]], *, via: str) -> Verb[P, R]:
    """`forward`, awaited: the owner's `run(coroutine)` runs the call to its result."""
    return cast(Verb[P, R], _Forwarded(verb, via, blocking=True))


def blocking_member(
    verb: Callable[Concatenate[Any, P], Awaitable[R]],
) -> Callable[[Callable[..., object]], Verb[P, R]]:
    """Declare a protocol member as `verb`, blocking, over a placeholder that names it:
    `@blocking_member(Reader.get)` above `def get(self) -> None: ...`."""

    def declare(placeholder: Callable[..., object]) -> Verb[P, R]:
        placeholder.__doc__ = placeholder.__doc__ or verb.__doc__
        placeholder.__wrapped__ = verb  # type: ignore[attr-defined]
        return cast(Verb[P, R], placeholder)

    return declare
