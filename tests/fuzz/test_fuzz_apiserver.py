"""Property-based fuzzing of the API server: no 5xx, nothing half-written, lists, gets and
watches agree, and the server stays healthy (see tests/fuzz/).

Bounded for the suite: derandomized (the same examples on every run, so CI is
deterministic) and a fixed number of examples; `tools/fuzz_apiserver.py --minutes N` runs
the same checks with fresh random examples for as long as asked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.checks import Fuzzer
from tests.fuzz.operations import Example, examples, number_examples
from tests.fuzz.target import ServerThread

BUILTIN = (
    "configmaps",
    "secrets",
    "pods",
    "services",
    "deployments",
    "namespaces",
    "roles",
    "rolebindings",
    "clusterroles",
)

BOUNDED = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def fuzzer() -> Iterator[Fuzzer]:
    with ServerThread() as target:
        fuzz = Fuzzer(target)
        yield fuzz
        fuzz.close()
        assert not fuzz.stats.violations, fuzz.stats.violations


@BOUNDED
@given(examples(BUILTIN))
def test_built_in_kinds_survive_hostile_requests(fuzzer: Fuzzer, example: Example) -> None:
    fuzzer.run(example)


@BOUNDED
@given(examples(("gadgets",)))
def test_a_custom_resource_survives_hostile_requests(fuzzer: Fuzzer, example: Example) -> None:
    fuzzer.run(example)


@BOUNDED
@given(number_examples(BUILTIN))
def test_built_in_kinds_read_any_number_anywhere(fuzzer: Fuzzer, example: Example) -> None:
    fuzzer.run(example)


@BOUNDED
@given(number_examples(("gadgets",)))
def test_a_custom_resource_reads_any_number_anywhere(fuzzer: Fuzzer, example: Example) -> None:
    fuzzer.run(example)
