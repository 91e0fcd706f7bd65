"""The console's two main screens, as docs/devcluster.md shows them: an object's page (a
Deployment, with its ReplicaSet and pods in the ownership graph) and the timeline of the
built-in controllers' reconciles, taken in Debian's Chromium (`make screenshots`).

    python tools/console_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.browser import chromium  # noqa: E402

from kubeforge._client.client import Client  # noqa: E402
from kubeforge._cluster.devcluster import DevCluster  # noqa: E402
from kubeforge._console.server import Console  # noqa: E402
from kubeforge.testing import eventually  # noqa: E402

VIEWPORT = {"width": 1280, "height": 800}
DEPLOYMENT = "apps/v1/Deployment"


def deployment(name: str, replicas: int) -> dict[str, object]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }


async def take(out: Path) -> list[Path]:
    async with DevCluster() as cluster:
        assert cluster.manager is not None and cluster.client is not None
        console = Console(Client(cluster.cluster_config()), title="kubeforge dev")
        console.observe(cluster.manager, "kube-controller-manager")
        await console.start()
        try:
            client = cluster.client
            await client.create(deployment("web", 3))

            async def ready() -> bool:
                found = await client.get(DEPLOYMENT, "web", namespace="default")
                return (found.get("status") or {}).get("readyReplicas") == 3

            await eventually(ready, timeout=30)
            await client.patch(DEPLOYMENT, "web", {"spec": {"replicas": 2}}, namespace="default")
            await eventually(lambda: len(console.timeline) > 40, timeout=30)
            shots = []
            async with chromium() as browser:
                page = await browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
                await page.goto(console.login_url)
                await page.wait_for_selector(".cards")
                await page.goto(f"{console.url}/#/object/apps%2Fv1%2FDeployment/default/web")
                await page.wait_for_selector(".graph-node[data-kind='Pod']")
                shots.append(out / "console-object.png")
                await page.screenshot(path=str(shots[-1]))
                await page.goto(f"{console.url}/#/timeline")
                bar = page.locator(".tl-bar[data-wrote*='Pod default/']").first
                await bar.wait_for()
                await bar.click()
                await page.locator(".tl-details h3").wait_for()
                shots.append(out / "console-timeline.png")
                await page.screenshot(path=str(shots[-1]))
            return shots
        finally:
            await console.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(take(args.out)):
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
