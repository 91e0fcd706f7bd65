"""Log records written during a reconcile carry its context, as text or as JSON lines."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator

import pytest

import kubeforge
import kubeforge.logs
from kubeforge._runtime.logs import ReconcileContext, reconciling

CONTEXT = ReconcileContext("at", "At", "default", "demo", "0f1e2d")


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_json_lines_carry_the_reconcile_and_extra_fields(restore_root: None) -> None:
    out = io.StringIO()
    kubeforge.logs.configure_logging("json", stream=out)
    log = logging.getLogger("tests.json")
    log.info("outside")
    with reconciling(CONTEXT):
        log.warning("inside %s", "a reconcile", extra={"attempt": 2})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    outside, inside, failed = (json.loads(line) for line in out.getvalue().splitlines())
    assert outside["message"] == "outside" and "controller" not in outside
    assert set(outside) == {"time", "level", "logger", "message"}
    assert outside["time"].endswith("Z") and outside["level"] == "info"
    assert inside == inside | {
        "level": "warning",
        "logger": "tests.json",
        "message": "inside a reconcile",
        "controller": "at",
        "object_kind": "At",
        "object_namespace": "default",
        "object_name": "demo",
        "reconcile_id": "0f1e2d",
        "attempt": 2,
    }
    assert "ValueError: boom" in failed["error"] and failed["level"] == "error"


def test_text_lines_end_with_the_reconcile(restore_root: None) -> None:
    out = io.StringIO()
    kubeforge.logs.configure_logging("text", stream=out)
    with reconciling(CONTEXT):
        logging.getLogger("tests.text").info("phase %s", "DONE")
    line = out.getvalue().strip()
    assert line.endswith(
        "tests.text: phase DONE controller=at object_kind=At object_namespace=default "
        "object_name=demo reconcile_id=0f1e2d"
    )


def test_a_reconcile_logger_tags_records_without_any_filter() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("tests.adapter")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    adapter = kubeforge.logs.reconcile_logger("tests.adapter")
    adapter.info("no reconcile")
    with reconciling(CONTEXT):
        assert kubeforge.logs.current_reconcile() == CONTEXT
        adapter.info("in one")
    assert kubeforge.logs.current_reconcile() is None
    assert not hasattr(records[0], "reconcile_id")
    assert getattr(records[1], "object_name", None) == "demo"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text or json"):
        kubeforge.logs.configure_logging("xml")  # type: ignore[arg-type]


def test_reconcile_ids_are_distinct_random_uuids() -> None:
    from kubeforge._runtime.controller import _RECONCILE_IDS

    ids = [next(_RECONCILE_IDS) for _ in range(600)]  # more than one block of 256
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
