"""Running containers: stopping a simulated one, local processes, what a local process is
told (files, ports), and what an image built from a project directory runs."""

from __future__ import annotations

import asyncio
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kubeforge._cluster.containers import (
    ContainerProcess,
    LocalLaunch,
    PodSandbox,
    StartError,
    rewrite,
)
from kubeforge._cluster.hostports import HostPorts
from kubeforge._cluster.projects import ImageMap, ProjectImage, parse_image_mapping
from kubeforge._cluster.simulation import Behaviour
from kubeforge.testing import eventually

QUICK = Behaviour(finishes=True, run_seconds=0.01, sleep_seconds=0.01)


async def _true(value: bool) -> bool:
    return value


def local(*argv: str, env: dict[str, str] | None = None) -> LocalLaunch:
    return LocalLaunch(list(argv), {"PATH": "/usr/bin:/bin", **(env or {})})


async def test_simulated_container_stops_on_request() -> None:
    out: list[bytes] = []
    container = ContainerProcess(["sh", "-c", "echo up; sleep infinity"], {}, QUICK, out.append)
    waiting = asyncio.ensure_future(container.wait())
    await eventually(lambda: _true(out == [b"up\n"]))
    assert await container.stop() == 0
    assert await asyncio.wait_for(waiting, 5) == 0


async def test_local_container_runs_with_its_environment() -> None:
    out: list[bytes] = []
    container = ContainerProcess(
        None,
        {},
        QUICK,
        out.append,
        local=local(
            "sh", "-c", 'echo "$GREETING from $HOME" >&2; exit 5', env={"GREETING": "hello"}
        ),
    )
    assert await asyncio.wait_for(container.wait(), 10) == 5
    text = b"".join(out).decode()
    assert re.fullmatch(r"hello from /\S+kubeforge-\S+\n", text)


async def test_local_container_is_killed_when_stopped() -> None:
    out: list[bytes] = []
    container = ContainerProcess(
        None, {}, QUICK, out.append, local=local("sh", "-c", "echo up; exec sleep 60")
    )
    waiting = asyncio.ensure_future(container.wait())
    await eventually(lambda: _true(out == [b"up\n"]))
    code = await asyncio.wait_for(container.stop(grace=5), 10)
    assert code == 143  # ended by SIGTERM
    assert await asyncio.wait_for(waiting, 5) == 143


async def test_local_container_that_cannot_start() -> None:
    container = ContainerProcess(
        None, {}, QUICK, lambda _: None, local=local("no-such-program-anywhere")
    )
    with pytest.raises(StartError, match="executable file not found"):
        await container.wait()


# -- what a local process is told -------------------------------------------------------------


def test_mount_paths_and_ports_are_rewritten_where_a_program_reads_them() -> None:
    paths = {"/tmp/k8s-webhook-server/serving-certs": Path("/sandbox/certs"), "/data": Path("/d")}
    ports = {8081: 40001, 9443: 40002}
    cases = {
        "--cert-dir=/tmp/k8s-webhook-server/serving-certs": "--cert-dir=/sandbox/certs",
        "/data/file.txt": "/d/file.txt",
        "/database": "/database",  # another path that only starts alike
        "PATH=/bin:/data": "PATH=/bin:/d",
        "cat /data/a '/data' /data;": "cat /d/a '/d' /d;",
        "/other/data /data.d ~/data": "/other/data /data.d ~/data",
        "--health-probe-bind-address=:8081": "--health-probe-bind-address=127.0.0.1:40001",
        "--bind=0.0.0.0:8081": "--bind=127.0.0.1:40001",
        "localhost:9443": "localhost:40002",
        "--webhook-port=9443": "--webhook-port=40002",
        "9443": "40002",
        "--replicas=80811": "--replicas=80811",
        "http://localhost:8081/x": "http://localhost:8081/x",
        "--metrics-bind-address=:8443": "--metrics-bind-address=:8443",  # not declared
    }
    for value, expected in cases.items():
        assert rewrite(value, paths, ports) == expected, value


