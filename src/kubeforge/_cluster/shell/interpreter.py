"""Running a parsed script: expansions, lists, pipelines, conditionals and loops, with the
utilities of utilities.py built in and every other program handed to the caller's `Program`.

Files a script writes live in memory (a dict shared with its subshells); both output streams
go to the one output the caller gives, as a container's do to its log.
"""

from __future__ import annotations

import ast
import asyncio
import fnmatch
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge._cluster.shell.arithmetic import evaluate
from kubeforge._cluster.shell.control import (
    DEV_NULL,
    SHELLS,
    TO_LOG,
    Exit,
    LoopControl,
    Output,
    Program,
    program_name,
)
from kubeforge._cluster.shell.filetools import FILE_UTILITIES
from kubeforge._cluster.shell.syntax import (
    AndOr,
    CommandList,
    For,
    Group,
    If,
    Loop,
    Pipeline,
    Redirect,
    ShellSyntaxError,
    Simple,
    Word,
    parse,
)
from kubeforge._cluster.shell.utilities import UTILITIES

__all__ = ["Shell", "run_command", "run_script", "shell_script"]

_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*!-])(##|#|%%|%|:?[-=+?])?(.*)", re.S)
# Loops yield to the event loop every round; one that has not slept for this long is
# slowed down, so an endless busy loop cannot eat the cluster's CPU.
_BUSY_SECONDS = 0.5
_BUSY_PAUSE = 0.01


def shell_script(argv: Sequence[str]) -> tuple[str, list[str], str] | None:
    """For `sh [-opts] -c script [name args...]`: the script, its parameters from $0 on
    and the options given (e for errexit ...); None for any other command line."""
    if not argv or program_name(argv[0]) not in SHELLS:
        return None
    options = ""
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-", "--"):
        options += argv[i][1:]
        i += 1
    if "c" not in options or i >= len(argv):
        return None
    return argv[i], list(argv[i + 1 :]), options


async def run_script(
    script: str,
    env: Mapping[str, str],
    out: Output,
    programs: Program,
    *,
    sleep_seconds: float | None = None,
    positional: Sequence[str] = ("sh",),
    options: str = "",
    files: dict[str, bytes] | None = None,
    errors: Output | None = None,
) -> int:
    """Run a script; its exit status. `programs` runs what the interpreter does not know;
    `sleep_seconds` (when set) replaces every finite `sleep`. A script beyond the
    interpreter's grammar is handed to `programs` whole, as `sh -c script`."""
    try:
        body = parse(script)
    except ShellSyntaxError:
        return await programs([positional[0] if positional else "sh", "-c", script], out)
    shell = Shell(
        env,
        out,
        programs,
        sleep_seconds=sleep_seconds,
        positional=positional,
        options=options,
        files=files,
        errors=errors,
    )
    return await shell.run_script(body)


class Shell:
    """One simulated shell: variables, positional parameters, an in-memory file system."""

    def __init__(
        self,
        env: Mapping[str, str],
        out: Output,
        programs: Program,
        *,
        sleep_seconds: float | None = None,
        positional: Sequence[str] = (),
        options: str = "",
        files: dict[str, bytes] | None = None,
        errors: Output | None = None,
    ) -> None:
        self.vars: dict[str, str] = dict(env)
        self.out = out
        # Where utilities' own diagnostics go: the output, unless the caller keeps them
        # apart (an exec's stderr).
        self.errors = errors if errors is not None else out
        self.programs = programs
        self.sleep_seconds = sleep_seconds
        self.positional = list(positional)
        self.errexit = "e" in options
        self.status = 0
        self.files: dict[str, bytes] = files if files is not None else {}
        self.background: list[asyncio.Task[int]] = []
        self.busy_since: float | None = None
        self.condition_depth = 0

    # expansion ------------------------------------------------------------------------------

    def param(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "#":
            return str(max(len(self.positional) - 1, 0))
        if name in ("@", "*"):
            return " ".join(self.positional[1:])
        if name == "!":
            return "2"
        if name == "-":
            return "e" if self.errexit else ""
        if name.isdigit():
            index = int(name)
            return self.positional[index] if index < len(self.positional) else ""
        return self.vars.get(name, "")

    def braced(self, spec: str) -> str:
        if spec.startswith("#") and len(spec) > 1:
            return str(len(self.braced(spec[1:])))
        match = _BRACED.fullmatch(spec)
        if match is None:
            raise ShellSyntaxError(f"bad substitution: ${{{spec}}}")
        name, op, rest = match.group(1), match.group(2), match.group(3)
        value = self.param(name)
        if op is None:
            if rest:
                raise ShellSyntaxError(f"bad substitution: ${{{spec}}}")
            return value
        if op in ("#", "##"):
            # Remove the shortest (#) or longest (##) prefix matching the pattern.
            ends = range(len(value) + 1) if op == "#" else range(len(value), -1, -1)
            return next((value[n:] for n in ends if fnmatch.fnmatchcase(value[:n], rest)), value)
        if op in ("%", "%%"):
            starts = range(len(value), -1, -1) if op == "%" else range(len(value) + 1)
            return next((value[:n] for n in starts if fnmatch.fnmatchcase(value[n:], rest)), value)
        is_set = name in self.vars or (name.isdigit() and int(name) < len(self.positional))
        empty = not value if op.startswith(":") else not is_set
        kind = op[-1]
        if kind in "-=" and empty:
            if kind == "=":
                self.vars[name] = rest
            return rest
        if kind == "+":
            return "" if empty else rest
        if kind == "?" and empty:
            self.out(f"sh: {name}: {rest or 'parameter not set'}\n".encode())
            raise Exit(1)
        return value

    async def expand(self, word: Word, split: bool = True) -> list[str]:
        """A word's fields after parameter, command and arithmetic expansion."""
        fields: list[str] = []
        current: list[str] = []
        have_field = False
        for kind, value, quoted in word:
            if kind == "lit":
                current.append(str(value))
                have_field = True
                continue
            if kind == "var":
                if value == "@" and quoted and split:
                    # "$@": one field per positional parameter.
                    args = self.positional[1:]
                    if args:
                        current.append(args[0])
                        for arg in args[1:]:
                            fields.append("".join(current))
                            current = [arg]
                        have_field = True
                    continue
                text = self.braced(value)
            elif kind == "cmd":
                text = (await self.capture(value)).rstrip("\n")
            else:
                text = str(self.arithmetic(str(value)))
            if quoted or not split:
                current.append(text)
                have_field = True
                continue
            pieces = text.split()
            if not pieces:
                continue
            if text[:1].isspace() and current:
                fields.append("".join(current))
                current = []
            current.append(pieces[0])
            for piece in pieces[1:]:
                fields.append("".join(current))
                current = [piece]
            have_field = True
            if text[-1:].isspace():
                fields.append("".join(current))
                current = []
                have_field = False
        if have_field or current:
            fields.append("".join(current))
        return fields

    async def expand_words(self, words: list[Word]) -> list[str]:
        out: list[str] = []
        for word in words:
            out.extend(await self.expand(word))
        return out

    async def expand_one(self, word: Word) -> str:
        return "".join(await self.expand(word, split=False))

    def arithmetic(self, expression: str) -> int:
        def value_of(match: re.Match[str]) -> str:
            text = self.param(match.group(0))
            try:
                return str(int(text or "0"))
            except ValueError:
                return "0"

        text = re.sub(r"\$?([A-Za-z_][A-Za-z0-9_]*)", value_of, expression)
        text = re.sub(r"\$(\d|[?#])", lambda m: self.param(m.group(1)) or "0", text)
        text = text.replace("&&", " and ").replace("||", " or ")
        text = re.sub(r"!(?!=)", " not ", text)
        try:
            return evaluate(ast.parse(text.strip() or "0", mode="eval").body)
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
            self.out(f"sh: arithmetic syntax error: {expression}\n".encode())
            raise Exit(2) from exc

    async def capture(self, body: CommandList) -> str:
        chunks: list[bytes] = []
        self.status = await self.subshell(chunks.append).run_script(body)
        return b"".join(chunks).decode(errors="replace")

    def subshell(self, out: Output) -> Shell:
        sub = Shell(
            self.vars,
            out,
            self.programs,
            sleep_seconds=self.sleep_seconds,
            positional=self.positional,
            files=self.files,
            errors=self.errors,
        )
        sub.errexit = self.errexit
        return sub

    # running --------------------------------------------------------------------------------

    async def run_script(self, body: CommandList) -> int:
        try:
            await self.run_list(body)
        except Exit as done:
            self.status = done.code
        except LoopControl:
            pass
        except ShellSyntaxError as exc:
            self.out(f"sh: {exc}\n".encode())
            self.status = 2
        finally:
            for task in self.background:
                task.cancel()
        return self.status

    async def run_list(self, body: CommandList) -> int:
        for command, background in body.items:
            if background:
                sub = self.subshell(self.out)
                task = asyncio.ensure_future(sub.run_script(CommandList([(command, False)])))
                self.background.append(task)
                self.status = 0
                continue
            status, exempt = await self.run_and_or(command)
            if status and self.errexit and not exempt and not self.condition_depth:
                raise Exit(status)
        return self.status

    async def run_and_or(self, command: AndOr) -> tuple[int, bool]:
        """The status of an `a && b || c` chain, and whether it came from a command errexit
        ignores (one followed by && or ||, or a negated one)."""
        pipelines = [command.first, *(p for _, p in command.rest)]
        status, exempt = 0, False
        for i, pipeline in enumerate(pipelines):
            if i and (command.rest[i - 1][0] == "&&") != (status == 0):
                continue
            last = i == len(pipelines) - 1
            self.condition_depth += 0 if last else 1
            try:
                status = await self.run_pipeline(pipeline)
            finally:
                self.condition_depth -= 0 if last else 1
            exempt = not last or pipeline.negate
        self.status = status
        return status, exempt

    async def run_pipeline(self, pipeline: Pipeline) -> int:
        stdin = b""
        status = 0
        last = len(pipeline.commands) - 1
        for i, command in enumerate(pipeline.commands):
            if i == last:
                status = await self.run_command(command, stdin, self.out)
            else:
                chunks: list[bytes] = []
                status = await self.run_command(command, stdin, chunks.append)
                stdin = b"".join(chunks)
        if pipeline.negate:
            status = 0 if status else 1
        self.status = status
        return status

    async def run_command(self, node: Any, stdin: bytes, out: Output) -> int:
        if isinstance(node, Simple):
            return await self.run_simple(node, stdin, out)
        saved = self.out
        self.out, stdin = await self.redirected(node.redirects, out, stdin)
        try:
            if isinstance(node, Group) and node.subshell:
                self.status = await self.subshell(self.out).run_script(node.body)
                return self.status
            if isinstance(node, Group):
                return await self.run_list(node.body)
            if isinstance(node, If):
                return await self.run_if(node)
            if isinstance(node, Loop):
                return await self.run_loop(node)
            return await self.run_for(node)
        finally:
            self.out = saved

    async def run_if(self, node: If) -> int:
        for condition, body in node.branches:
            if await self.test_condition(condition) == 0:
                return await self.run_list(body)
        if node.otherwise is not None:
            return await self.run_list(node.otherwise)
        self.status = 0
        return 0

    async def test_condition(self, condition: CommandList) -> int:
        self.condition_depth += 1
        try:
            return await self.run_list(condition)
        finally:
            self.condition_depth -= 1

    async def run_loop(self, node: Loop) -> int:
        status = 0
        while True:
            result = await self.test_condition(node.condition)
            if (result == 0) == node.until:
                break
            try:
                status = await self.run_list(node.body)
            except LoopControl as control:
                if control.levels > 1:
                    control.levels -= 1
                    raise
                if control.kind == "break":
                    break
            await self.pace()
        self.status = status
        return status

    async def run_for(self, node: For) -> int:
        values = self.positional[1:] if node.words is None else await self.expand_words(node.words)
        status = 0
        for value in values:
            self.vars[node.name] = value
            try:
                status = await self.run_list(node.body)
            except LoopControl as control:
                if control.levels > 1:
                    control.levels -= 1
                    raise
                if control.kind == "break":
                    break
            await self.pace()
        self.status = status
        return status

    async def pace(self) -> None:
        """Yield to the event loop each round; slow down loops that never sleep (the
        machine's time: this shares the processor, it is not the script's time)."""
        now = time.monotonic()
        if self.busy_since is None:
            self.busy_since = now
        await asyncio.sleep(_BUSY_PAUSE if now - self.busy_since > _BUSY_SECONDS else 0)

    async def redirected(
        self, redirects: list[Redirect], out: Output, stdin: bytes
    ) -> tuple[Output, bytes]:
        for redirect in redirects:
            target = await self.expand_one(redirect.target)
            if redirect.op == "<":
                stdin = self.files.get(target, b"")
            elif redirect.op == ">&" or redirect.fd == 2 or target in TO_LOG:
                # Both output streams end in the container log.
                continue
            elif target in DEV_NULL:
                out = discard
            else:
                if redirect.op == ">" or target not in self.files:
                    self.files[target] = b""
                out = self._file_writer(target)
        return out, stdin

    def _file_writer(self, path: str) -> Output:
        def write(data: bytes) -> None:
            self.files[path] = self.files.get(path, b"") + data

        return write

    async def run_simple(self, node: Simple, stdin: bytes, out: Output) -> int:
        saved = self.out
        try:
            argv = await self.expand_words(node.words)
            if not argv:
                self.status = 0  # a command substitution in a value sets it
            values = [(name, await self.expand_one(value)) for name, value in node.assignments]
            self.out, stdin = await self.redirected(node.redirects, out, stdin)
            if not argv:
                self.vars.update(values)
                return self.status
            self.status = await self.call(argv, stdin, dict(values))
            return self.status
        finally:
            self.out = saved

    async def call(self, argv: list[str], stdin: bytes, scoped: Mapping[str, str]) -> int:
        """Run one command line with `scoped` variables set for it alone."""
        name = program_name(argv[0])
        builtin = UTILITIES.get(name) or FILE_UTILITIES.get(name)
        if builtin is not None:
            if not scoped:
                return await builtin(self, argv, stdin)
            saved = dict(self.vars)
            self.vars.update(scoped)
            try:
                return await builtin(self, argv, stdin)
            finally:
                self.vars = saved
        env = {**self.vars, **scoped}
        script = shell_script(argv)
        if script is not None:
            text, positional, options = script
            return await self.run_nested(text, env, positional or [name], options)
        if name in SHELLS and len(argv) == 1:
            return await self.run_nested(stdin.decode(errors="replace"), env, [name], "")
        return await self.programs(argv, self.out)

    async def run_nested(
        self, script: str, env: Mapping[str, str], positional: Sequence[str], options: str
    ) -> int:
        """A shell started by this one (`sh -c ...`): its own variables, the same files."""
        return await run_script(
            script,
            env,
            self.out,
            self.programs,
            sleep_seconds=self.sleep_seconds,
            positional=positional,
            options=options,
            files=self.files,
            errors=self.errors,
        )

    def write(self, text: str) -> None:
        self.out(text.encode())

    def complain(self, text: str) -> None:
        """A utility's diagnostic (stderr when the caller keeps it apart)."""
        self.errors(text.encode())


def discard(data: bytes) -> None:
    return None


async def run_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    out: Output,
    programs: Program,
    *,
    sleep_seconds: float | None = None,
    files: dict[str, bytes] | None = None,
    stdin: bytes = b"",
    errors: Output | None = None,
) -> int:
    """Run one command line as a shell would run it as its only command (a utility,
    `sh -c ...`, or a program handed to `programs`); its exit status. `files` is the file
    system it sees (and changes), `stdin` its whole input."""
    shell = Shell(env, out, programs, sleep_seconds=sleep_seconds, files=files, errors=errors)
    try:
        return int(await shell.call(list(argv), stdin, {}))
    except Exit as done:
        return done.code
    except LoopControl:
        return 0
