"""The logs of a development cluster's own components: each record in the log of the
component that wrote it, for that cluster only, and the process's own logging unchanged."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kubeforge import Client
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import eventually

SCHEDULER_POD = "kube-scheduler-kubeforge-node"
BOUND = "Successfully bound pod to node"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings_only() -> Iterator[Records]:
    """The process logs warnings and above, to a handler of its root logger."""
    root = logging.getLogger()
    handler = Records()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def a_pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def test_each_cluster_logs_its_own_and_the_console_is_unchanged(
    warnings_only: Records,
) -> None:
    kubeforge = logging.getLogger("kubeforge")
    before = (kubeforge.level, kubeforge.propagate)
    async with DevCluster() as one, DevCluster() as two:
        async with Client(one.cluster_config()) as kube:
            await kube.create(a_pod("only-in-one"))

            def logged() -> str:
                return one.logs.text("kube-system", SCHEDULER_POD, "kube-scheduler")

            await eventually(lambda: 'pod="default/only-in-one"' in logged(), timeout=15)
        assert 'pod="default/only-in-one"' not in two.logs.text(
            "kube-system", SCHEDULER_POD, "kube-scheduler"
        )
        # INFO records went to the component's log, not to a console set to warnings.
        assert not [r for r in warnings_only.records if r.levelno < logging.WARNING]
        logging.getLogger("kubeforge.test").warning("a warning still reaches the console")
        assert [r.getMessage() for r in warnings_only.records][-1:] == [
            "a warning still reaches the console"
        ]
    assert (kubeforge.level, kubeforge.propagate) == before


async def test_a_console_at_info_sees_the_components_records(warnings_only: Records) -> None:
    logging.getLogger().setLevel(logging.INFO)
    async with DevCluster() as cluster, Client(cluster.cluster_config()) as kube:
        await kube.create(a_pod("web"))
        await eventually(
            lambda: any(r.getMessage() == BOUND for r in warnings_only.records), timeout=15
        )


async def test_no_nodes_no_collecting() -> None:
    async with DevCluster(ClusterOptions(nodes=0)):
        assert logging.getLogger("kubeforge").propagate


async def test_a_handler_on_both_loggers_gets_each_record_once(warnings_only: Records) -> None:
    # Some tools (pytest's log capture among them) put their handler on a logger that does not
    # propagate as well as on the root logger; a warning still reaches it once.
    kubeforge = logging.getLogger("kubeforge")
    async with DevCluster():
        assert not kubeforge.propagate  # collecting the components' logs
        kubeforge.addHandler(warnings_only)
        try:
            logging.getLogger("kubeforge.webhook").warning("once, please")
        finally:
            kubeforge.removeHandler(warnings_only)
    assert [r.getMessage() for r in warnings_only.records].count("once, please") == 1
