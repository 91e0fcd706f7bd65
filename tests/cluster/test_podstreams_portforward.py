"""port-forward to a container that runs as a local process (`--exec-pods`), with kubectl
1.27-1.33 (SPDY; from 1.31 SPDY tunnelled through a WebSocket) and the official Python
client's `portforward` (WebSocket channels); exec and cp in such a container run real
processes in its environment; a simulated pod has nothing listening."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.stream import portforward, stream

from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import find_kubectl
from tests.support.streaming import KUBECTL_VERSIONS, ClusterThread

pytestmark = pytest.mark.kubectl

MANIFEST = f"""
apiVersion: v1
kind: Pod
metadata: {{name: server}}
spec:
  containers:
  - name: web
    image: python
    command: [{sys.executable}, -m, http.server, "8080", --bind, "127.0.0.1"]
    ports: [{{containerPort: 8080}}]
    env: [{{name: MODE, value: local}}]
    volumeMounts: [{{name: data, mountPath: /data}}]
  volumes: [{{name: data, emptyDir: {{}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: echoer}}
spec:
  containers:
  - {{name: cat, image: busybox, command: [cat], stdin: true, stdinOnce: true}}
---
apiVersion: v1
kind: Pod
metadata: {{name: simulated}}
spec:
  containers:
  - {{name: nginx, image: nginx}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    options = ClusterOptions(pod_start_seconds=0.05, exec_pods=True)
    with ClusterThread(tmp_path_factory.mktemp("portforward"), options) as running:
        running.apply(MANIFEST)
        running.wait_ready("server", "simulated", "echoer")
        yield running


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


class _Forwarding:
    """`kubectl port-forward` running until the block ends."""

    def __init__(self, cluster: ClusterThread, version: str, target: str, remote: int) -> None:
        self.port = _free_port()
        self.process = subprocess.Popen(
            [find_kubectl(version, exact=True), "port-forward", target, f"{self.port}:{remote}"],
            env=cluster.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def __enter__(self) -> _Forwarding:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith(b"Forwarding from 127.0.0.1:"), line
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(20)


@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
def test_kubectl_port_forward_reaches_the_process(cluster: ClusterThread, version: str) -> None:
    with _Forwarding(cluster, version, "pod/server", 8080) as forwarding:
        for _ in range(2):  # one forwarded connection after another
            answer = _get(forwarding.port)
            assert answer.startswith(b"HTTP/1.0 200 OK"), answer[:200]


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_nothing_listens_in_a_simulated_pod(cluster: ClusterThread, version: str) -> None:
    forwarding = _Forwarding(cluster, version, "pod/simulated", 80)
    with forwarding:
        assert _get(forwarding.port) == b""
        assert forwarding.process.wait(30) == 1
        assert forwarding.process.stderr is not None
        error = forwarding.process.stderr.read()
        assert b"error forwarding port 80 to pod simulated" in error, error
        assert b"connect: connection refused" in error


def test_python_client_port_forward(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    forwarded = portforward(
        core.connect_get_namespaced_pod_portforward, "server", "default", ports="8080"
    )
    sock = forwarded.socket(8080)
    sock.setblocking(True)
    sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    assert received.startswith(b"HTTP/1.0 200 OK"), received[:200]
    assert forwarded.error(8080) is None


def test_python_client_port_forward_to_a_closed_port(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    forwarded = portforward(
        core.connect_get_namespaced_pod_portforward, "simulated", "default", ports="80"
    )
    sock = forwarded.socket(80)
    sock.setblocking(True)
    assert sock.recv(1024) == b""
    error = forwarded.error(80)
    assert error is not None and "connection refused" in error


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_exec_runs_a_process_with_the_containers_environment(
    cluster: ClusterThread, version: str
) -> None:
    done = cluster.kubectl(
        "exec", "server", "--", "sh", "-c", "echo $MODE; test -d /data && exit 6", version=version
    )
    assert done.stdout == b"local\n", done.stderr.decode()
    # /data is the pod's volume on this machine, as in the container's own command line.
    assert done.returncode == 6
    done = cluster.kubectl("exec", "server", "--", "no-such-program", version=version)
    assert done.returncode == 1
    assert b'exec: "no-such-program": executable file not found in $PATH' in done.stderr


def test_cp_into_a_volume_of_a_local_process(cluster: ClusterThread, tmp_path: Path) -> None:
    local = tmp_path / "upload.txt"
    local.write_text("into the volume\n")
    done = cluster.kubectl("cp", str(local), "server:/data/upload.txt")
    assert done.returncode == 0, done.stderr.decode()
    done = cluster.kubectl("exec", "server", "--", "cat", "/data/upload.txt")
    assert done.stdout == b"into the volume\n", done.stderr.decode()
    back = tmp_path / "back.txt"
    done = cluster.kubectl("cp", "server:/data/upload.txt", str(back))
    assert done.returncode == 0, done.stderr.decode()
    assert back.read_text() == "into the volume\n"


def test_python_client_exec_in_a_local_process(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    output = stream(
        core.connect_get_namespaced_pod_exec,
        "server",
        "default",
        command=["sh", "-c", "echo $MODE"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert output == "local\n"


def test_exec_under_a_terminal_in_a_local_process(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    output = stream(
        core.connect_get_namespaced_pod_exec,
        "server",
        "default",
        command=["sh", "-c", "test -t 1 && echo terminal; echo $MODE"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=True,
    )
    assert output == "terminal\r\nlocal\r\n"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_attach_feeds_the_process_its_input(cluster: ClusterThread, version: str) -> None:
    # `stdinOnce`: the process's input closes when the attach's does, so `cat` ends, and
    # with it the attach.
    cluster.wait_ready("echoer")
    done = cluster.kubectl("attach", "-i", "echoer", stdin=b"through attach\n", version=version)
    assert done.returncode == 0, done.stderr.decode()
    assert b"through attach\n" in done.stdout
