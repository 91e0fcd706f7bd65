"""The console in a real browser (Debian's Chromium through Playwright; `make
test-console`): an object created with kubectl appears without a reload, and the cnat
example run with `kubeforge run` shows its reconciles on the timeline and its pod in the
At's ownership graph; and the timeline page a failing test leaves opens from disk."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kubeforge._console.report import render_timeline
from kubeforge._testing.timelines import record_timeline
from kubeforge.testing import TestEnv, eventually
from tests.cli.test_run_console import CNAT, at
from tests.support import kubectl_for
from tests.support.browser import chromium
from tests.support.builtin_objects import deployment as builtin_deployment
from tests.support.console import console_session, run_against_dev

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = [pytest.mark.browser, pytest.mark.kubectl]
TIMEOUT = 20_000  # milliseconds, Playwright's unit


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        assert errors == []


async def test_an_object_created_with_kubectl_appears_live(
    testenv: TestEnv, tmp_path: Path, page: Page
) -> None:
    kubectl = kubectl_for(Path(testenv.write_kubeconfig(tmp_path / "kubeconfig")), tmp_path)
    async with console_session(testenv, login=False) as console:
        await page.goto(console.console.login_url)
        # The token is exchanged for a cookie and leaves the address bar.
        await page.wait_for_selector(".cards", timeout=TIMEOUT)
        assert "login=" not in page.url
        await page.select_option("#namespace", testenv.namespace)
        await page.click('.kinds a[href="#/kind/v1%2FConfigMap"]')
        await page.wait_for_selector('table.objects[data-kind="v1/ConfigMap"]', timeout=TIMEOUT)
        assert await page.locator('tr[data-name="greeting"]').count() == 0
        await kubectl.run("create", "configmap", "greeting", "--from-literal=hello=world")
        row = page.locator('tr[data-name="greeting"]')
        await row.wait_for(timeout=TIMEOUT)
        await row.locator("a").click()
        await page.wait_for_selector("pre.yaml", timeout=TIMEOUT)
        assert "hello: world" in await page.inner_text("pre.yaml")
        assert "managedFields" not in await page.inner_text("pre.yaml")
        # managedFields are folded into a table of managers, closed until asked for.
        assert "kubectl-create" not in await page.inner_text("details.managed")
        await page.click("details.managed summary")
        assert "kubectl-create" in await page.inner_text("details.managed")


async def test_the_cnat_example_reconciles_on_the_timeline_and_its_pod_in_the_graph(
    tmp_path: Path, page: Page
) -> None:
    async with run_against_dev(CNAT, tmp_path) as (run, kubectl):
        url, token = await run.console()
        await page.goto(f"{url}/#login={token}")
        await page.wait_for_selector(".cards", timeout=TIMEOUT)
        await kubectl.apply(at("hello"))

        await page.click('nav a[data-screen="timeline"]')
        await page.fill(".tl-filter", "default/hello")
        await page.locator(".tl-label", has_text="cnat / at").wait_for(timeout=TIMEOUT)
        bar = page.locator('.tl-bar[data-object="default/hello"]').first
        await bar.wait_for(timeout=TIMEOUT)
        await bar.click()
        details = page.locator(".tl-details")
        await details.get_by_text("ADDED At default/hello").wait_for(timeout=TIMEOUT)

        # The reconcile that made the pod: its write of the Pod is in its details.
        maker = page.locator('.tl-bar[data-wrote*="Pod default/hello"]').first
        await maker.wait_for(timeout=TIMEOUT)
        await maker.click()
        made = page.locator(".tl-details td", has_text="Pod default/hello")
        await made.first.wait_for(timeout=TIMEOUT)

        await page.goto(f"{url}/#/object/cnat.kubeforge.dev%2Fv1%2FAt/default/hello")
        pod = page.locator('.graph-node[data-kind="Pod"]')
        await pod.wait_for(timeout=TIMEOUT)
        # cnat names the pod after its At.
        assert await pod.get_attribute("data-name") == "hello"
        await pod.click()
        heading = page.locator(".object h2", has_text="Pod")
        await heading.wait_for(timeout=TIMEOUT)
        assert "default/hello" in await heading.inner_text()


async def test_a_timeline_page_opens_from_disk(
    testenv: TestEnv, tmp_path: Path, page: Page
) -> None:
    # What --kubeforge-timeline leaves for a failing test, rendered by a real browser.
    timeline = record_timeline(testenv)
    await testenv.client.create(
        {"apiVersion": "apps/v1", "kind": "Deployment", **builtin_deployment(replicas=1)}
    )
    await eventually(lambda: any(e.get("controller") == "replicaset" for e in timeline.entries()))
    path = tmp_path / "timeline.html"
    path.write_text(render_timeline(timeline.document(), "a failing test"))
    await page.goto(path.as_uri())
    await page.locator(".tl-label", has_text="kube-controller-manager / deployment").wait_for(
        timeout=TIMEOUT
    )
    await page.locator(".tl-link").first.wait_for(timeout=TIMEOUT)
    await page.locator('.tl-bar[data-object$="/web"]').first.click()
    await page.locator(".tl-details", has_text="kubeforge-testenv").wait_for(timeout=TIMEOUT)
