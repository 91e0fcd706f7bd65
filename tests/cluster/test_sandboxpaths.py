"""Nothing a pod's volumes or mounts name is ever written outside its sandbox: paths that
climb out are refused before anything is written, and links planted on the way (by a
container's process, say) are refused rather than followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubeforge._cluster.containers import PodSandbox
from kubeforge._cluster.sandboxpaths import UnsafePath, relative_parts, write_within


@pytest.fixture
def sandbox(tmp_path: Path) -> PodSandbox:
    return PodSandbox(str(tmp_path / "pod-"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    return directory


def written(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../escape", "must not contain '..'"),
        ("a/../../escape", "must not contain '..'"),
        ("/etc/passwd", "must be relative path"),
        ("..data", "must not start with '..'"),
        ("", "must not be empty"),
        ("a\0b", "must not be empty"),
        (".", "must name a file"),
    ],
)
def test_a_path_that_leaves_its_volume_is_refused(
    sandbox: PodSandbox, outside: Path, path: str, why: str
) -> None:
    with pytest.raises(UnsafePath, match=why):
        relative_parts(path)
    with pytest.raises(UnsafePath):
        sandbox.write_volumes({"config": {"fine": b"ok", path: b"no"}})
    # Every path is checked first: nothing at all is written.
    assert written(sandbox.volumes) == []
    assert written(outside) == []
    assert sorted(os.listdir(sandbox.root.parent)) == sorted([sandbox.root.name, "outside"])


def test_a_link_planted_in_a_volume_is_not_followed(sandbox: PodSandbox, outside: Path) -> None:
    sandbox.write_volumes({"tokens": {"sub/token": b"t1"}})
    # A container's process swaps the item's directory for a link out of the sandbox.
    sub = sandbox.volumes / "tokens" / "sub"
    (sub / "token").unlink()
    sub.rmdir()
    sub.symlink_to(outside)
    with pytest.raises(UnsafePath):
        sandbox.write_volumes({"tokens": {"sub/token": b"t2"}})
    assert written(outside) == []
    # A link in place of the file itself is replaced, not written through.
    target = outside / "victim"
    target.write_bytes(b"mine")
    top = sandbox.volumes / "tokens" / "token"
    top.symlink_to(target)
    sandbox.write_volumes({"tokens": {"token": b"t3"}})
    assert target.read_bytes() == b"mine"
    assert not top.is_symlink() and top.read_bytes() == b"t3"


def test_the_writer_refuses_a_link_as_its_base_directory_below(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (base / "dir").symlink_to(elsewhere)
    with pytest.raises(UnsafePath):
        write_within(base, "dir/file", b"x")
    assert list(elsewhere.iterdir()) == []
    write_within(base, "./a//b/file", b"x")
    assert (base / "a" / "b" / "file").read_bytes() == b"x"


def test_a_sub_path_may_not_leave_its_volume(sandbox: PodSandbox, outside: Path) -> None:
    sandbox.write_volumes({"data": {"inside/file": b"ok"}})
    (sandbox.volumes / "data" / "out").symlink_to(outside)
    (sandbox.volumes / "data" / "up").symlink_to("..")
    for sub in ("out", "up", "out/x", "../config", "/etc"):
        with pytest.raises(UnsafePath, match="failed to prepare subPath"):
            sandbox.container_root("c", [{"name": "data", "mountPath": "/d", "subPath": sub}])
    assert written(outside) == []
    # A link that stays within the volume is followed, as the kubelet follows it.
    (sandbox.volumes / "data" / "alias").symlink_to("inside")
    _, paths = sandbox.container_root(
        "c",
        [
            {"name": "data", "mountPath": "/f", "subPath": "alias/file"},
            {"name": "data", "mountPath": "/new", "subPath": "made/here"},
        ],
    )
    assert paths["/f"].read_bytes() == b"ok"
    assert (sandbox.volumes / "data" / "made" / "here").is_dir()


def test_mounts_never_place_anything_outside_the_sandbox(
    sandbox: PodSandbox, outside: Path
) -> None:
    sandbox.write_volumes({"data": {"f": b"ok"}, "other": {"g": b"ok"}})
    with pytest.raises(UnsafePath):
        sandbox.container_root("c", [{"name": "data", "mountPath": "/../../../../escape"}])
    # A mount inside another mount's volume is fine; one through a link out of it is not.
    root, paths = sandbox.container_root(
        "c",
        [
            {"name": "data", "mountPath": "/d"},
            {"name": "other", "mountPath": "/d/nested"},
        ],
    )
    assert (paths["/d/nested"] / "g").read_bytes() == b"ok"
    (sandbox.volumes / "data" / "away").symlink_to(outside)
    with pytest.raises(UnsafePath):
        sandbox.container_root(
            "c", [{"name": "data", "mountPath": "/d"}, {"name": "other", "mountPath": "/d/away/x"}]
        )
    assert written(outside) == []
    # A container's earlier tree is cleared without following a link planted in it.
    keep = outside / "keep"
    keep.write_bytes(b"mine")
    (root / "d" / "planted").symlink_to(outside)
    sandbox.container_root("c", [])
    assert keep.read_bytes() == b"mine"
    assert os.listdir(outside) == ["keep"]
