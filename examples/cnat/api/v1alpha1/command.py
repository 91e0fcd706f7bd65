"""v1alpha1's command line and v1's argument list, each from the other, losing nothing.

A command line is split into arguments as a POSIX shell splits words (`shlex.split`), and an
argument list is written back as a command line with `shlex.join`, which quotes what needs
quoting. Going from a list to a line and back always gives the same list. Going from a line
to a list and back gives a line that runs the same arguments but may be spelled differently
(`echo  'hi'` comes back as `echo hi`): such a line is kept, verbatim, in an annotation of the
v1 object, and written back as it was as long as it still splits into the object's arguments.
A line a shell cannot split (an unclosed quote) becomes `sh -c <line>`, so that the pod's
shell reports the mistake, as it would have.
"""

from __future__ import annotations

import shlex

__all__ = ["COMMAND_ANNOTATION", "argv_of", "command_line"]

# Where a v1 object keeps the v1alpha1 command line it was written with, when joining its
# arguments would spell that line differently.
COMMAND_ANNOTATION = "cnat.kubeforge.dev/v1alpha1-command"


def argv_of(command: str) -> list[str]:
    """The arguments a POSIX shell would run for `command` (`sh -c command` when it cannot
    split it)."""
    try:
        return shlex.split(command)
    except ValueError:
        return ["sh", "-c", command]


def command_line(argv: list[str], original: str | None = None) -> str:
    """A command line running `argv`: `original` when it still splits into `argv` (the line
    the object was written with), otherwise the arguments quoted as a shell needs them."""
    if original is not None and argv_of(original) == argv:
        return original
    return shlex.join(argv)
