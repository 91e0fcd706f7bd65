"""Utilities that read and write the in-memory file system as a tree: `tar` (what `kubectl cp`
runs: `tar cf - <path>` to copy out, `tar -xmf - -C <dir>` to copy in, as GNU tar does them)
and `ls`. Paths are absolute in the file system; a relative one is relative to `/`.
"""

from __future__ import annotations

import io
import posixpath
import tarfile

from kubeforge.cluster.shell.utilities import ShellContext, Utility, is_directory

__all__ = ["FILE_UTILITIES", "MAX_ARCHIVE_BYTES"]

# The most an archive unpacked into a simulated container may hold.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024


def _absolute(path: str, base: str = "/") -> str:
    return posixpath.normpath(posixpath.join(base or "/", path))


def _below(files: dict[str, bytes], directory: str) -> list[str]:
    prefix = directory.rstrip("/") + "/"
    return sorted(name for name in files if name.startswith(prefix))


def _tar_options(args: list[str]) -> tuple[str, str, str, list[str]]:
    """(mode c/x/t, archive, directory, operands) from tar's old, short and long options."""
    tokens = list(args)
    if tokens and not tokens[0].startswith("-"):
        tokens[0] = "-" + tokens[0]  # the old style: `tar cf - path`
    mode, archive, directory = "", "", ""
    operands: list[str] = []
    while tokens:
        token = tokens.pop(0)
        if token == "--":
            operands += tokens
            break
        if token.startswith("--"):
            name, _, value = token[2:].partition("=")
            if name in ("create", "extract", "list"):
                mode = name[0] if name != "list" else "t"
            elif name in ("file", "directory"):
                value = value or (tokens.pop(0) if tokens else "")
                archive, directory = (value, directory) if name == "file" else (archive, value)
            continue  # --no-same-owner, --no-same-permissions, ...: nothing to keep here
        if token.startswith("-") and len(token) > 1:
            letters = token[1:]
            for index, letter in enumerate(letters):
                rest = letters[index + 1 :]
                if letter in "cxt":
                    mode = letter
                elif letter in "fC":
                    value = rest or (tokens.pop(0) if tokens else "")
                    if letter == "f":
                        archive = value
                    else:
                        directory = value
                    break
            continue
        operands.append(token)
    return mode, archive, directory, operands


async def _tar(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    mode, archive, directory, operands = _tar_options(argv[1:])
    if not mode:
        sh.complain(
            "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n"
        )
        return 2
    if mode == "c":
        return _create(sh, archive, directory, operands)
    data = stdin if archive in ("", "-") else sh.files.get(_absolute(archive))
    if data is None:
        sh.complain(f"tar: {archive}: Cannot open: No such file or directory\n")
        return 2
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as bundle:
            if mode == "t":
                sh.write("".join(f"{member.name}\n" for member in bundle))
                return 0
            return _extract(sh, bundle, directory)
    except (tarfile.TarError, EOFError, OSError):
        sh.complain("tar: This does not look like a tar archive\n")
        return 2


def _create(sh: ShellContext, archive: str, directory: str, operands: list[str]) -> int:
    buffer = io.BytesIO()
    status = 0
    stripped = False
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as bundle:
        for operand in operands:
            path = _absolute(operand, directory or "/")
            member = posixpath.normpath(operand).lstrip("/")
            stripped = stripped or operand.startswith("/")
            if path in sh.files:
                _add(bundle, member, sh.files[path])
            elif is_directory(sh.files, path):
                _add_directory(bundle, member or ".")
                for name in _below(sh.files, path):
                    _add(
                        bundle,
                        posixpath.join(member, name[len(path) :].lstrip("/")),
                        sh.files[name],
                    )
            else:
                sh.complain(f"tar: {operand}: Cannot stat: No such file or directory\n")
                status = 2
    if stripped:
        sh.complain("tar: Removing leading `/' from member names\n")
    if status:
        sh.complain("tar: Exiting with failure status due to previous errors\n")
    if archive in ("", "-"):
        sh.out(buffer.getvalue())
    else:
        sh.files[_absolute(archive, directory or "/")] = buffer.getvalue()
    return status


def _add(bundle: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    info.mode = 0o644
    bundle.addfile(info, io.BytesIO(content))


def _add_directory(bundle: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name.rstrip("/") + "/")
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    bundle.addfile(info)


def _extract(sh: ShellContext, bundle: tarfile.TarFile, directory: str) -> int:
    base = _absolute(directory or "/")
    total = 0
    for member in bundle:
        parts = member.name.split("/")
        if ".." in parts:
            sh.complain(f"tar: {member.name}: Member name contains '..'\n")
            continue
        if not member.isfile():
            continue  # directories are implied by their files; links are not kept
        total += member.size
        if total > MAX_ARCHIVE_BYTES:
            sh.complain("tar: the archive is larger than a simulated container holds\n")
            return 2
        source = bundle.extractfile(member)
        content = source.read() if source is not None else b""
        sh.files[_absolute(member.name.lstrip("/"), base)] = content
    return 0


async def _ls(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    operands = [a for a in argv[1:] if not a.startswith("-")] or ["/"]
    status = 0
    listings: list[str] = []
    for operand in operands:
        path = _absolute(operand)
        if path in sh.files:
            listings.append(f"{operand}\n")
        elif is_directory(sh.files, path):
            prefix = path.rstrip("/") + "/"
            names = sorted({name[len(prefix) :].split("/")[0] for name in _below(sh.files, path)})
            body = "".join(f"{name}\n" for name in names)
            listings.append(f"{operand}:\n{body}" if len(operands) > 1 else body)
        else:
            sh.complain(f"ls: {operand}: No such file or directory\n")
            status = 1
    sh.write("\n".join(listings) if len(operands) > 1 else "".join(listings))
    return status


FILE_UTILITIES: dict[str, Utility] = {"tar": _tar, "ls": _ls}
