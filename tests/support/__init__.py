"""Test helpers: the repository's paths and tools, raw HTTPS access to the embedded server,
RBAC grants, free local ports, and the `kubeforge` command run to its end."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import orjson

from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, find_kubectl

# The repository, and the reference data the tests compare against.
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def load_tool(name: str) -> ModuleType:
    """The script tools/<name>.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


@dataclass
class Reply:
    status: int
    headers: Any
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


class HTTPClient:
    """Raw HTTP access to the server, as a client would make it."""

    def __init__(self, server: APIServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session
        self.auth = {"Authorization": f"Bearer {server.token}"}

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        auth: bool = True,
        raw: bytes | None = None,
    ) -> Reply:
        hdrs = dict(self.auth if auth else {})
        hdrs.update(headers or {})
        data = raw
        if data is None and body is not None:
            data = orjson.dumps(body)
        if data is not None:
            hdrs["Content-Type"] = content_type
        async with self.session.request(
            method, self.server.url + path, data=data, headers=hdrs
        ) as r:
            return Reply(r.status, r.headers, await r.read())

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("DELETE", path, body, **kw)

    async def watch_lines(
        self, path: str, until: Callable[[list[dict[str, Any]]], bool], timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """Read watch events from `path` until `until(events)` holds (or fail on timeout)."""
        events: list[dict[str, Any]] = []
        async with self.session.get(self.server.url + path, headers=self.auth) as r:
            assert r.status == 200, await r.text()

            async def read() -> None:
                async for line in r.content:
                    if line.strip():
                        events.append(orjson.loads(line))
                        if until(events):
                            return

            await asyncio.wait_for(read(), timeout)
        return events


@asynccontextmanager
async def connect(server: APIServer) -> AsyncIterator[HTTPClient]:
    """Raw HTTPS access to `server`, trusting its CA and carrying its token."""
    assert server.certificates is not None
    ctx: ssl.SSLContext = server.certificates.client_context()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        yield HTTPClient(server, session)


def kubectl_for(kubeconfig: Path, home: Path, version: str | None = None) -> Kubectl:
    """kubectl pointed at `kubeconfig`, exactly `version` when given, with `home` (made when
    missing) as its discovery cache and HOME: nothing shared with other tests."""
    home.mkdir(parents=True, exist_ok=True)
    binary = find_kubectl(version, exact=True)
    return Kubectl(kubeconfig, binary=binary, cache_dir=home, env={"HOME": str(home)})


RBAC = "/apis/rbac.authorization.k8s.io/v1"


def cluster_role(name: str, rules: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
        **fields,
    }


def rbac_subject(kind: str, name: str) -> dict[str, Any]:
    """A User or Group subject."""
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def cluster_role_binding(name: str, role: str, *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": list(subjects),
    }


async def bind(http: HTTPClient, name: str, role: str, user: str) -> None:
    """The ClusterRole `role` bound to `user` cluster-wide by the binding `name`."""
    binding = cluster_role_binding(name, role, rbac_subject("User", user))
    reply = await http.post(f"{RBAC}/clusterrolebindings", binding)
    assert reply.status == 201, reply.body


async def grant(http: HTTPClient, user: str, rules: list[dict[str, Any]]) -> str:
    """A ClusterRole with `rules`, bound to `user` cluster-wide; the role's name."""
    name = f"{user}-rights"
    reply = await http.post(f"{RBAC}/clusterroles", cluster_role(name, rules))
    assert reply.status == 201, reply.body
    await bind(http, name, name, user)
    return name


def free_port() -> int:
    """A local port nothing listens on (bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


KUBEFORGE = [sys.executable, "-m", "kubeforge._cli.main"]


@dataclass
class Run:
    code: int
    out: str
    err: str


async def kubeforge(*args: str, cwd: Path | None = None, timeout: float = 60.0) -> Run:
    """`kubeforge ARGS` run to its end (without colours), and what it printed."""
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return Run(proc.returncode or 0, out.decode(), err.decode())
