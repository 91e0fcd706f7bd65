"""exec, attach, port-forward (and so cp) answer with a Status that says what is unsupported and
why, and kubectl shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, find_kubectl
from tests.support import HTTPClient

PODS = "/api/v1/namespaces/default/pods"
WHY = "this API server has no kubelet or container runtime behind it to connect to"


async def running_pod(http: HTTPClient, name: str = "web") -> None:
    pod = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    reply = await http.post(PODS, pod)
    assert reply.status == 201
    created = reply.json()
    # kubectl port-forward only connects to a running pod.
    created["status"] = {"phase": "Running"}
    assert (await http.put(f"{PODS}/{name}/status", created)).status == 200


@pytest.mark.parametrize(
    ("method", "subresource", "what"),
    [
        ("POST", "exec?command=ls&stdout=true", "exec (kubectl exec and cp)"),
        ("GET", "exec?command=ls&stdout=true", "exec (kubectl exec and cp)"),
        ("POST", "attach?stdout=true", "attach (kubectl attach)"),
        ("POST", "portforward?ports=80", "port forwarding (kubectl port-forward)"),
        ("GET", "proxy", "proxying"),
    ],
)
async def test_connect_requests_say_what_is_unsupported(
    http: HTTPClient, method: str, subresource: str, what: str
) -> None:
    await running_pod(http)
    upgrade = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
    reply = await http.request(method, f"{PODS}/web/{subresource}", headers=upgrade)
    assert reply.status == 400
    status = reply.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == f'pods "web": {what} is not supported: {WHY}'
    missing = await http.request(method, f"{PODS}/gone/{subresource}", headers=upgrade)
    assert missing.status == 404


@pytest.mark.kubectl
@pytest.mark.parametrize("version", [None, "1.27"])
async def test_kubectl_shows_the_reason(
    server: APIServer, http: HTTPClient, tmp_path: Path, version: str | None
) -> None:
    # kubectl 1.27 speaks SPDY only; newer ones try WebSockets first, then fall back.
    kubectl = Kubectl(
        server.write_kubeconfig(tmp_path / "kubeconfig"),
        binary=find_kubectl(version, exact=True),
        cache_dir=tmp_path,
        env={"HOME": str(tmp_path)},
    )
    await running_pod(http)
    local = tmp_path / "file"
    local.write_text("x")
    for args, what in (
        (("exec", "web", "--", "ls"), "exec (kubectl exec and cp)"),
        (("cp", "web:/etc/hosts", str(tmp_path / "hosts")), "exec (kubectl exec and cp)"),
        (("cp", str(local), "web:/tmp/file"), "exec (kubectl exec and cp)"),
        (("attach", "web"), "attach (kubectl attach)"),
        (("port-forward", "pod/web", "0:80"), "port forwarding (kubectl port-forward)"),
    ):
        result = await kubectl.run(*args, check=False, timeout=30)
        assert result.code == 1
        assert f'pods "web": {what} is not supported: {WHY}' in result.err, result.err