def test_the_sandbox_holds_volumes_privately_at_their_mount_paths(tmp_path: Path) -> None:
    sandbox = PodSandbox(str(tmp_path / "pod-"))
    try:
        sandbox.write_volumes(
            {
                "kube-api-access": {"token": b"t1", "ca.crt": b"ca", "namespace": b"ns"},
                "config": {"app/settings.yaml": b"a: 1"},
            }
        )
        assert stat.S_IMODE(sandbox.root.stat().st_mode) == 0o700
        token = sandbox.volumes / "kube-api-access" / "token"
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        root, paths = sandbox.container_root(
            "manager",
            [
                {
                    "name": "kube-api-access",
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                },
                {"name": "config", "mountPath": "/etc/app.yaml", "subPath": "app/settings.yaml"},
                {"name": "scratch", "mountPath": "/tmp/scratch"},
            ],
        )
        account = paths["/var/run/secrets/kubernetes.io/serviceaccount"]
        assert account == root / "var/run/secrets/kubernetes.io/serviceaccount"
        assert (account / "token").read_bytes() == b"t1"
        assert paths["/etc/app.yaml"].read_bytes() == b"a: 1"
        assert paths["/tmp/scratch"].is_dir()
        # A renewed token replaces the file under the same path.
        sandbox.write_volumes({"kube-api-access": {"token": b"t2"}})
        assert (account / "token").read_bytes() == b"t2"
    finally:
        sandbox.close()
    assert not sandbox.root.exists()


def test_host_ports_are_kept_per_pod_and_released_with_it() -> None:
    ports = HostPorts()
    first = ports.allocate("pod-a", "10.244.0.5", 8081)
    assert ports.allocate("pod-a", "10.244.0.5", 8081) == first
    other = ports.allocate("pod-b", "10.244.0.6", 8081)
    assert other != first
    assert ports.lookup("10.244.0.6", 8081) == other
    ports.release("pod-a")
    assert ports.lookup("10.244.0.5", 8081) is None
    assert ports.lookup("10.244.0.6", 8081) == other


# -- images built from a project --------------------------------------------------------------


def test_a_project_image_reads_the_dockerfile_and_console_scripts(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        'FROM python:3.12 AS builder\nENTRYPOINT ["builder"]\n'
        "FROM python:3.12-slim\nENV PATH=/venv/bin:$PATH \\\n    PYTHONUNBUFFERED=1\n"
        'CMD ["--old"]\nENTRYPOINT ["manager"]\nCMD ["--leader-elect"]\n'
    )
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "op"\n[project.scripts]\nmanager = "main:main"\nbad = "not valid!"\n'
    )
    image = ProjectImage.read(tmp_path)
    assert (image.entrypoint, image.cmd) == (["manager"], ["--leader-elect"])
    assert image.scripts == {"manager": "main:main"}
    assert image.environment({"PATH": "/bin"}) == {
        "PATH": "/venv/bin:/bin",
        "PYTHONUNBUFFERED": "1",
    }
    # Kubernetes' rules: command replaces ENTRYPOINT and CMD, args replaces CMD.
    assert image.command_line([], []) == ["manager", "--leader-elect"]
    assert image.command_line([], ["--x"]) == ["manager", "--x"]
    assert image.command_line(["other"], []) == ["other"]


def test_a_console_script_launcher_runs_the_entry_point(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(
        "import sys\n\ndef main():\n    print(sys.argv)\n    return 4\n"
    )
    (tmp_path / "pyproject.toml").write_text('[project.scripts]\nmanager = "main:main"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, script in ProjectImage.read(tmp_path).launchers().items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o700)
    done = subprocess.run(
        [str(bin_dir / "manager"), "--leader-elect", "it's"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (4, "['manager', '--leader-elect', \"it's\"]\n")
    python = subprocess.run(
        [str(bin_dir / "python3"), "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert python.stdout.strip() == sys.executable
    # An interpreter whose path cannot be a #! line is started through /bin/sh.
    spaced = tmp_path / "a python"
    spaced.mkdir()
    (spaced / "python").symlink_to(sys.executable)
    launcher = ProjectImage.read(tmp_path).launchers(str(spaced / "python"))["manager"]
    assert launcher.startswith("#!/bin/sh\n")
    (bin_dir / "manager").write_text(launcher)
    done = subprocess.run(
        [str(bin_dir / "manager"), "x"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (4, "['manager', 'x']\n"), done.stderr


def test_images_map_to_directories_by_any_spelling(tmp_path: Path) -> None:
    image, directory = parse_image_mapping(f"controller:latest={tmp_path}")
    images = ImageMap({image: directory})
    assert images.directory("controller") == tmp_path
    assert images.directory("docker.io/library/controller:latest") == tmp_path
    assert images.directory("controller:v2") is None
    for bad in ("controller", f"={tmp_path}", f"controller={tmp_path / 'missing'}"):
        with pytest.raises(ValueError, match=r"expected IMAGE=DIRECTORY|not a directory"):
            parse_image_mapping(bad)
