"""The report: a finding's replay command carries the exploring run's options but not its
own, and the summary table lines up."""

from __future__ import annotations

from kubeforge._testing.explore.report import Row, replay_command, summary_table


def test_the_replay_command_keeps_the_run_s_options() -> None:
    args = [
        "tests/",
        "-o",
        "kubeforge_setup=case.buggy:setup",
        "--kubeforge-explore",
        "--kubeforge-explore-jobs",
        "2",
        "--kubeforge-explore-budget=10",
        "-k",
        "widget",
        "-p",
        "no:randomly",
        "-x",
    ]
    command = replay_command(args, "tests/test_w.py::test_w", "crash@w:create:Pod/w-*#1", None)
    assert command == (
        "pytest tests/test_w.py::test_w -o kubeforge_setup=case.buggy:setup -p no:randomly "
        "'--kubeforge-perturb=crash@w:create:Pod/w-*#1'"
    )


def test_the_replay_command_says_where_to_run_it() -> None:
    command = replay_command([], "t.py::t", "revert@Widget/w", "examples/cnat")
    assert command == "cd examples/cnat && pytest t.py::t --kubeforge-perturb=revert@Widget/w"


def test_the_summary_table() -> None:
    table = summary_table([Row("a.py::t", 12, 10, 1, 31.4), Row("b.py::long_name", 2, 0, 0, 3.0)])
    assert table.splitlines() == [
        "test             runs  perturbed  findings  seconds",
        "a.py::t          12    10         1         31",
        "b.py::long_name  2     0          0         3",
    ]
