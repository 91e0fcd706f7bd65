"""`kubectl exec` in a running container: a command run beside the container's main one, with
its environment and files, as the container runtime's Exec runs it.

- **A local process** (`--exec-pods`, `--image`): the command runs on this machine with the
  container's environment and working directory, its mount paths and container ports in
  its arguments rewritten as the container's own command line was (containers.py); with a
  terminal it runs under a pseudo-terminal of its own, resized as the client asks.
- **A simulated container**: the command runs in the simulated shell (shell/), over the
  container's in-memory file system (its volumes' files at their mount paths, and what its
  scripts and earlier execs wrote), with the container's environment. A simulated command
  gets its whole input before it runs; `sh` (or another shell) with no script reads its
  input line by line, as an interactive shell does, with a prompt and echo under a
  terminal. A program the simulation does not know is not found, as in a container that
  lacks it: the exec fails, or a script gets `sh: <name>: not found` and status 127.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import signal
import struct
import termios
from collections import deque
from collections.abc import AsyncIterator, Sequence

from kubeforge import clock
from kubeforge.apiserver.streaming.runtime import (
    InputStream,
    OutputStream,
    ProcessStreams,
    StreamFailed,
    TerminalSize,
)
from kubeforge.cluster.containers import ContainerProcess, rewrite
from kubeforge.cluster.shell import Output, Shell, ShellSyntaxError, program_name
from kubeforge.cluster.shell.control import SHELLS, Exit, LoopControl
from kubeforge.cluster.shell.filetools import FILE_UTILITIES
from kubeforge.cluster.shell.syntax import parse
from kubeforge.cluster.shell.utilities import UTILITIES

__all__ = ["MAX_INPUT_BYTES", "exec_local", "exec_simulated"]

# The most input a simulated command is given (it is held in memory whole).
MAX_INPUT_BYTES = 64 * 1024 * 1024
_READ_SIZE = 64 * 1024


def _not_found(name: str) -> StreamFailed:
    # What containerd answers for a command the image does not have.
    return StreamFailed(
        "failed to exec in container: failed to start exec: OCI runtime exec failed: exec "
        f'failed: unable to start container process: exec: "{name}": executable file not '
        "found in $PATH: unknown"
    )


async def _drain(resizes: AsyncIterator[TerminalSize] | None) -> None:
    """Read terminal sizes nobody needs, so the client's stream does not back up."""
    if resizes is not None:
        async for _ in resizes:
            pass


