"""`--kubeforge-timeline`: a failing test's timeline, as one HTML file next to its report.

While the option is given, each test's environment records a timeline
(kubeforge._runtime.timeline): the reconciles of the cluster's built-in controllers and of
every manager the test runs, and each write the API server answers, with its field manager
(so the test's own writes and kubectl's are the changes that woke the first reconciles).
When the test fails, the timeline is written as `<test>.html` in the directory the option
names, else next to the `--junitxml` report, else in `kubeforge-timelines/` under the
rootdir, and the failure's report names the file.

The page itself is the console's (a layer above this one): the testing plugin asks for it
through the `pytest_kubeforge_timeline_html` hook, which the console's own pytest plugin
implements; exploration findings are written the same way (`write_timeline`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kubeforge._runtime.timeline import Change, Timeline

if TYPE_CHECKING:
    from kubeforge._testing.env import TestEnv
    from kubeforge._testing.serverfaults import RecordedWrite

__all__ = [
    "OPTION",
    "TIMELINE",
    "TimelineHooks",
    "record_timeline",
    "timeline_dir",
    "write_timeline",
]

OPTION = "kubeforge_timeline"
TIMELINE = pytest.StashKey[Timeline]()
DEFAULT_DIR = "kubeforge-timelines"
BUILT_IN = "kube-controller-manager"
_EVENTS = {"create": "ADDED", "delete": "DELETED", "deletecollection": "DELETED"}


class TimelineHooks:
    """The hook by which the plugin has a timeline rendered (pytest's hook specification)."""

    @pytest.hookspec(firstresult=True)
    def pytest_kubeforge_timeline_html(
        self, document: Mapping[str, Any], title: str, about: str
    ) -> str | None:
        """The timeline `document` (Timeline.document()) as one self-contained HTML page;
        None to leave it to another plugin."""
        raise NotImplementedError  # a specification: plugins implement it


def record_timeline(env: TestEnv) -> Timeline:
    """Record `env`'s timeline from now on: its cluster's built-in controllers, the
    managers its run_manager starts, and the writes its API server answers."""
    timeline = Timeline()
    env.timeline = timeline
    cluster = env.cluster
    if cluster is None:
        return timeline  # an existing cluster: the managers the test runs only
    if cluster.manager is not None:
        cluster.manager.add_observer(timeline.observer(BUILT_IN))
    record = env.faults.record_writes()

    def written(write: RecordedWrite) -> None:
        event = _EVENTS.get(write.verb, "MODIFIED")
        timeline.change(
            Change(
                event,
                write.kind,
                write.namespace,
                write.name,
                write.resource_version,
                write.field_manager or write.user,
            )
        )

    record.listeners.append(written)
    return timeline


def timeline_dir(config: pytest.Config) -> Path | None:
    """Where failing tests' timelines go (None: the option is not given)."""
    chosen = config.getoption(OPTION, None)
    if chosen is None:
        return None
    if chosen:
        return Path(chosen)
    report = config.getoption("xmlpath", None)
    if report:
        return Path(report).resolve().parent
    return Path(str(config.rootpath)) / DEFAULT_DIR


def _file_name(nodeid: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid).strip("-")
    return f"{slug[:150]}.html"


def write_timeline(
    config: pytest.Config,
    directory: Path,
    name: str,
    document: Mapping[str, Any],
    title: str,
    about: str = "",
) -> Path | None:
    """Write `document` as `<directory>/<name>.html` (made safe as a file name) through the
    hook; None when no plugin renders it."""
    page = config.hook.pytest_kubeforge_timeline_html(document=document, title=title, about=about)
    if page is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / _file_name(name)
    path.write_text(page, encoding="utf-8")
    return path
