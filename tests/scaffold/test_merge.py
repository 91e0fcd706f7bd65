"""The three-way merge of a scaffold's change into a project, file by file, with git's
merge-file: each case of base (the old scaffold), theirs (the new) and ours (the project)."""

from __future__ import annotations

from kubeforge._scaffold.merge import MergedFile, merge_trees

LABELS = ("yours", "kubeforge 0.1.0", "kubeforge 0.2.0")
OLD = b"one\ntwo\nthree\nfour\nfive\n"


def merged(
    base: dict[str, bytes], theirs: dict[str, bytes], ours: dict[str, bytes]
) -> dict[str, MergedFile]:
    return {change.path: change for change in merge_trees(base, theirs, ours, LABELS)}


def test_what_only_one_side_changed_is_that_sides() -> None:
    new = OLD.replace(b"two", b"TWO")
    changes = merged(
        base={"scaffold": OLD, "yours": OLD, "same": OLD, "gone": OLD},
        theirs={"scaffold": new, "yours": OLD, "same": new, "added": b"new\n"},
        ours={"scaffold": OLD, "yours": b"mine\n", "same": new, "gone": OLD, "own": b"x\n"},
    )
    assert changes == {
        "scaffold": MergedFile("scaffold", "updated", new),
        "added": MergedFile("added", "added", b"new\n"),
        "gone": MergedFile("gone", "removed", None),
    }


def test_changes_to_different_lines_are_both_kept() -> None:
    theirs = OLD.replace(b"one", b"ONE")
    ours = OLD.replace(b"five", b"FIVE")
    change = merged({"f": OLD}, {"f": theirs}, {"f": ours})["f"]
    assert change == MergedFile("f", "merged", b"ONE\ntwo\nthree\nfour\nFIVE\n")


def test_changes_to_the_same_lines_are_a_marked_conflict() -> None:
    theirs = OLD.replace(b"three", b"THREE")
    ours = OLD.replace(b"three", b"3")
    change = merged({"f": OLD}, {"f": theirs}, {"f": ours})["f"]
    assert change.outcome == "conflict"
    assert change.note == "1 conflicting change(s) marked"
    assert change.content == (
        b"one\ntwo\n<<<<<<< yours\n3\n=======\nTHREE\n>>>>>>> kubeforge 0.2.0\nfour\nfive\n"
    )


def test_a_file_both_added_is_merged_from_nothing() -> None:
    change = merged({}, {"f": b"a\nb\n"}, {"f": b"a\nc\n"})["f"]
    assert change.outcome == "conflict"
    assert change.content is not None and b"<<<<<<< yours\n" in change.content


def test_removing_what_the_other_side_changed_is_a_conflict() -> None:
    changes = merged(
        base={"theirs-removed": OLD, "ours-removed": OLD},
        theirs={"ours-removed": b"changed\n"},
        ours={"theirs-removed": b"changed\n"},
    )
    assert changes["theirs-removed"] == MergedFile(
        "theirs-removed",
        "conflict",
        b"changed\n",
        "the new scaffold removes it; you changed it",
    )
    assert changes["ours-removed"] == MergedFile(
        "ours-removed", "conflict", None, "you removed it; the new scaffold changes it"
    )


def test_binary_files_changed_on_both_sides_stay_the_projects() -> None:
    change = merged({"b": b"\0old"}, {"b": b"\0new"}, {"b": b"\0mine"})["b"]
    assert change == MergedFile("b", "conflict", b"\0mine", "binary: yours is kept")
