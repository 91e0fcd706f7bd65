"""The console's part in the pytest plugin (the `pytest11` entry point `kubeforge-console`):
it renders the timelines the testing plugin records (`--kubeforge-timeline`) as HTML. The
testing layer sits below the console, so it asks for the page through its hook
(`pytest_kubeforge_timeline_html`, kubeforge._testing.timelines) rather than importing it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubeforge._console.report import render_timeline

__all__ = ["pytest_kubeforge_timeline_html"]


@pytest.hookimpl(optionalhook=True)
def pytest_kubeforge_timeline_html(document: Mapping[str, Any], title: str, about: str) -> str:
    """The timeline as one self-contained HTML page."""
    return render_timeline(document, title, about)
