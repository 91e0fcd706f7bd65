"""At's versions convert into each other without losing anything: v1alpha1's command line
becomes v1's argument list as a shell would split it, and comes back spelled as it was."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import kubeforge
import yaml
from hypothesis import given, settings, strategies as st
from kubeforge import conversion
from kubeforge.testing import assert_round_trips, objects

from api import v1, v1alpha1
from api.v1alpha1.at import NOT_BLANK
from api.v1alpha1.command import COMMAND_ANNOTATION

SCHEDULE = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)

schedules = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0))
phases = st.none() | st.sampled_from(["PENDING", "RUNNING", "DONE"])

# Command lines: any text that is not blank, and text made of the pieces shells are picky
# about (quotes, escapes, runs of blanks, unclosed quotes), which plain text rarely hits.
SHELL_PIECES = ["echo", "a b", " ", "  ", "\t", "\n", "'", '"', "\\", "''", '""', "#", "$x", "é"]
command_lines = (
    st.text(min_size=1) | st.lists(st.sampled_from(SHELL_PIECES), min_size=1).map("".join)
).filter(lambda line: re.search(NOT_BLANK, line) is not None)

v1alpha1_ats = objects(
    v1alpha1.At,
    spec=st.builds(v1alpha1.AtSpec, schedule=schedules, command=command_lines),
    status=st.none() | st.builds(v1alpha1.AtStatus, phase=phases),
)
v1_ats = objects(
    v1.At,
    spec=st.builds(v1.AtSpec, schedule=schedules, command=st.lists(st.text(), min_size=1)),
    status=st.none() | st.builds(v1.AtStatus, phase=phases),
)


# Timing is not what these test (the first validation compiles the schema, and the suite may
# share the machine): no per-example deadline.
@settings(deadline=None)
@given(v1alpha1_ats)
def test_every_v1alpha1_at_comes_back_from_v1_as_it_was(at: v1alpha1.At) -> None:
    assert_round_trips(at)
    # What it becomes is a valid v1 At, with the arguments a shell would run.
    hub = conversion.convert(at, v1.At)
    assert hub.validate() == []


@settings(deadline=None)
@given(v1_ats)
def test_every_v1_at_comes_back_from_v1alpha1_as_it_was(at: v1.At) -> None:
    assert_round_trips(at)
    assert conversion.convert(at, v1alpha1.At).validate() == []


@settings(deadline=None)
@given(v1alpha1_ats.map(lambda at: conversion.convert(at, v1.At)))
def test_a_v1_at_written_as_v1alpha1_keeps_its_command_line(at: v1.At) -> None:
    assert_round_trips(at)


def at_v1alpha1(command: str) -> v1alpha1.At:
    return v1alpha1.At(
        metadata=kubeforge.ObjectMeta(name="hello", namespace="default", uid="u1"),
        spec=v1alpha1.AtSpec(schedule=SCHEDULE, command=command),
    )


def test_a_command_line_is_split_as_a_shell_splits_it() -> None:
    line = "sh -c \"echo 'one';  echo two\""
    hub = conversion.convert(at_v1alpha1(line), v1.At)
    assert hub.spec.command == ["sh", "-c", "echo 'one';  echo two"]
    assert hub.metadata.name == "hello" and hub.metadata.uid == "u1"
    # Joining the arguments spells the line differently: the line is kept, as written.
    assert hub.metadata.annotations == {COMMAND_ANNOTATION: json.dumps(line)}
    assert conversion.convert(hub, v1alpha1.At).spec.command == line


def test_a_line_joining_gives_back_needs_no_annotation() -> None:
    hub = conversion.convert(at_v1alpha1("echo 'hello world'"), v1.At)
    assert hub.spec.command == ["echo", "hello world"]
    assert hub.metadata.annotations is None


def test_an_unclosed_quote_is_left_to_the_shell() -> None:
    hub = conversion.convert(at_v1alpha1("echo 'oops"), v1.At)
    assert hub.spec.command == ["sh", "-c", "echo 'oops"]
    assert conversion.convert(hub, v1alpha1.At).spec.command == "echo 'oops"


def test_arguments_are_quoted_as_a_shell_needs_them() -> None:
    hub = v1.At(
        metadata=kubeforge.ObjectMeta(name="hello", namespace="default"),
        spec=v1.AtSpec(schedule=SCHEDULE, command=["printf", "%s\n", "it's", ""]),
    )
    at = conversion.convert(hub, v1alpha1.At)
    assert at.spec.command == """printf '%s\n' 'it'"'"'s' ''"""
    assert at.api_version == "cnat.kubeforge.dev/v1alpha1"


def test_a_line_that_no_longer_matches_the_arguments_is_not_used() -> None:
    # The arguments changed in v1 after the object was written as v1alpha1: the kept line
    # would run something else, so the arguments are joined instead.
    hub = conversion.convert(at_v1alpha1("echo   old"), v1.At)
    hub.spec.command = ["echo", "new"]
    at = conversion.convert(hub, v1alpha1.At)
    assert at.spec.command == "echo new"
    assert at.metadata.annotations is None


def test_the_samples_are_valid_ats_of_their_versions() -> None:
    samples = Path(__file__).resolve().parents[1] / "config" / "samples"
    for name, cls in (("cnat_v1alpha1_at.yaml", v1alpha1.At), ("cnat_v1_at.yaml", v1.At)):
        sample = yaml.safe_load((samples / name).read_text())
        assert cls.validate_data(sample) == [], name
        assert_round_trips(cls.from_dict(sample))
