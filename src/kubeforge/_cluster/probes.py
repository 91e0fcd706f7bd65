"""The kubelet's probes for containers that run as local processes.

Startup, liveness and readiness probes run as Kubernetes specifies them
(`initialDelaySeconds`, `periodSeconds` 10, `timeoutSeconds` 1, `successThreshold` 1,
`failureThreshold` 3): while a startup probe has not succeeded the others wait; a container
whose startup or liveness probe fails `failureThreshold` times in a row is killed and
restarted as its pod's restartPolicy says; readiness follows the readiness probe, and a
container without one is ready once started. `httpGet` (a status from 200 to 399 succeeds),
`tcpSocket` and `exec` (run on this machine in the container's environment) are carried
out against the process, at the machine's port that stands for the probe's container port
(hostports.py); `grpc` probes are not carried out and count as succeeding.

Simulated containers are not probed: nothing listens for them (simulation.py). Probes run on
the machine's time, as the processes they probe do, whatever clock the cluster's objects live
by.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge._cluster.containers import LocalLaunch

__all__ = ["ProbeHooks", "ProbeTarget", "probe_once", "run_probes"]

log = logging.getLogger("kubeforge.kubelet")


@dataclass
class ProbeTarget:
    """Where a container's probes reach it: its pod's IP (for messages), the machine's port
    for each of its container ports, its named ports, and how to run an exec probe."""

    pod_ip: str
    host_port: Callable[[int], int]
    named_ports: Mapping[str, int]
    launch: LocalLaunch | None = None

    def port(self, value: Any) -> int | None:
        if isinstance(value, int):
            return value
        text = str(value or "")
        if text.isdigit():
            return int(text)
        return self.named_ports.get(text)


@dataclass
class ProbeHooks:
    """What the probes change: `started()` once the startup probe succeeds, `ready(bool)`
    as readiness changes, `kill(message)` when liveness (or startup) fails for good, and
    `unhealthy(message)` for each failure (the kubelet's Unhealthy event)."""

    started: Callable[[], Awaitable[None]]
    ready: Callable[[bool], Awaitable[None]]
    kill: Callable[[str], Awaitable[None]]
    unhealthy: Callable[[str], None]


async def probe_once(spec: Mapping[str, Any], target: ProbeTarget) -> tuple[bool, str]:
    """Carry out one probe; (succeeded, what went wrong)."""
    timeout = max(float(spec.get("timeoutSeconds") or 1), 0.001)
    try:
        async with asyncio.timeout(timeout):
            if isinstance(spec.get("httpGet"), dict):
                return await _http(spec["httpGet"], target, timeout)
            if isinstance(spec.get("tcpSocket"), dict):
                return await _tcp(spec["tcpSocket"], target)
            if isinstance(spec.get("exec"), dict):
                return await _exec(spec["exec"], target)
    except TimeoutError:
        return False, f"probe timed out after {timeout:g}s"
    return True, ""


async def _http(action: Mapping[str, Any], target: ProbeTarget, timeout: float) -> tuple[bool, str]:
    import aiohttp

    port = target.port(action.get("port"))
    scheme = str(action.get("scheme") or "HTTP").lower()
    path = str(action.get("path") or "/")
    path = path if path.startswith("/") else "/" + path
    shown = f"{scheme}://{action.get('host') or target.pod_ip}:{port}{path}"
    if port is None:
        return False, f'Get "{shown}": no container port named {action.get("port")!r}'
    headers = {"User-Agent": "kube-probe/1.33", "Accept": "*/*"}
    for header in action.get("httpHeaders") or ():
        headers[str(header.get("name"))] = str(header.get("value") or "")
    url = f"{scheme}://127.0.0.1:{target.host_port(port)}{path}"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(url, headers=headers, ssl=False, allow_redirects=False) as response,
        ):
            status = response.status
    except aiohttp.ClientConnectorError:
        return False, f'Get "{shown}": dial tcp {target.pod_ip}:{port}: connect: connection refused'
    except (aiohttp.ClientError, OSError) as exc:
        return False, f'Get "{shown}": {exc}'
    if 200 <= status < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {status}"


