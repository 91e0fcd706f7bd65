"""One timeline as a self-contained HTML file: the console's timeline view (timeline.js and
timeline.css, inlined) over the timeline's entries (inlined as JSON). It opens from disk in
any browser, with nothing to fetch: what a failing test leaves next to its report, and what
an exploration's finding links to."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._console.server import STATIC

__all__ = ["render_timeline"]

_PAGE_CSS = """
body { margin: 1rem; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: #1f2328; }
h1 { font-size: 1.1rem; margin: 0 0 .2rem; }
.about { color: #6e7781; margin: 0 0 .8rem; font-size: .9em; }
"""


def _inline_json(data: Any) -> str:
    """JSON that cannot end the <script> element it sits in."""
    text = orjson.dumps(data).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_timeline(document: Mapping[str, Any], title: str, about: str = "") -> str:
    """The page showing `document` (Timeline.document()), titled `title`."""
    script = (STATIC / "timeline.js").read_text(encoding="utf-8")
    style = (STATIC / "timeline.css").read_text(encoding="utf-8")
    boot = (
        'const view = new TimelineView(document.getElementById("timeline"), { live: false });\n'
        'view.reset(JSON.parse(document.getElementById("timeline-data").textContent));\n'
    )
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{_PAGE_CSS}{style}</style>",
            "</head>",
            "<body>",
            f"<h1>{html.escape(title)}</h1>",
            f'<p class="about">{html.escape(about)}</p>' if about else "",
            '<section id="timeline"></section>',
            f'<script type="application/json" id="timeline-data">{_inline_json(document)}</script>',
            f'<script type="module">\n{script}\n{boot}</script>',
            "</body>",
            "</html>",
            "",
        ]
    )
