"""What a simulated container does: explicit rules, in the spirit of kwok's pod stages.

Nothing is executed and nothing is guessed from a program's name or arguments. In order:

1. **The pod says so.** Annotations on the pod (for Deployments and Jobs: on the pod
   template) script its containers: `kubeforge.dev/output` is written to the log when the
   container starts, and `kubeforge.dev/exit-code` makes it exit with that code after the
   run time. `<container>.container.kubeforge.dev/<name>` sets one container only and wins
   over the pod-wide `kubeforge.dev/<name>`. A scripted container does not run its command.
2. **Shell scripts and utilities are interpreted.** `sh -c` / `bash -c` scripts and the
   everyday utilities (`echo`, `printf`, `sleep`, `exit`, `test`, `date`, `cat`, `env`, ...)
   run in the interpreter of `kubeforge._cluster.shell`: their output and exit status are
   what a real shell's would be, and `sleep 5` takes 5 s (`kubeforge.dev/run-seconds`
   replaces every finite sleep).
3. **Any other program**, and a container without a command (its image's entrypoint), keeps
   running until it is stopped -- unless its pod is meant to finish: `restartPolicy` Never
   or OnFailure, or owned by a Job (init containers always are). Then it runs for the run
   time (`kubeforge.dev/run-seconds`, else `ClusterOptions.command_run_seconds`) and exits 0.
   Inside a script, such a program follows the same rule.

Readiness is the kubelet's (a simulated container runs no probes): ready when started,
unless `kubeforge.dev/ready` is `"false"`, or after `kubeforge.dev/ready-seconds`.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeforge import clock
from kubeforge._cluster.options import (
    EXIT_CODE_ANNOTATION,
    OUTPUT_ANNOTATION,
    READY_ANNOTATION,
    READY_SECONDS_ANNOTATION,
    RUN_SECONDS_ANNOTATION,
    ClusterOptions,
)
from kubeforge._cluster.shell import Output, run_command

__all__ = ["Behaviour", "annotation", "container_behaviour", "pod_finishes", "simulate"]

log = logging.getLogger("kubeforge.kubelet")

_PREFIX = "kubeforge.dev/"


@dataclass(frozen=True)
class Behaviour:
    """How one simulated container behaves: the inputs of the rules above."""

    # Its pod is meant to finish: programs other than the utilities end after run_seconds.
    finishes: bool = False
    run_seconds: float = 0.1
    # When set, replaces the argument of every finite `sleep`.
    sleep_seconds: float | None = None
    # Scripted by the pod's annotations: exit with this code, write this output.
    exit_code: int | None = None
    output: str | None = None
    ready: bool = True
    ready_seconds: float = 0.0

    @property
    def scripted(self) -> bool:
        return self.exit_code is not None or self.output is not None


def pod_finishes(pod: Mapping[str, Any]) -> bool:
    """Whether a pod is meant to finish: its restart policy lets it, or a Job owns it."""
    spec = pod.get("spec") or {}
    if spec.get("restartPolicy") in ("Never", "OnFailure"):
        return True
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(
        owner.get("kind") == "Job" and str(owner.get("apiVersion") or "").startswith("batch/")
        for owner in owners
    )


def annotation(annotations: Mapping[str, Any], container: str, key: str) -> str | None:
    """`<container>.container.kubeforge.dev/<key>`, else `kubeforge.dev/<key>`."""
    name = key.removeprefix(_PREFIX)
    value = annotations.get(f"{container}.container.{_PREFIX}{name}")
    if value is None:
        value = annotations.get(key)
    return None if value is None else str(value)


def container_behaviour(
    pod: Mapping[str, Any], container: str, kind: str, options: ClusterOptions
) -> Behaviour:
    """The behaviour of one container of `pod`; `kind` is "init", "sidecar" (a restartable
    init container) or "main". Unreadable annotation values are logged and ignored."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}

    def number(key: str) -> float | None:
        text = annotation(annotations, container, key)
        if text is None:
            return None
        try:
            value = float(text.strip().removesuffix("s"))
        except ValueError:
            value = -1.0
        if not value >= 0:  # also refuses NaN
            log.warning("pod annotation %s: %r is not a number of seconds; ignored", key, text)
            return None
        return value

    run = number(RUN_SECONDS_ANNOTATION)
    exit_code: int | None = None
    code_text = annotation(annotations, container, EXIT_CODE_ANNOTATION)
    if code_text is not None:
        try:
            exit_code = int(code_text) & 0xFF
        except ValueError:
            log.warning(
                "pod annotation %s: %r is not an exit code; ignored",
                EXIT_CODE_ANNOTATION,
                code_text,
            )
    ready_text = annotation(annotations, container, READY_ANNOTATION)
    ready = True
    if ready_text is not None:
        if ready_text.strip().lower() in ("false", "true"):
            ready = ready_text.strip().lower() == "true"
        else:
            log.warning(
                "pod annotation %s: %r is not true or false; ignored", READY_ANNOTATION, ready_text
            )
    if kind == "init":
        finishes = True
    elif kind == "sidecar":
        finishes = False
    else:
        finishes = pod_finishes(pod)
    return Behaviour(
        finishes=finishes,
        run_seconds=options.command_run_seconds if run is None else run,
        sleep_seconds=run,
        exit_code=exit_code,
        output=annotation(annotations, container, OUTPUT_ANNOTATION),
        ready=ready,
        ready_seconds=number(READY_SECONDS_ANNOTATION) or 0.0,
    )


async def _forever() -> int:
    await asyncio.get_running_loop().create_future()
    return 0


async def run_program(argv: Sequence[str], behaviour: Behaviour, out: Output) -> int:
    """A program the simulation knows only by name (rule 3): it keeps running, or, when its
    pod is meant to finish, runs for the run time and exits 0; the log says it was simulated."""
    line = shlex.join(argv)
    if not behaviour.finishes:
        out(f"(simulated) {line}: running\n".encode())
        return await _forever()
    out(f"(simulated) {line}\n".encode())
    await clock.sleep(behaviour.run_seconds)
    return 0


async def simulate(
    argv: Sequence[str] | None,
    env: Mapping[str, str],
    behaviour: Behaviour,
    out: Output,
    image: str = "",
    files: dict[str, bytes] | None = None,
) -> int:
    """Simulate a container's command line (None: its image's entrypoint) by the rules
    above; its exit code. Cancel the call to stop the container. `files` is the container's
    file system (its mounted volumes' files, what its scripts write)."""
    if behaviour.scripted:
        if behaviour.output:
            text = behaviour.output
            out((text if text.endswith("\n") else text + "\n").encode())
        if behaviour.exit_code is None and not behaviour.finishes:
            return await _forever()
        await clock.sleep(behaviour.run_seconds)
        return behaviour.exit_code or 0
    if argv is None:
        if not behaviour.finishes:
            out(f"(simulated) {image or 'image'}: entrypoint running\n".encode())
            return await _forever()
        out(f"(simulated) {image or 'image'}: entrypoint\n".encode())
        await clock.sleep(behaviour.run_seconds)
        return 0
    if not argv:
        return 0

    async def programs(program: Sequence[str], output: Output) -> int:
        return await run_program(program, behaviour, output)

    return await run_command(
        argv, env, out, programs, sleep_seconds=behaviour.sleep_seconds, files=files
    )