async def _tcp(action: Mapping[str, Any], target: ProbeTarget) -> tuple[bool, str]:
    port = target.port(action.get("port"))
    if port is None:
        return False, f"no container port named {action.get('port')!r}"
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", target.host_port(port))
    except OSError:
        return False, f"dial tcp {target.pod_ip}:{port}: connect: connection refused"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True, ""


async def _exec(action: Mapping[str, Any], target: ProbeTarget) -> tuple[bool, str]:
    command = [str(c) for c in action.get("command") or ()]
    launch = target.launch
    if not command or launch is None:
        return False, "exec probe without a command"
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=launch.cwd,
            env=launch.env,
            start_new_session=True,
        )
    except OSError as exc:
        return False, f'exec: "{command[0]}": {exc.strerror or exc}'
    try:
        output, _ = await process.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise
    if process.returncode == 0:
        return True, ""
    return False, output.decode(errors="replace").strip() or f"exit code {process.returncode}"


def _settings(spec: Mapping[str, Any]) -> tuple[float, float, int, int]:
    return (
        float(spec.get("initialDelaySeconds") or 0),
        float(spec.get("periodSeconds") or 10),
        int(spec.get("successThreshold") or 1),
        int(spec.get("failureThreshold") or 3),
    )


async def run_probes(container: Mapping[str, Any], target: ProbeTarget, hooks: ProbeHooks) -> None:
    """Probe one run of a container until cancelled (when the run ends)."""
    startup = container.get("startupProbe")
    if isinstance(startup, dict) and not await _until_started(startup, target, hooks):
        return
    await hooks.started()
    loops = []
    liveness = container.get("livenessProbe")
    if isinstance(liveness, dict):
        loops.append(_liveness(liveness, target, hooks))
    readiness = container.get("readinessProbe")
    if isinstance(readiness, dict):
        loops.append(_readiness(readiness, target, hooks))
    else:
        await hooks.ready(True)
    if loops:
        await asyncio.gather(*loops)


async def _until_started(spec: Mapping[str, Any], target: ProbeTarget, hooks: ProbeHooks) -> bool:
    delay, period, _, failures_allowed = _settings(spec)
    await asyncio.sleep(delay)
    failures = 0
    while True:
        ok, message = await probe_once(spec, target)
        if ok:
            return True
        failures += 1
        hooks.unhealthy(f"Startup probe failed: {message}")
        if failures >= failures_allowed:
            await hooks.kill("failed startup probe, will be restarted")
            return False
        await asyncio.sleep(period)


async def _liveness(spec: Mapping[str, Any], target: ProbeTarget, hooks: ProbeHooks) -> None:
    delay, period, _, failures_allowed = _settings(spec)
    await asyncio.sleep(delay)
    failures = 0
    while True:
        ok, message = await probe_once(spec, target)
        if ok:
            failures = 0
        else:
            failures += 1
            hooks.unhealthy(f"Liveness probe failed: {message}")
            if failures >= failures_allowed:
                await hooks.kill("failed liveness probe, will be restarted")
                return
        await asyncio.sleep(period)


async def _readiness(spec: Mapping[str, Any], target: ProbeTarget, hooks: ProbeHooks) -> None:
    delay, period, successes_needed, failures_allowed = _settings(spec)
    await asyncio.sleep(delay)
    ready = False
    successes = failures = 0
    while True:
        ok, message = await probe_once(spec, target)
        if ok:
            successes, failures = successes + 1, 0
            if not ready and successes >= successes_needed:
                ready = True
                await hooks.ready(True)
        else:
            successes, failures = 0, failures + 1
            hooks.unhealthy(f"Readiness probe failed: {message}")
            if ready and failures >= failures_allowed:
                ready = False
                await hooks.ready(False)
        await asyncio.sleep(period)
