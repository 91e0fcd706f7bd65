"""exec through the official Python client's `kubernetes.stream` (v5.channel.k8s.io, or v4)
and kubernetes_asyncio's WsApiClient (v4.channel.k8s.io), and who may exec: RBAC's
`create pods/exec`, which a WebSocket upgrade (a GET, authorized as `get`) needs as well."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.stream import stream
from kubernetes_asyncio import client as async_client, config as async_config
from kubernetes_asyncio.stream import WsApiClient

from kubeforge._cluster.options import ClusterOptions
from tests.support.streaming import ClusterThread

MANIFEST = """
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
    env: [{name: GREETING, value: hello}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    options = ClusterOptions(pod_start_seconds=0.05)
    with ClusterThread(tmp_path_factory.mktemp("clients"), options) as running:
        running.apply(MANIFEST)
        running.wait_ready("shell")
        yield running


def test_python_client_exec(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    output = stream(
        core.connect_get_namespaced_pod_exec,
        "shell",
        "default",
        command=["sh", "-c", "echo $GREETING; echo oops >&2"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert output == "hello\noops\n"


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_python_client_exit_code_and_stdin(cluster: ClusterThread, protocol: str) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    response = stream(
        core.connect_get_namespaced_pod_exec,
        "shell",
        "default",
        command=["sh"],
        stderr=True,
        stdin=True,
        stdout=True,
        tty=False,
        _preload_content=False,
        _headers={"sec-websocket-protocol": protocol},
    )
    try:
        assert response.subprotocol == protocol
        response.write_stdin("echo $((40 + 2))\n")
        assert response.readline_stdout(timeout=10) == "42"
        response.write_stdin("exit 9\n")
        response.run_forever(timeout=10)
        assert response.returncode == 9
    finally:
        response.close()


def test_python_client_closes_stdin_on_v5(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    response = stream(
        core.connect_get_namespaced_pod_exec,
        "shell",
        "default",
        command=["wc", "-c"],
        stderr=True,
        stdin=True,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    try:
        response.write_stdin("twelve bytes")
        response.close_channel(0)  # v5's close signal: the end of the input
        response.run_forever(timeout=10)
        assert response.read_stdout().strip() == "12"
        assert response.returncode == 0
    finally:
        response.close()


def test_python_client_terminal(cluster: ClusterThread) -> None:
    core = k8s.CoreV1Api(cluster.python_client())
    response = stream(
        core.connect_get_namespaced_pod_exec,
        "shell",
        "default",
        command=["sh"],
        stderr=True,
        stdin=True,
        stdout=True,
        tty=True,
        _preload_content=False,
    )
    try:
        response.write_channel(4, '{"Width": 100, "Height": 30}')
        response.write_stdin("echo $GREETING\r")
        seen = ""
        for _ in range(50):
            response.update(timeout=0.2)
            seen += response.read_stdout() or ""
            if "hello\r\n" in seen:
                break
        assert "# echo $GREETING\r\nhello\r\n" in seen, seen
    finally:
        response.close()


def test_kubernetes_asyncio_exec(cluster: ClusterThread) -> None:
    async def run() -> str:
        configuration = async_client.Configuration()
        await async_config.load_kube_config(
            config_file=str(cluster.kubeconfig), client_configuration=configuration
        )
        async with WsApiClient(configuration=configuration) as ws_api:
            core = async_client.CoreV1Api(api_client=ws_api)
            output = await core.connect_get_namespaced_pod_exec(
                "shell",
                "default",
                command=["sh", "-c", "echo from asyncio; echo $GREETING"],
                stderr=True,
                stdin=False,
                stdout=True,
                tty=False,
            )
        return output.decode() if isinstance(output, bytes) else str(output)

    assert asyncio.run(run()) == "from asyncio\nhello\n"


# who may exec ---------------------------------------------------------------------------------


def _role(cluster: ClusterThread, user: str, verbs: list[str]) -> None:
    manifest = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": user, "namespace": "default"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": user, "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
            "subjects": [{"kind": "User", "name": user}],
        },
    ]
    cluster.apply(yaml.safe_dump_all(manifest))


@pytest.mark.kubectl
@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_exec_needs_create_on_pods_exec(cluster: ClusterThread, version: str) -> None:
    _role(cluster, "reader", ["get"])
    _role(cluster, "operator", ["create"])
    _role(cluster, "both", ["get", "create"])
    command = ("exec", "shell", "--", "sh", "-c", "echo in")
    # `get` alone: the WebSocket upgrade is refused for want of `create`, and so is SPDY.
    refused = cluster.kubectl(*command, version=version, user="reader")
    assert refused.returncode == 1
    assert b'cannot create resource "pods/exec"' in refused.stderr, refused.stderr
    # `create` alone: kubectl 1.33's WebSocket GET is refused (`get`), its SPDY POST is not.
    for user in ("operator", "both"):
        allowed = cluster.kubectl(*command, version=version, user=user)
        assert allowed.stdout == b"in\n", allowed.stderr.decode()


def test_a_websocket_upgrade_is_authorized_for_create(cluster: ClusterThread) -> None:
    _role(cluster, "reader", ["get"])
    configuration = k8s.Configuration()
    base = cluster.python_client().configuration
    configuration.host = base.host
    configuration.ssl_ca_cert = base.ssl_ca_cert
    reader = yaml.safe_load(cluster.user_kubeconfig("reader").read_text())
    user = reader["users"][0]["user"]
    directory = cluster.directory
    (directory / "reader.crt").write_bytes(_decode(user["client-certificate-data"]))
    (directory / "reader.key").write_bytes(_decode(user["client-key-data"]))
    configuration.cert_file = str(directory / "reader.crt")
    configuration.key_file = str(directory / "reader.key")
    core = k8s.CoreV1Api(k8s.ApiClient(configuration))
    with pytest.raises(k8s.ApiException) as refused:
        stream(
            core.connect_get_namespaced_pod_exec,
            "shell",
            "default",
            command=["true"],
            stdout=True,
            stderr=True,
            stdin=False,
            tty=False,
        )
    assert "403" in str(refused.value)


def _decode(text: str) -> bytes:
    import base64

    return base64.b64decode(text)
