"""`kubeforge dev` in a process of its own, for what a TestEnv in the test's own process cannot
show: the command line's flags and what it prints, a cluster killed and started again on its
data directory, a suite run from another process against it as an existing cluster."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from kubeforge._client.config import load_kubeconfig
from kubeforge._client.errors import ApiError
from kubeforge._client.transport import Transport
from kubeforge._testing.waiting import eventually

__all__ = ["DevProcess", "DevProcessError"]


class DevProcessError(RuntimeError):
    """`kubeforge dev` did not become ready; `output` is what it printed."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


class DevProcess:
    """`kubeforge dev ARGS` in its own process, listening on `port` (0: a free one) and
    writing its kubeconfig to `kubeconfig`.

    `async with DevProcess(...) as dev` starts it and waits until its API server answers
    /readyz; leaving the block stops it. `start()` and `stop()` do the same by hand, and a
    stopped process can be started again (on the same `--data-dir`, say)."""

    def __init__(
        self,
        *args: str,
        kubeconfig: str | os.PathLike[str],
        port: int = 0,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        preexec_fn: Callable[[], object] | None = None,
    ) -> None:
        self.args = args
        self.kubeconfig = Path(kubeconfig)
        self.port = port
        self.cwd = cwd
        self.env = dict(env or {})
        self.timeout = timeout
        self.preexec_fn = preexec_fn
        self.process: asyncio.subprocess.Process | None = None
        self._output = bytearray()
        self._reader: asyncio.Task[None] | None = None

    @property
    def output(self) -> str:
        """What it printed so far, stdout and stderr together (all of it once stopped)."""
        return self._output.decode(errors="replace")

    @property
    def returncode(self) -> int | None:
        """Its exit status; None while it runs (or before it started)."""
        return None if self.process is None else self.process.returncode

    async def start(self) -> DevProcess:
        """Start it and wait until it is ready: DevProcessError (once it is stopped) when it
        exits first or is not ready within `timeout` seconds."""
        if self.returncode is None and self.process is not None:
            raise RuntimeError("kubeforge dev is running already")
        # A kubeconfig left by an earlier run names credentials this one may not accept.
        self.kubeconfig.unlink(missing_ok=True)
        self._output.clear()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kubeforge._cli.main",
            "dev",
            *("--port", str(self.port), "--kubeconfig", str(self.kubeconfig)),
            *self.args,
            cwd=self.cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1", **self.env},
            preexec_fn=self.preexec_fn,
        )
        self._reader = asyncio.create_task(self._read(self.process))
        try:
            await eventually(self._ready, timeout=self.timeout, interval=0.1)
        except AssertionError:
            await self.stop()
            raise DevProcessError(
                f"kubeforge dev did not become ready within {self.timeout} s", self.output
            ) from None
        except BaseException:  # exited first, or the wait was cancelled
            await self.stop()
            raise
        return self

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Stop it with `sig` (SIGTERM and SIGINT both stop it in order), killing it when it
        has not stopped within `timeout` seconds; its exit status."""
        process = self.process
        if process is None:
            raise RuntimeError("kubeforge dev was not started")
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            await self._reader
        assert process.returncode is not None
        return process.returncode

    async def __aenter__(self) -> DevProcess:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            self._output += chunk

    async def _ready(self) -> bool:
        if self.returncode is not None:
            if self._reader is not None:
                await self._reader
            raise DevProcessError(
                f"kubeforge dev did not become ready: it exited with status {self.returncode}",
                self.output,
            )
        # The kubeconfig is written once the API server listens.
        if not self.kubeconfig.exists():
            return False
        transport = Transport(load_kubeconfig(self.kubeconfig), timeout=5, max_retries=0)
        try:
            answer = await transport.request("GET", "/readyz")
        except (ApiError, OSError):
            return False
        finally:
            await transport.close()
        return answer.body.strip() == b"ok"
