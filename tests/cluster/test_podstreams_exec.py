"""kubectl exec, cp and attach against simulated pods of a development cluster, with the
kubectl versions that speak each protocol: 1.27 and 1.29 SPDY only, 1.30 and 1.33 WebSockets
(v5.channel.k8s.io) first."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeforge._cluster.options import ClusterOptions
from tests.support.streaming import KUBECTL_VERSIONS, ClusterThread

pytestmark = pytest.mark.kubectl

MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {key: value-from-the-configmap, other: second}
---
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "echo ready > /tmp/state; while true; do echo tick; sleep 0.2; done"]
    env: [{name: GREETING, value: hello}]
    volumeMounts: [{name: settings, mountPath: /etc/config}]
  volumes: [{name: settings, configMap: {name: settings}}]
---
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
  - {name: first, image: busybox, command: [sleep, "3600"]}
  - {name: second, image: busybox, command: [sleep, "3600"]}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    options = ClusterOptions(pod_start_seconds=0.05)
    with ClusterThread(tmp_path_factory.mktemp("exec"), options) as running:
        running.apply(MANIFEST)
        running.wait_ready("shell", "two")
        yield running


@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
def test_exec_sees_the_containers_environment_and_mounted_files(
    cluster: ClusterThread, version: str
) -> None:
    done = cluster.kubectl("exec", "shell", "--", "cat", "/etc/config/key", version=version)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"value-from-the-configmap"
    done = cluster.kubectl("exec", "shell", "--", "sh", "-c", "echo $GREETING", version=version)
    assert done.stdout == b"hello\n", done.stderr.decode()
    # What the container's own script wrote is there too.
    done = cluster.kubectl("exec", "shell", "--", "cat", "/tmp/state", version=version)
    assert done.stdout == b"ready\n", done.stderr.decode()
    done = cluster.kubectl("exec", "shell", "--", "ls", "/etc/config", version=version)
    assert done.stdout.split() == [b"key", b"other"]


@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
def test_exit_codes_and_stderr(cluster: ClusterThread, version: str) -> None:
    done = cluster.kubectl("exec", "shell", "--", "sh", "-c", "echo out; exit 3", version=version)
    assert done.returncode == 3
    assert done.stdout == b"out\n"
    assert b"command terminated with exit code 3" in done.stderr
    done = cluster.kubectl("exec", "shell", "--", "cat", "/nothing", version=version)
    assert done.returncode == 1
    # The utility's complaint is its stderr, not its stdout.
    assert done.stdout == b""
    assert b"can't open '/nothing'" in done.stderr


@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
def test_exec_with_stdin(cluster: ClusterThread, version: str) -> None:
    script = b"echo first\nx=$((6 * 7))\necho $x\nexit 5\necho never\n"
    done = cluster.kubectl("exec", "-i", "shell", "--", "sh", stdin=script, version=version)
    assert done.stdout == b"first\n42\n", done.stderr.decode()
    assert done.returncode == 5
    done = cluster.kubectl("exec", "-i", "shell", "--", "wc", "-l", stdin=b"a\nb\nc\n")
    assert done.stdout == b"3\n"


def test_a_program_the_container_does_not_have(cluster: ClusterThread) -> None:
    done = cluster.kubectl("exec", "shell", "--", "nginx", "-v")
    assert done.returncode == 1
    assert b'exec: "nginx": executable file not found in $PATH' in done.stderr
    done = cluster.kubectl("exec", "shell", "--", "sh", "-c", "nginx -v")
    assert done.returncode == 127
    assert b"sh: nginx: not found" in done.stdout


@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
def test_cp_both_ways(cluster: ClusterThread, version: str, tmp_path: Path) -> None:
    local = tmp_path / "notes.txt"
    local.write_bytes(b"copied in with kubectl " + version.encode() + b"\n")
    target = f"/tmp/notes-{version}.txt"
    done = cluster.kubectl("cp", str(local), f"shell:{target}", version=version)
    assert done.returncode == 0, done.stderr.decode()
    done = cluster.kubectl("exec", "shell", "--", "cat", target, version=version)
    assert done.stdout == local.read_bytes()
    back = tmp_path / "back.txt"
    done = cluster.kubectl("cp", f"shell:{target}", str(back), version=version)
    assert done.returncode == 0, done.stderr.decode()
    assert back.read_bytes() == local.read_bytes()
    # A whole directory comes out too.
    folder = tmp_path / "config"
    done = cluster.kubectl("cp", "shell:/etc/config", str(folder), version=version)
    assert done.returncode == 0, done.stderr.decode()
    assert (folder / "key").read_text() == "value-from-the-configmap"
    assert (folder / "other").read_text() == "second"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_attach_streams_the_output_from_then_on(cluster: ClusterThread, version: str) -> None:
    env = cluster.env()
    from kubeforge.testing import find_kubectl

    process = subprocess.Popen(
        [find_kubectl(version, exact=True), "attach", "shell"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        assert lines == [b"tick\n"] * 3
    finally:
        process.terminate()
        process.wait(10)


def test_the_container_must_be_named_when_there_are_several(cluster: ClusterThread) -> None:
    done = cluster.kubectl("exec", "two", "-c", "nope", "--", "true")
    assert done.returncode == 1
    assert b"container nope is not valid for pod two" in done.stderr
    done = cluster.kubectl("exec", "two", "-c", "second", "--", "sh", "-c", "echo ok")
    assert done.stdout == b"ok\n", done.stderr.decode()


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_a_terminal_echoes_and_prompts(cluster: ClusterThread, version: str) -> None:
    """`kubectl exec -it` under a terminal: the simulated shell reads line by line, with a
    prompt and what is typed echoed, as a shell on a terminal does."""
    from kubeforge.testing import find_kubectl

    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [find_kubectl(version, exact=True), "exec", "-it", "shell", "--", "sh"],
        env=cluster.env(),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    seen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, seen
            ready, _, _ = select.select([controller], [], [], remaining)
            if ready:
                try:
                    seen += os.read(controller, 4096)
                except OSError:
                    break

    try:
        read_until(b"# ")
        os.write(controller, b"echo $GREETING-there\r")
        read_until(b"hello-there\r\n")
        assert b"echo $GREETING-there" in seen  # echoed as typed
        os.write(controller, b"exit 7\r")
        assert process.wait(30) == 7
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
