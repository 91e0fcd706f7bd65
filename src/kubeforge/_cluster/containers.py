"""Running a container: simulated (simulation.py), or as a process of this machine.

A container runs as a local process when its image is mapped to a project directory
(projects.py) or the cluster runs with `exec_pods`. The process gets what a container in a
pod would have, translated to a machine it shares with every other process:

- **Files.** The pod's volumes are written to a private directory (mode 0700) that stands
  for the pod's filesystem: `<sandbox>/volumes/<volume>/...`, and for each container a tree
  `<sandbox>/containers/<name>/root/` where every volume mount's path leads to its volume
  (`root/var/run/secrets/kubernetes.io/serviceaccount` -> the token's volume); a claim's
  volume leads to its PersistentVolume's directory (volumedirs.py), which outlives the pod.
  A mount path written in an argument or environment value (as a whole path:
  `--certs=/tmp/certs`, `cat /etc/config/app.yaml` in a script) is replaced by its place
  in that tree, and
  `KUBEFORGE_SERVICE_ACCOUNT_DIR` names the ServiceAccount's directory, which kubeforge's
  in-cluster configuration reads when the variable is set. `TMPDIR` is the tree's `/tmp`.
- **Ports.** Each declared container port gets a port of this machine (hostports.py). An
  argument or environment value that is such a port -- the whole value, or its end after
  `=` or `:` -- gets the machine's port instead, and an address without a host (`:8081`)
  becomes `127.0.0.1:<port>`: the process listens on loopback only.
- **The API server.** `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` lead to the
  development cluster's API server, so in-cluster configuration finds it.

Decision 0030 records why it works this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeforge._client.config import SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR_ENV
from kubeforge._cluster.commandline import container_argv, expand_references
from kubeforge._cluster.hostports import HostPorts
from kubeforge._cluster.projectenv import ProjectEnvironment, ProjectEnvironmentError
from kubeforge._cluster.projects import ImageMap
from kubeforge._cluster.sandboxpaths import (
    UnsafePath,
    directory_within,
    link_within,
    make_directory_within,
    relative_parts,
    write_within,
)
from kubeforge._cluster.shell import Output
from kubeforge._cluster.simulation import Behaviour, simulate
from kubeforge._cluster.volumedirs import VolumeDirectories

__all__ = [
    "SERVICE_ACCOUNT_DIR_ENV",
    "SERVICE_ACCOUNT_MOUNT",
    "ContainerProcess",
    "LocalLaunch",
    "LocalRuntime",
    "PodSandbox",
    "StartError",
    "UnsafePath",
    "local_launch",
    "rewrite",
]

SERVICE_ACCOUNT_MOUNT = SERVICE_ACCOUNT_DIR
BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")
_UNSPECIFIED_HOSTS = ("", "0.0.0.0", "[::]", "::")


class StartError(Exception):
    """The container's command could not be started (the runtime's StartError)."""


# -- what a local process is told --------------------------------------------------------------


def rewrite(value: str, paths: Mapping[str, Path], ports: Mapping[int, int]) -> str:
    """`value` (an argument or environment value) with mount paths replaced by their local
    directories and declared container ports by the machine's ports (see the module's
    docstring for the exact rule)."""
    for mount in sorted(paths, key=len, reverse=True):
        # The mount path as a whole path: not inside a longer name or path.
        pattern = r"(?<![\w.~/-])" + re.escape(mount.rstrip("/")) + r"(?![\w.-])"
        value = re.sub(pattern, str(paths[mount]).replace("\\", "\\\\"), value)
    for container_port, host_port in ports.items():
        number = str(container_port)
        if value == number:
            return str(host_port)
        address = re.fullmatch(r"(.*=)?(\[[0-9a-fA-F:.]*\]|[A-Za-z0-9.\-]*):" + number, value)
        if address is not None:
            host = address.group(2)
            host = "127.0.0.1" if host in _UNSPECIFIED_HOSTS else host
            return f"{address.group(1) or ''}{host}:{host_port}"
        if value.endswith("=" + number):
            return value[: -len(number)] + str(host_port)
    return value


class PodSandbox:
    """The private directory that stands for one pod's filesystem for its local processes."""

    def __init__(self, prefix: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))  # mode 0700
        self.volumes = self.root / "volumes"
        self.volumes.mkdir(mode=0o700)
        # Volumes whose data lives outside the sandbox (a claim's persistent volume):
        # volume name -> its directory.
        self.persistent: dict[str, Path] = {}

    def write_volumes(self, volumes: Mapping[str, Mapping[str, bytes]]) -> None:
        """Write (or rewrite: a renewed token) the volumes' files, each replaced atomically;
        files are private to this user (0600), whatever the volume's mode says.

        Every path is checked before anything is written, and none is ever written outside
        its volume (sandboxpaths.py): UnsafePath otherwise.
        """
        for files in volumes.values():
            for relative in files:
                relative_parts(relative)
        for name, files in volumes.items():
            make_directory_within(self.root, self.volumes / _safe(name))  # may stay empty
            for relative, content in files.items():
                write_within(self.root, f"volumes/{_safe(name)}/{relative}", content)

    def container_root(
        self, name: str, mounts: Sequence[Mapping[str, Any]]
    ) -> tuple[Path, dict[str, Path]]:
        """A container's tree (a fresh one for each run) and where each of its mount paths
        leads: mount path -> directory (or file, with subPath) on this machine.

        UnsafePath when a mount would lead outside the sandbox: a mount path leaving the
        container's tree, or a subPath leaving its volume once its links are followed, as
        the kubelet refuses one (pkg/volume/util/subpath/subpath_linux.go).
        """
        containers = self.root / "containers"
        with directory_within(self.root, containers) as fd, contextlib.suppress(FileNotFoundError):
            shutil.rmtree(_safe(name), dir_fd=fd)
        root = containers / _safe(name) / "root"
        make_directory_within(self.root, root / "tmp")
        paths: dict[str, Path] = {}
        for mount in mounts:
            mount_path = str(mount.get("mountPath") or "")
            if not mount_path.startswith("/"):
                continue
            volume = str(mount.get("name") or "")
            source = self.persistent.get(volume) or self.volumes / _safe(volume)
            if volume not in self.persistent:
                make_directory_within(self.root, source)  # a volume without files: empty
            sub = str(mount.get("subPath") or "")
            if sub:
                source = _sub_path(source, sub, volume, name)
            link = _inside(root, mount_path.lstrip("/"))
            if link is None or link == root:
                raise UnsafePath(
                    f"mount path {mount_path!r} of container {name!r} leads outside it"
                )
            link_within(self.root, link, source)
            paths[mount_path.rstrip("/") or "/"] = link
        return root, paths

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _safe(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return "_" if safe in ("", ".", "..") else safe


def _inside(base: Path, relative: str) -> Path | None:
    """`base/relative`, or None when `relative` would lead outside `base` (read as written:
    links are the caller's to check)."""
    target = Path(os.path.normpath(base / relative))
    if target != base and base not in target.parents:
        return None
    return target


def _sub_path(volume: Path, sub: str, name: str, container: str) -> Path:
    """Where a subPath of `volume` really is: within the volume once its links are followed
    (a directory is made when nothing is there), else UnsafePath."""
    refused = f'failed to prepare subPath for volumeMount "{name}" of container "{container}"'
    if sub.startswith("/") or ".." in sub.split("/"):
        raise UnsafePath(f"{refused}: {sub!r} is not a relative path below the volume")
    inner = volume / sub
    real = inner.resolve()
    real_volume = volume.resolve()
    if real != real_volume and real_volume not in real.parents:
        raise UnsafePath(f"{refused}: {sub!r} leads outside the volume")
    if not real.exists():
        make_directory_within(volume, real)
    return real


@dataclass
class LocalLaunch:
    """How to start a container as a process of this machine: its command line, its whole
    environment and its working directory (None: a new temporary one, removed afterwards,
    which is also its HOME unless the environment names one); `paths` and `ports` are what
    its mount paths and container ports became here (see `rewrite`), for commands run in
    it later (exec)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)


@dataclass
class LocalRuntime:
    """What the nodes share to run containers as local processes: the API server's address
    as the processes reach it, the images mapped to project directories, and the ports of
    this machine given to pods."""

    api_host: str
    api_port: int
    images: ImageMap = field(default_factory=ImageMap)
    ports: HostPorts = field(default_factory=HostPorts)
    # Where persistent volumes keep their data; None: a claim's volume is an empty
    # directory of the pod's own.
    volumes: VolumeDirectories | None = None

    def service_environment(self) -> dict[str, str]:
        """The `kubernetes` Service's variables, as every container gets them, leading to
        the API server."""
        host = "127.0.0.1" if self.api_host in _UNSPECIFIED_HOSTS else self.api_host
        port = str(self.api_port)
        address = f"[{host}]" if ":" in host else host
        return {
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": port,
            "KUBERNETES_SERVICE_PORT_HTTPS": port,
            "KUBERNETES_PORT": f"tcp://{address}:{port}",
        }


def local_launch(
    spec: Mapping[str, Any],
    env: Mapping[str, str],
    runtime: LocalRuntime,
    *,
    exec_pods: bool,
    sandbox: Callable[[], PodSandbox],
    pod_uid: str,
    pod_ip: str,
) -> LocalLaunch | None:
    """How a container (`spec`, its resolved `env`) runs as a process of this machine: from
    its project directory when its image is mapped, as its own command with `exec_pods`;
    None when it is simulated. `sandbox()` gives the pod's private directory."""
    directory = runtime.images.directory(str(spec.get("image") or ""))
    if directory is None and not exec_pods:
        return None
    project = runtime.images.project(directory) if directory is not None else None
    if project is not None:
        command = [expand_references(str(c), env) for c in spec.get("command") or ()]
        args = [expand_references(str(a), env) for a in spec.get("args") or ()]
        argv = project.command_line(command, args)
        if not argv:
            raise StartError(f"no command specified: {directory} has no Dockerfile ENTRYPOINT")
    else:
        found = container_argv(spec, env)
        if not found:
            return None  # the image's own entrypoint: simulated, as there is no image
        argv = found
    try:
        root, paths = sandbox().container_root(
            str(spec.get("name") or ""), spec.get("volumeMounts") or ()
        )
    except UnsafePath as exc:
        raise StartError(str(exc)) from None
    ports = {
        int(p["containerPort"]): runtime.ports.allocate(pod_uid, pod_ip, int(p["containerPort"]))
        for p in spec.get("ports") or ()
        if isinstance(p.get("containerPort"), int)
    }
    base = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
    if project is not None:
        base = project.environment(base)
    full = {**base, **runtime.service_environment()}
    full.update({key: rewrite(value, paths, ports) for key, value in env.items()})
    full.setdefault("TMPDIR", str(root / "tmp"))
    if SERVICE_ACCOUNT_MOUNT in paths:
        full[SERVICE_ACCOUNT_DIR_ENV] = str(paths[SERVICE_ACCOUNT_MOUNT])
    argv = [rewrite(part, paths, ports) for part in argv]
    if project is None:
        return LocalLaunch(argv, full, paths=paths, ports=ports)
    full.setdefault("HOME", str(root / "tmp"))
    try:
        python = ProjectEnvironment.of(project.directory).python(root / "python")
    except ProjectEnvironmentError as exc:
        raise StartError(str(exc)) from None
    bin_dir = root / "bin"
    bin_dir.mkdir(mode=0o700)
    for name, script in project.launchers(python).items():
        launcher = bin_dir / name
        launcher.write_text(script, encoding="utf-8")
        launcher.chmod(0o700)
    full["PATH"] = os.pathsep.join(filter(None, [str(bin_dir), full.get("PATH", "")]))
    full["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(project.directory), full.get("PYTHONPATH", "")])
    )
    return LocalLaunch(argv, full, cwd=project.directory, paths=paths, ports=ports)


# -- one run of a container ----------------------------------------------------------------------


class ContainerProcess:
    """One run of a container: simulated, or (with `local`) a process on this machine.

    `wait()` runs it to the end and returns the exit code (raising StartError when a local
    command cannot start); `stop(grace)` asks it to end (SIGTERM, then SIGKILL after
    `grace` seconds for a local process) and returns the exit code.
    """

    def __init__(
        self,
        argv: Sequence[str] | None,
        env: Mapping[str, str],
        behaviour: Behaviour,
        out: Output,
        *,
        image: str = "",
        local: LocalLaunch | None = None,
        workdir_prefix: str = "kubeforge-",
        files: dict[str, bytes] | None = None,
        stdin: bool = False,
    ) -> None:
        self.argv = None if argv is None else list(argv)
        self.image = image
        self.env = dict(env)
        self.behaviour = behaviour
        self.out = out
        self.local = local if local is not None and local.argv else None
        self.workdir_prefix = workdir_prefix
        # A simulated container's file system (what its shell scripts and execs see).
        self.files: dict[str, bytes] = files if files is not None else {}
        # A local process's working directory while it runs.
        self.workdir: Path | None = None
        # The container asks for an input (`stdin: true`): what attach writes to.
        self.keeps_stdin = stdin
        self._task: asyncio.Task[int] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stopped = False

    @property
    def is_local(self) -> bool:
        return self.local is not None

    @property
    def stdin(self) -> asyncio.StreamWriter | None:
        """A local process's input, when its container asks for one."""
        process = self._process
        return process.stdin if process is not None else None

    async def wait(self) -> int:
        """Run until the command ends; its exit code."""
        if self._task is None:
            if self._stopped:
                return 0
            self._task = asyncio.ensure_future(self._run())
        task = self._task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._stopped and task.done():
                return 0  # stop() ended a simulated container
            # Whoever waited gave up: leave nothing running behind.
            task.cancel()
            if self._process is not None and self._process.returncode is None:
                _signal_group(self._process.pid, signal.SIGKILL)
            raise

    async def _run(self) -> int:
        if self.local is None:
            return await simulate(
                self.argv, self.env, self.behaviour, self.out, self.image, files=self.files
            )
        launch = self.local
        workdir: str | None = None
        cwd = launch.cwd
        env = dict(launch.env)
        if cwd is None:
            workdir = tempfile.mkdtemp(prefix=self.workdir_prefix)
            cwd = Path(workdir)
            env.setdefault("HOME", workdir)
        self.workdir = cwd
        try:
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *launch.argv,
                    stdin=(
                        asyncio.subprocess.PIPE if self.keeps_stdin else asyncio.subprocess.DEVNULL
                    ),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,
                )
            except FileNotFoundError:
                raise StartError(
                    f'exec: "{launch.argv[0]}": executable file not found in $PATH'
                ) from None
            except OSError as exc:
                raise StartError(f'exec: "{launch.argv[0]}": {exc.strerror or exc}') from None
            stream = self._process.stdout
            assert stream is not None
            while chunk := await stream.read(65536):
                self.out(chunk)
            code = await self._process.wait()
            return 128 - code if code < 0 else code
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)

    async def stop(self, grace: float = 0.0) -> int:
        """End the container; its exit code."""
        self._stopped = True
        task = self._task
        if task is None:
            return 0
        process = self._process
        if process is None or process.returncode is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StartError):
                return await task
            return 0
        _signal_group(process.pid, signal.SIGTERM)
        try:
            return await asyncio.wait_for(asyncio.shield(task), max(grace, 0.0))
        except TimeoutError:
            _signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(asyncio.CancelledError, StartError):
            return await task
        return 137


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
