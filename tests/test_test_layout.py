"""The tests mirror the source tree (docs/concepts.md): the tests of
`src/kubeforge/<_dirs>/<module>.py` are `tests/<dirs>/test_<module>.py` (or
`test_<module>_<aspect>.py`), as tools/test_layout.py reads the convention."""

from __future__ import annotations

from tests.support import ROOT, load_tool

LAYOUT = load_tool("test_layout")
SOURCE = ROOT / "src" / "kubeforge"


def test_every_test_file_is_where_the_convention_says() -> None:
    assert LAYOUT.misplaced() == []


def test_no_file_is_left_in_the_flat_layout() -> None:
    for name in ("unit", "integration"):
        assert not list((ROOT / "tests" / name).rglob("*.py"))


def test_a_test_directory_mirrors_the_package_with_its_underscores() -> None:
    tests = ROOT / "tests"
    assert LAYOUT.source_dir(tests / "apiserver" / "storage") == SOURCE / "_apiserver" / "storage"
    assert LAYOUT.source_dir(tests / "models") == SOURCE / "models"
    assert LAYOUT.source_dir(tests / "nothing") is None


def test_a_test_file_names_a_module_or_its_package_then_any_aspect() -> None:
    storage = LAYOUT.subjects(SOURCE / "_apiserver" / "storage")
    assert LAYOUT.names_a_subject("test_store", storage)
    assert LAYOUT.names_a_subject("test_store_watch", storage)
    assert LAYOUT.names_a_subject("test_storage", storage)  # the package as a whole
    assert not LAYOUT.names_a_subject("test_stores", storage)
    assert not LAYOUT.names_a_subject("test_workqueue", storage)
    controllers = LAYOUT.subjects(SOURCE / "_cluster" / "controllers")
    assert LAYOUT.names_a_subject("test_cronschedule", controllers)  # _cronschedule.py


def test_every_file_of_the_flat_layout_had_a_home_that_keeps_the_convention() -> None:
    for old, new in LAYOUT.MOVES.items():
        parts = new.split("/")
        if len(parts) == 1 or parts[0] in LAYOUT.UNMIRRORED:
            continue
        source = LAYOUT.source_dir(ROOT / "tests" / "/".join(parts[:-1]))
        assert source is not None, old
        assert LAYOUT.names_a_subject(parts[-1].removesuffix(".py"), LAYOUT.subjects(source)), old
