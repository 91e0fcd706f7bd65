"""Debian's Chromium driven by Playwright, as the console's browser tests and the
screenshot script use it: the system browser (Playwright's own downloads are never used),
headless, with no background traffic (this machine's network is closed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium (`make chromium` installs it)."""
    # Imported here: the main suite collects without Playwright installed (`make
    # test-console` installs it).
    from playwright.async_api import async_playwright

    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `make chromium` installs Debian's package")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(FLAGS), headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()