class _Pipe:
    """A synchronous output (the shell's) feeding an asynchronous stream, in order."""

    def __init__(self, stream: OutputStream | None, terminal: bool) -> None:
        self._stream = stream
        self._terminal = terminal
        self._chunks: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._closed = False
        self.task = asyncio.create_task(self._pump())

    def __call__(self, data: bytes) -> None:
        if data and self._stream is not None and not self._closed:
            # A terminal's line discipline turns each newline into CR LF.
            self._chunks.append(data.replace(b"\n", b"\r\n") if self._terminal else data)
            self._ready.set()

    async def _pump(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._chunks:
                data = b"".join(self._chunks)
                self._chunks.clear()
                if self._stream is not None:
                    await self._stream.write(data)
            if self._closed:
                return

    async def close(self) -> None:
        self._closed = True
        self._ready.set()
        await self.task


async def _read_all(stdin: InputStream) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while data := await stdin.read():
        size += len(data)
        if size > MAX_INPUT_BYTES:
            raise StreamFailed("the input is larger than a simulated command is given")
        chunks.append(data)
    return b"".join(chunks)


def _known(name: str) -> bool:
    return name in UTILITIES or name in FILE_UTILITIES or name in SHELLS


def _interactive(command: Sequence[str]) -> bool:
    """A shell started with no script: it reads commands from its input."""
    if not command or program_name(command[0]) not in SHELLS:
        return False
    return all(arg.startswith("-") and "c" not in arg for arg in command[1:])


async def exec_simulated(
    process: ContainerProcess, files: dict[str, bytes], command: list[str], streams: ProcessStreams
) -> int:
    """Run `command` in a simulated container (`files` are its volumes' files now, laid over
    its file system)."""
    process.files.update(files)
    name = program_name(command[0]) if command else ""
    if not _known(name):
        raise _not_found(command[0] if command else "")
    out = _Pipe(streams.stdout, streams.tty)
    err = out if streams.tty or streams.stderr is None else _Pipe(streams.stderr, False)
    resizing = asyncio.create_task(_drain(streams.resizes))

    async def programs(argv: Sequence[str], output: Output) -> int:
        output(f"sh: {argv[0]}: not found\n".encode())
        return 127

    shell = Shell(process.env, out, programs, files=process.files, errors=err)
    try:
        if streams.stdin is not None and _interactive(command):
            return await _session(shell, streams.stdin, streams.tty, out)
        stdin = await _read_all(streams.stdin) if streams.stdin is not None else b""
        try:
            return int(await shell.call(list(command), stdin, {}))
        except Exit as done:
            return done.code
        except LoopControl:
            return 0
    finally:
        resizing.cancel()
        await out.close()
        if err is not out:
            await err.close()


def _incomplete(error: ShellSyntaxError) -> bool:
    """Whether a script fails to parse only because more of it is still to come."""
    text = str(error)
    return text.startswith(("unterminated", "unexpected end", "expected"))


async def _session(shell: Shell, stdin: InputStream, terminal: bool, out: _Pipe) -> int:
    """An interactive shell: each complete command runs as its line arrives."""
    prompt = b"# " if terminal else b""
    script = ""
    line = ""
    out(prompt)

    async def run(text: str) -> int | None:
        """Run `text`; the exit status when it ends the shell (`exit`)."""
        try:
            body = parse(text)
        except ShellSyntaxError as exc:
            out(f"sh: syntax error: {exc}\n".encode())
            shell.status = 2
            return None
        try:
            await shell.run_list(body)
        except Exit as done:
            return done.code
        except LoopControl:
            pass
        except ShellSyntaxError as exc:
            out(f"sh: {exc}\n".encode())
            shell.status = 2
        return None

    async def complete(text: str) -> int | None:
        nonlocal script
        script += text + "\n"
        try:
            parse(script)
        except ShellSyntaxError as exc:
            if _incomplete(exc):
                out(b"> " if terminal else b"")
                return None
        pending, script = script, ""
        ended = await run(pending)
        if ended is None:
            out(prompt)
        return ended

    while data := await stdin.read():
        text = data.decode("utf-8", "replace")
        if not terminal:
            line += text
            while "\n" in line:
                current, line = line.split("\n", 1)
                ended = await complete(current)
                if ended is not None:
                    return ended
            continue
        for char in text:
            if char in "\r\n":
                out(b"\n")
                current, line = line, ""
                ended = await complete(current)
                if ended is not None:
                    return ended
            elif char in "\x7f\b":
                if line:
                    line = line[:-1]
                    out(b"\b \b")
            elif char == "\x03":  # ^C: the line (and a script begun) is dropped
                out(b"^C\n")
                line = script = ""
                out(prompt)
            elif char == "\x04":  # ^D on an empty line: end of input
                if not line:
                    out(b"exit\n")
                    return shell.status
            elif char.isprintable():
                line += char
                out(char.encode())
    if line or script:
        ended = await run(script + line)
        if ended is not None:
            return ended
    return shell.status


# local processes ---------------------------------------------------------------------------


def _signalled(code: int) -> int:
    return 128 - code if code < 0 else code


async def _copy_out(reader: asyncio.StreamReader, stream: OutputStream | None) -> None:
    while data := await reader.read(_READ_SIZE):
        if stream is not None:
            await stream.write(data)


async def _copy_in(stdin: InputStream, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await stdin.read():
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        return
    with contextlib.suppress(ConnectionError, OSError):
        writer.close()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tar_names(command: list[str], argv: list[str]) -> list[str]:
    """`tar` names members after the paths it is given: a mount path rewritten to its place
    on this machine keeps its name in the archive (GNU tar's --transform), so that
    `kubectl cp` finds the path it asked for."""
    if not argv or program_name(argv[0]) != "tar":
        return argv
    transforms = []
    for original, rewritten in zip(command, argv, strict=True):
        if original != rewritten and original.startswith("/") and rewritten.startswith("/"):
            source = re.sub(r"([.\[\]*^$\\|])", r"\\\1", rewritten.lstrip("/"))
            target = original.lstrip("/").replace("\\", "\\\\").replace("|", "\\|")
            transforms.append(f"--transform=s|^{source}|{target}|")
    return [*argv, *transforms]  # after the old-style options, which must come first


async def exec_local(process: ContainerProcess, command: list[str], streams: ProcessStreams) -> int:
    """Run `command` on this machine in the container's environment and directory."""
    launch = process.local
    assert launch is not None
    argv = _tar_names(command, [rewrite(part, launch.paths, launch.ports) for part in command])
    cwd = launch.cwd or process.workdir
    env = dict(launch.env)
    if cwd is not None:
        env.setdefault("HOME", str(cwd))
    if streams.tty:
        return await _exec_terminal(argv, env, cwd, streams)
    try:
        child = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if streams.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise _not_found(argv[0]) from None
    except OSError as exc:
        raise StreamFailed(f'exec: "{argv[0]}": {exc.strerror or exc}') from None
    assert child.stdout is not None and child.stderr is not None
    copies = [
        asyncio.create_task(_copy_out(child.stdout, streams.stdout)),
        asyncio.create_task(_copy_out(child.stderr, streams.stderr)),
    ]
    feeding = None
    if streams.stdin is not None and child.stdin is not None:
        feeding = asyncio.create_task(_copy_in(streams.stdin, child.stdin))
    try:
        code = await child.wait()
        await asyncio.gather(*copies, return_exceptions=True)
        return _signalled(code)
    finally:
        if child.returncode is None:
            _kill(child.pid)
        for task in (*copies, feeding):
            if task is not None:
                task.cancel()


async def _exec_terminal(
    argv: list[str], env: dict[str, str], cwd: os.PathLike[str] | None, streams: ProcessStreams
) -> int:
    """Run under a pseudo-terminal: its output (stdout and stderr alike) to stdout."""
    master, slave = os.openpty()
    try:
        try:
            child = await asyncio.create_subprocess_exec(
                *argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=cwd,
                env={"TERM": "xterm", **env},
                start_new_session=True,
            )
        except FileNotFoundError:
            raise _not_found(argv[0]) from None
        except OSError as exc:
            raise StreamFailed(f'exec: "{argv[0]}": {exc.strerror or exc}') from None
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        loop = asyncio.get_running_loop()
        output: asyncio.Queue[bytes] = asyncio.Queue()

        def readable() -> None:
            try:
                data = os.read(master, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError:  # EIO once every end of the terminal's other side has closed
                data = b""
            if not data:
                loop.remove_reader(master)
            output.put_nowait(data)

        loop.add_reader(master, readable)

        async def copy_out() -> None:
            while data := await output.get():
                if streams.stdout is not None:
                    await streams.stdout.write(data)

        async def copy_in() -> None:
            if streams.stdin is None:
                return
            while data := await streams.stdin.read():
                while data:
                    try:
                        written = os.write(master, data)
                    except BlockingIOError:
                        await clock.sleep(0.01)
                        continue
                    data = data[written:]

        async def resize() -> None:
            if streams.resizes is None:
                return
            async for size in streams.resizes:
                packed = struct.pack("HHHH", size.height, size.width, 0, 0)
                with contextlib.suppress(OSError):
                    fcntl.ioctl(master, termios.TIOCSWINSZ, packed)

        tasks = [asyncio.create_task(f()) for f in (copy_in, resize)]
        copying = asyncio.create_task(copy_out())
        try:
            code = await child.wait()
            await copying
            return _signalled(code)
        finally:
            if child.returncode is None:
                _kill(child.pid)
            loop.remove_reader(master)
            copying.cancel()
            for task in tasks:
                task.cancel()
    finally:
        os.close(master)
