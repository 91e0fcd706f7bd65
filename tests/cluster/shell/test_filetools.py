"""The simulated container's file system as exec and `kubectl cp` use it: its volumes' files
at their mount paths, `tar` as GNU tar names members, `ls`, `test -d`."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence

from kubeforge._cluster.mountview import mounted_files
from kubeforge._cluster.shell import Output, run_command


async def missing(argv: Sequence[str], out: Output) -> int:
    out(f"sh: {argv[0]}: not found\n".encode())
    return 127


async def run(
    argv: list[str], files: dict[str, bytes], stdin: bytes = b""
) -> tuple[int, bytes, bytes]:
    out: list[bytes] = []
    err: list[bytes] = []
    code = await run_command(
        argv, {}, out.append, missing, files=files, stdin=stdin, errors=err.append
    )
    return code, b"".join(out), b"".join(err)


def test_volumes_are_seen_at_their_mount_paths() -> None:
    volumes = {"config": {"app.yaml": b"a: 1", "nested/b": b"b"}, "token": {"token": b"t"}}
    mounts = [
        {"name": "config", "mountPath": "/etc/config/"},
        {"name": "token", "mountPath": "/var/run/token"},
        {"name": "config", "mountPath": "/opt/app.yaml", "subPath": "app.yaml"},
        {"name": "config", "mountPath": "/srv", "subPath": "nested"},
    ]
    assert mounted_files(volumes, mounts) == {
        "/etc/config/app.yaml": b"a: 1",
        "/etc/config/nested/b": b"b",
        "/var/run/token/token": b"t",
        "/opt/app.yaml": b"a: 1",
        "/srv/b": b"b",
    }


async def test_tar_copies_out_as_gnu_tar_names_members() -> None:
    files = {"/etc/config/key": b"value", "/etc/config/sub/other": b"x"}
    code, out, err = await run(["tar", "cf", "-", "/etc/config"], files)
    assert code == 0
    assert err == b"tar: Removing leading `/' from member names\n"
    with tarfile.open(fileobj=io.BytesIO(out)) as bundle:
        names = bundle.getnames()
        key = bundle.extractfile("etc/config/key")
        assert key is not None and key.read() == b"value"
    assert names == ["etc/config", "etc/config/key", "etc/config/sub/other"]
    code, out, err = await run(["tar", "cf", "-", "/nothing"], files)
    assert code == 2
    assert b"tar: /nothing: Cannot stat: No such file or directory" in err


async def test_tar_copies_in_below_its_directory() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as bundle:
        for name, content in (("notes.txt", b"hi"), ("../escape", b"no"), ("d/e.txt", b"e")):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            bundle.addfile(info, io.BytesIO(content))
    files: dict[str, bytes] = {}
    code, _, err = await run(["tar", "-xmf", "-", "-C", "/tmp"], files, buffer.getvalue())
    assert code == 0
    assert files == {"/tmp/notes.txt": b"hi", "/tmp/d/e.txt": b"e"}
    assert b"contains '..'" in err
    code, _, err = await run(["tar", "xf", "-"], {}, b"not a tar archive")
    assert code == 2
    assert err == b"tar: This does not look like a tar archive\n"


async def test_ls_and_test_see_directories_that_hold_files() -> None:
    files = {"/data/a": b"", "/data/sub/b": b""}
    assert await run(["ls", "/data"], files) == (0, b"a\nsub\n", b"")
    assert await run(["ls", "/data/a"], files) == (0, b"/data/a\n", b"")
    assert (await run(["ls", "/nope"], files))[2] == b"ls: /nope: No such file or directory\n"
    assert (await run(["test", "-d", "/data/sub"], files))[0] == 0
    assert (await run(["test", "-d", "/data/a"], files))[0] == 1
