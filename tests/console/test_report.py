"""A timeline as one self-contained HTML page: the view's code and style inlined, the
entries inlined as JSON that no object's name can break out of."""

from __future__ import annotations

import json
import re

from kubeforge._console.report import render_timeline
from kubeforge._runtime.timeline import Change, Timeline


def test_the_page_holds_everything_it_shows() -> None:
    timeline = Timeline()
    hostile = "</script><script>alert(1)</script>"
    timeline.change(Change("ADDED", "v1/ConfigMap", "default", hostile, "7", "kubectl"))
    page = render_timeline(timeline.document(), "a <failing> test", "failed in call")
    assert "src=" not in page and "href=" not in page
    assert "class TimelineView" in page and ".tl-bar" in page
    assert "<h1>a &lt;failing&gt; test</h1>" in page
    assert hostile not in page
    data = re.search(r'id="timeline-data">(.*?)</script>', page, re.S)
    assert data is not None
    [entry] = json.loads(data.group(1))["entries"]
    assert entry["name"] == hostile
