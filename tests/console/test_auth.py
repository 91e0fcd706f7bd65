"""Who may use the console: the browser that opened the printed link (a session cookie in
exchange for its token), or a bearer token the cluster authenticates and authorizes; and
nobody reaching it through another host name or from another site's page."""

from __future__ import annotations

import aiohttp
import pytest

from kubeforge._console.auth import REVIEWED_PATH
from kubeforge._testing.env import TestEnv
from tests.support.console import console_session


async def test_the_link_token_buys_a_strict_http_only_session_cookie(testenv: TestEnv) -> None:
    async with console_session(testenv, login=False) as browser:
        assert browser.console.login_url.startswith("http://127.0.0.1:")
        assert "#login=" in browser.console.login_url
        status, _ = await browser.get("/api/overview")
        assert status == 401
        async with browser.session.post(
            f"{browser.console.url}/api/session", json={"token": "not-the-token"}
        ) as reply:
            assert reply.status == 401
        reply = await browser.login()
        assert reply.status == 200
        cookie = reply.headers["Set-Cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        status, overview = await browser.get("/api/overview")
        assert status == 200
        assert overview["kinds"]


async def test_the_page_loads_without_a_session_and_forbids_what_a_page_should_not_do(
    testenv: TestEnv,
) -> None:
    async with (
        console_session(testenv, login=False) as browser,
        browser.session.get(browser.console.url + "/") as reply,
    ):
        assert reply.status == 200
        policy = reply.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert reply.headers["Referrer-Policy"] == "no-referrer"
        assert reply.headers["X-Content-Type-Options"] == "nosniff"


async def test_another_host_name_or_another_origin_is_refused(testenv: TestEnv) -> None:
    async with console_session(testenv) as browser:
        url = browser.console.url
        port = url.rpartition(":")[2]
        # DNS rebinding: a name of the attacker's resolving to 127.0.0.1.
        async with browser.session.get(
            f"{url}/api/overview", headers={"Host": f"attacker.example:{port}"}
        ) as reply:
            assert reply.status == 421
        async with browser.session.get(
            f"{url}/api/overview", headers={"Origin": "http://attacker.example"}
        ) as reply:
            assert reply.status == 403
        async with browser.session.get(
            f"{url}/api/overview", headers={"Origin": f"http://localhost:{port}"}
        ) as reply:
            assert reply.status == 200


async def test_the_login_takes_only_json(testenv: TestEnv) -> None:
    # A form of another site cannot post JSON without the browser asking first (CORS).
    async with console_session(testenv, login=False) as browser:
        token = browser.console.login_url.partition("#login=")[2]
        async with browser.session.post(
            f"{browser.console.url}/api/session", data={"token": token}
        ) as reply:
            assert reply.status == 415
            assert "Set-Cookie" not in reply.headers


@pytest.mark.parametrize("allowed", [True, False])
async def test_a_bearer_token_is_checked_by_the_cluster(testenv: TestEnv, allowed: bool) -> None:
    client = testenv.client
    namespace = testenv.namespace
    await client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "viewer"}}
    )
    if allowed:
        await client.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": f"console-{namespace}"},
                "rules": [{"nonResourceURLs": [REVIEWED_PATH], "verbs": ["get"]}],
            }
        )
        await client.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"console-{namespace}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": f"console-{namespace}",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": namespace}],
            }
        )
    request = await client.create_subresource(
        "v1/ServiceAccount",
        "viewer",
        "token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    token = request["status"]["token"]
    async with console_session(testenv, login=False) as browser:
        url = browser.console.url + "/api/overview"
        async with aiohttp.ClientSession() as anonymous:
            async with anonymous.get(url, headers={"Authorization": "Bearer nonsense"}) as reply:
                assert reply.status == 401
            async with anonymous.get(url, headers={"Authorization": f"Bearer {token}"}) as reply:
                assert reply.status == (200 if allowed else 403)
