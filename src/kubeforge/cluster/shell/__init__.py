"""A small POSIX shell interpreter for the scripts of simulated containers (`sh -c ...`).

Nothing is executed: `echo` prints, `sleep` waits, `exit 3` ends the script with status 3,
and programs the interpreter does not know are handed to a `Program` the caller gives (the
container rules of `kubeforge.cluster.simulation`). syntax.py reads a script, interpreter.py
runs it, utilities.py holds the built-in utilities (filetools.py those that see files as a
tree: `tar`, `ls`), arithmetic.py evaluates `$((...))`.
"""

from kubeforge.cluster.shell.control import Output, Program, program_name
from kubeforge.cluster.shell.interpreter import Shell, run_command, run_script, shell_script
from kubeforge.cluster.shell.syntax import ShellSyntaxError

__all__ = [
    "Output",
    "Program",
    "Shell",
    "ShellSyntaxError",
    "program_name",
    "run_command",
    "run_script",
    "shell_script",
]
