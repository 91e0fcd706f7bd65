"""What the interpreter and its utilities share: where output goes, how a script ends early
(`exit`, `break`, `continue`), and the names of programs and files with a fixed meaning."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

__all__ = [
    "DEV_NULL",
    "SHELLS",
    "TO_LOG",
    "Exit",
    "LoopControl",
    "Output",
    "Program",
    "program_name",
]

# Where a command's output goes: the container log, a pipe's buffer or an in-memory file.
Output = Callable[[bytes], None]
# Runs a program the interpreter does not know (argv, output) and returns its exit status:
# the container rules decide what such a program does.
Program = Callable[[Sequence[str], Output], Awaitable[int]]

SHELLS = frozenset(("sh", "bash", "ash", "dash", "zsh", "ksh"))
DEV_NULL = ("/dev/null",)
# Both output streams of a container end in its log.
TO_LOG = ("/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/proc/self/fd/2")


class Exit(Exception):
    """`exit N` (or errexit): the script ends with this status."""

    def __init__(self, code: int) -> None:
        self.code = code


class LoopControl(Exception):
    """`break N` / `continue N`, unwinding to the loop it names."""

    def __init__(self, kind: str, levels: int) -> None:
        self.kind = kind
        self.levels = levels


def program_name(argv0: str) -> str:
    """The program a command names: `/bin/echo` -> `echo`."""
    return argv0.rsplit("/", 1)[-1]
