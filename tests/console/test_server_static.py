"""The page is plain ES modules and CSS shipped with the package: each is served with its
type, every module it imports is there, and nothing comes from elsewhere."""

from __future__ import annotations

import re

import pytest

from kubeforge._console.server import STATIC
from kubeforge._testing.env import TestEnv
from tests.support.console import console_session

ASSETS = sorted(p.name for p in STATIC.iterdir() if p.is_file())
IMPORTED = re.compile(r"""^import .* from "(.+)";$""", re.MULTILINE)
REFERENCED = re.compile(r"""(?:href|src)="([^"]+)\"""")


def test_the_modules_import_only_modules_shipped_beside_them() -> None:
    modules = [name for name in ASSETS if name.endswith(".js")]
    assert {"app.js", "api.js", "graph.js", "timeline.js"} <= set(modules)
    for name in modules:
        for target in IMPORTED.findall((STATIC / name).read_text()):
            assert target.startswith("./"), (name, target)
            assert target[2:] in ASSETS, (name, target)
    # The timeline imports nothing: a test report inlines it on its own.
    assert IMPORTED.findall((STATIC / "timeline.js").read_text()) == []


def test_the_page_names_only_its_own_assets() -> None:
    page = (STATIC / "index.html").read_text()
    for target in REFERENCED.findall(page):
        if target.startswith("#"):
            continue  # the page's own screens
        assert target == "data:," or target.removeprefix("/static/") in ASSETS, target


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("app.js", "text/javascript"), ("style.css", "text/css"), ("index.html", "text/html")],
)
async def test_assets_are_served_with_their_types(
    testenv: TestEnv, name: str, content_type: str
) -> None:
    async with console_session(testenv, login=False) as browser:
        async with browser.session.get(f"{browser.console.url}/static/{name}") as reply:
            assert reply.status == 200
            assert reply.content_type == content_type
            assert await reply.read() == (STATIC / name).read_bytes()
        async with browser.session.get(f"{browser.console.url}/static/..%2Fserver.py") as reply:
            assert reply.status == 404
