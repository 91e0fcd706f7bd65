"""Kubectl: a real kubectl, run against the test environment from async tests.

Tests that assert on what kubectl prints check what a user sees: printer columns, error
messages, `kubectl wait` and `kubectl logs`. Commands run as subprocesses, so the event loop
(and the cluster and controllers running in it) keeps going while kubectl waits.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Kubectl", "KubectlError", "KubectlResult", "find_kubectl"]


def find_kubectl(version: str | None = None, *, exact: bool = False) -> str:
    """The kubectl to run: `kubectl.<version>` when one is installed (on PATH or next to
    `kubectl`), otherwise `kubectl` itself, or with `exact` FileNotFoundError (a test meant
    for one version). FileNotFoundError when there is no kubectl at all."""
    base = shutil.which("kubectl")
    if version:
        name = f"kubectl.{version.removeprefix('v')}"
        found = shutil.which(name)
        if found is not None:
            return found
        if base is not None:
            beside = Path(os.path.realpath(base)).parent / name
            if beside.is_file() and os.access(beside, os.X_OK):
                return str(beside)
        if exact:
            raise FileNotFoundError(f"{name} is not installed (not on PATH nor next to kubectl)")
    if base is None:
        raise FileNotFoundError("kubectl is not installed (not found on PATH)")
    return base


@dataclass(frozen=True, slots=True)
class KubectlResult:
    """What one kubectl command did."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout decoded as JSON (for `-o json`)."""
        return orjson.loads(self.out)

    def rows(self) -> list[list[str]]:
        """stdout as a table: the header row, then one row per object. Cells are cut at the
        header's column positions, as kubectl aligns them, so an empty cell stays a cell
        ("" in its column); a line that does not fit the header is split on runs of spaces."""
        lines = [line for line in self.out.splitlines() if line.strip()]
        if not lines:
            return []
        starts = [m.start() for m in _HEADER_CELL.finditer(lines[0])]
        return [_cut(line, starts) for line in lines]


# Header cells are words separated by single spaces ("NOMINATED NODE"); columns by two or more.
_HEADER_CELL = re.compile(r"\S+(?: \S+)*")


def _cut(line: str, starts: list[int]) -> list[str]:
    """The cells of `line` at the column positions `starts`."""
    aligned = all(i == 0 or i >= len(line) or line[i - 1] == " " for i in starts)
    if not aligned:
        return _HEADER_CELL.findall(line)
    ends = [*starts[1:], None]
    return [line[start:end].strip() for start, end in zip(starts, ends, strict=True)]


class KubectlError(AssertionError):
    """A kubectl command failed; the message holds the command and its output."""


class Kubectl:
    """Runs kubectl with a given kubeconfig (and a private cache directory)."""

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        binary: str | None = None,
        version: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.binary = binary or find_kubectl(version)
        self.kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.extra_env = dict(env or {})

    def environment(self) -> dict[str, str]:
        """The environment kubectl runs with."""
        env = dict(os.environ)
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        if self.cache_dir is not None:
            # Discovery is cached per server; a private directory keeps tests independent.
            env["KUBECACHEDIR"] = str(self.cache_dir)
        env.update(self.extra_env)
        return env

    async def run(
        self, *args: str, stdin: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> KubectlResult:
        """Run `kubectl ARGS...`; KubectlError if it fails and `check` is set."""
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.environment(),
        )
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(stdin.encode() if stdin is not None else None), timeout
            )
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise KubectlError(f"kubectl {' '.join(args)}: no answer in {timeout} s") from None
        result = KubectlResult(tuple(args), proc.returncode or 0, out.decode(), err.decode())
        if check and result.code != 0:
            raise KubectlError(
                f"kubectl {' '.join(args)} exited with {result.code}:\n{result.err}{result.out}"
            )
        return result

    async def json(self, *args: str, timeout: float = 60.0) -> Any:
        """Run `kubectl ARGS... -o json` and decode what it prints."""
        return (await self.run(*args, "-o", "json", timeout=timeout)).json()

    async def apply(self, manifest: str, *args: str) -> KubectlResult:
        """`kubectl apply -f -` with `manifest` (YAML or JSON) on stdin."""
        return await self.run("apply", "-f", "-", *args, stdin=manifest)

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        """Start a long-running kubectl (`get -w`, `logs -f`); the caller ends it."""
        return await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.environment(),
        )
