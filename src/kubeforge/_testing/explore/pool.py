"""Worker processes that run a test once per request, as many at once as asked.

Each worker is pytest itself, started with the arguments of the exploring run (less the
exploration's own and pytest-xdist's) and `--kubeforge-explore-worker=ASKS,ANSWERS` (two pipes): it
collects the same tests, then reads requests (a test's node id, a perturbation or none, a
file) from ASKS, runs that test once in-process with the run's harness (harness.py), writes
what the run kept to the file as JSON and answers on ANSWERS. A worker pays for
imports once and then runs test after test (each still on a cluster of its own).

Each run's record stays in the pool's directory (`logs`), beside the workers' logs, for
whoever wants to look at a run more closely.

A worker that dies or goes silent for RUN_TIMEOUT seconds is replaced, and its run reported
as not judged. The worker's own output goes to a log file whose end is shown then.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["Job", "Pool", "worker_arguments"]

RUN_TIMEOUT = 300.0
"""Seconds one run may take before its worker is given up on (pytest-timeout ends most
hung tests long before)."""

# Options of the exploring run a worker must not get (with whether they take a value).
_OWN_OPTIONS = {
    "--kubeforge-explore": False,
    "--kubeforge-explore-jobs": True,
    "--kubeforge-explore-budget": True,
    "--kubeforge-explore-actions": True,
    "--kubeforge-perturb": True,
    "-n": True,
    "--numprocesses": True,
    "--maxprocesses": True,
    "--dist": True,
    "-x": False,
    "--exitfirst": False,
    "--maxfail": True,
    "--lf": False,
    "--last-failed": False,
    "--ff": False,
    "--failed-first": False,
}


def worker_arguments(args: list[str]) -> list[str]:
    """The arguments of the exploring run that a worker gets (see the module)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name, equals, _ = arg.partition("=")
        if name in _OWN_OPTIONS:
            skip = _OWN_OPTIONS[name] and not equals
            continue
        if arg.startswith("-n") and arg[2:].isdigit():
            continue
        kept.append(arg)
    return kept


@dataclass
class Job:
    """One run: the test's node id and the perturbation (None: a reference run)."""

    nodeid: str
    perturbation: str | None


class _Worker:
    def __init__(self, args: list[str], cwd: Path, logs: Path, number: int) -> None:
        self.args, self.cwd, self.number = args, cwd, number
        self.log_path = logs / f"worker-{number}.log"
        self.out_dir = logs
        self.count = 0
        self._start()

    def _start(self) -> None:
        # Two pipes of their own: pytest captures the worker's standard streams.
        asks_read, asks_write = os.pipe()
        answers_read, answers_write = os.pipe()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open while the worker runs
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                *self.args,
                f"--kubeforge-explore-worker={asks_read},{answers_write}",
            ],
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            pass_fds=(asks_read, answers_write),
        )
        os.close(asks_read)
        os.close(answers_write)
        self._asks: IO[bytes] = os.fdopen(asks_write, "wb")
        self._answers: IO[bytes] = os.fdopen(answers_read, "rb")

    def run(self, job: Job) -> dict[str, Any]:
        self.count += 1
        out = self.out_dir / f"run-{self.number}-{self.count}.json"
        request = {"nodeid": job.nodeid, "perturbation": job.perturbation, "out": str(out)}
        try:
            self._asks.write(json.dumps(request).encode() + b"\n")
            self._asks.flush()
            ready, _, _ = select.select([self._answers], [], [], RUN_TIMEOUT)
            line = self._answers.readline() if ready else b""
        except OSError:
            line = b""
        if not line:
            why = "went silent" if self.process.poll() is None else "died"
            tail = self.log_tail()
            self.restart()
            return {
                "perturbation": job.perturbation,
                "harness_error": f"the worker running it {why}:\n{tail}",
            }
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        result["record"] = str(out)
        return result

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def restart(self) -> None:
        self.close()
        self._start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._asks.close()  # the worker's loop ends at the end of its requests
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._answers.close()
        self._log.close()


class Pool:
    """`jobs` workers for the tests of one exploring run, started on first use."""

    def __init__(self, args: list[str], cwd: Path, jobs: int) -> None:
        self.args = worker_arguments(args)
        self.cwd = cwd
        self.jobs = max(1, jobs)
        self.logs = Path(tempfile.mkdtemp(prefix="kubeforge-explore-"))
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._workers: list[_Worker] = []

    def start(self) -> None:
        """Start the workers now (they collect while this process does)."""
        self._ensure()

    def _ensure(self) -> None:
        while len(self._workers) < self.jobs:
            worker = _Worker(self.args, self.cwd, self.logs, len(self._workers) + 1)
            self._workers.append(worker)
            self._idle.put(worker)

    def _one(self, job: Job) -> dict[str, Any]:
        worker = self._idle.get()
        try:
            return worker.run(job)
        finally:
            self._idle.put(worker)

    def run(self, jobs: list[Job]) -> list[dict[str, Any]]:
        """Run `jobs` on the workers, as many at once as there are; results in order."""
        self._ensure()
        with ThreadPoolExecutor(self.jobs) as threads:
            return list(threads.map(self._one, jobs))

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._workers.clear()
