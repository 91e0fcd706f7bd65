"""The utilities a simulated shell has built in: echo, printf, sleep, exit, test, date, env,
cat, grep, head, tail, wc, seq, expr, read, ... with the behaviour of their busybox and
coreutils namesakes for the options container commands use. Files are the shell's in-memory
ones; chores that would touch the machine (cd, chmod, mkdir, kill ...) succeed doing nothing.
"""

from __future__ import annotations

import ast
import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from kubeforge import clock
from kubeforge._cluster.shell.arithmetic import evaluate
from kubeforge._cluster.shell.control import TO_LOG, Exit, LoopControl, Output, program_name
from kubeforge._cluster.shell.syntax import ASSIGNMENT

__all__ = ["UTILITIES", "ShellContext", "Utility", "is_directory"]


class ShellContext(Protocol):
    """What a utility may use of the shell running it (interpreter.py's Shell): its
    variables, positional parameters, files, output and options, and running a command."""

    vars: dict[str, str]
    positional: list[str]
    files: dict[str, bytes]
    out: Output
    status: int
    errexit: bool
    sleep_seconds: float | None
    # Since when loops have run without a sleep (None: a sleep since), to pace busy loops.
    busy_since: float | None
    background: list[asyncio.Task[int]]

    async def call(self, argv: list[str], stdin: bytes, scoped: Mapping[str, str]) -> int: ...
    def write(self, text: str) -> None: ...
    def complain(self, text: str) -> None: ...


Utility = Callable[[ShellContext, list[str], bytes], Awaitable[int]]
# Directories every container has, whether or not a file is known in them.
_STANDARD_DIRECTORIES = frozenset(("/", "/tmp", ".", "/etc", "/var", "/usr", "/bin", "/home"))


def is_directory(files: Mapping[str, bytes], path: str) -> bool:
    """Whether `path` is a directory of the in-memory file system: a standard one, or one
    that holds a file."""
    if path in _STANDARD_DIRECTORIES:
        return True
    prefix = path.rstrip("/") + "/"
    return path not in files and any(name.startswith(prefix) for name in files)


_OCTAL = re.compile(r"0[0-7]{0,3}|[1-7][0-7]{0,2}")


def _escapes(text: str) -> tuple[str, bool]:
    """Backslash escapes of `echo -e` and printf; True when `\\c` stops the output."""
    out: list[str] = []
    i = 0
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "e": "\x1b"}
    table.update({"f": "\f", "v": "\v", '"': '"', "'": "'"})
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "c":
                return "".join(out), True
            if nxt in table:
                out.append(table[nxt])
                i += 2
                continue
            octal = _OCTAL.match(text, i + 1)
            if octal is not None:
                out.append(chr(int(octal.group(0), 8) & 0xFF))
                i += 1 + len(octal.group(0))
                continue
        out.append(ch)
        i += 1
    return "".join(out), False


async def _echo(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flags = args.pop(0)[1:]
        newline = newline and "n" not in flags
        for flag in flags:
            if flag in "eE":
                escapes = flag == "e"
    text = " ".join(args)
    if escapes:
        text, stop = _escapes(text)
        newline = newline and not stop
    sh.write(text + ("\n" if newline else ""))
    return 0


def _printf_format(fmt: str, args: list[str]) -> str:
    out: list[str] = []
    pending = list(args)
    spec = re.compile(r"%([-+ #0]*)(\d*|\*)(?:\.(\d*))?([sdiouxXfeEgGcb%])")
    while True:
        consumed = False
        pos = 0
        for match in spec.finditer(fmt):
            text, _ = _escapes(fmt[pos : match.start()])
            out.append(text)
            pos = match.end()
            flags, width, precision, conv = match.groups()
            if conv == "%":
                out.append("%")
                continue
            consumed = True
            arg = pending.pop(0) if pending else ""
            pyspec = f"%{flags}{width if width != '*' else ''}"
            if precision is not None:
                pyspec += f".{precision}"
            if conv == "c":
                out.append(arg[:1])
            elif conv in "diouxX":
                try:
                    number = int(arg or "0", 0)
                except ValueError:
                    number = 0
                out.append((pyspec + {"i": "d", "u": "d"}.get(conv, conv)) % number)
            elif conv in "feEgG":
                try:
                    real = float(arg or "0")
                except ValueError:
                    real = 0.0
                out.append((pyspec + conv) % real)
            elif conv == "b":
                out.append(_escapes(arg)[0])
            else:
                out.append((pyspec + "s") % arg)
        text, _ = _escapes(fmt[pos:])
        out.append(text)
        if not pending or not consumed:
            return "".join(out)


async def _printf(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    if len(argv) < 2:
        sh.write("printf: usage: printf format [arguments]\n")
        return 2
    sh.write(_printf_format(argv[1], argv[2:]))
    return 0


def _duration(text: str) -> float | None:
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", text)
    if match is None:
        return None
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * unit


async def _forever() -> int:
    await asyncio.Event().wait()
    return 0


async def _sleep(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    if any(a in ("infinity", "inf") for a in argv[1:]):
        return await _forever()
    total = 0.0
    for arg in argv[1:]:
        seconds = _duration(arg)
        if seconds is None:
            sh.write(f"sleep: invalid number '{arg}'\n")
            return 1
        total += seconds
    if len(argv) < 2:
        sh.write("sleep: missing operand\n")
        return 1
    if sh.sleep_seconds is not None:
        total = sh.sleep_seconds
    sh.busy_since = None
    await clock.sleep(total)
    return 0


async def _exit(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    code = sh.status
    if len(argv) > 1:
        try:
            code = int(argv[1]) & 0xFF
        except ValueError:
            sh.write(f"sh: exit: Illegal number: {argv[1]}\n")
            code = 2
    raise Exit(code)


async def _true(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    return 0


async def _false(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    return 1


async def _date(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    fmt = "%a %b %e %H:%M:%S UTC %Y"
    for arg in argv[1:]:
        if arg.startswith("+"):
            fmt = arg[1:]
        elif arg in ("-I", "--iso-8601"):
            fmt = "%Y-%m-%d"
        elif arg == "-R":
            fmt = "%a, %d %b %Y %H:%M:%S +0000"
    now = clock.time()
    text = time.strftime(fmt.replace("%N", "{nanos}").replace("%s", "{epoch}"), time.gmtime(now))
    text = text.replace("{nanos}", f"{int(now % 1 * 1e9):09d}").replace("{epoch}", str(int(now)))
    sh.write(text + "\n")
    return 0


async def _hostname(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    sh.write(sh.vars.get("HOSTNAME", "localhost") + "\n")
    return 0


async def _env(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    scoped: dict[str, str] = {}
    while args and ASSIGNMENT.match(args[0]):
        key, _, value = args.pop(0).partition("=")
        scoped[key] = value
    if args:
        saved = dict(sh.vars)
        sh.vars.update(scoped)
        try:
            return int(await sh.call(args, stdin, scoped))
        finally:
            sh.vars = saved
    for key, value in {**sh.vars, **scoped}.items():
        sh.write(f"{key}={value}\n")
    return 0


async def _printenv(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    if len(argv) == 1:
        return int(await _env(sh, argv[:1], stdin))
    status = 0
    for name in argv[1:]:
        if name in sh.vars:
            sh.write(sh.vars[name] + "\n")
        else:
            status = 1
    return status


async def _export(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    for arg in argv[1:]:
        if "=" in arg:
            key, _, value = arg.partition("=")
            sh.vars[key] = value
    return 0


async def _unset(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    for name in argv[1:]:
        sh.vars.pop(name, None)
    return 0


async def _set(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    while args:
        arg = args.pop(0)
        if arg[:1] not in ("-", "+") or arg in ("-", "--"):
            break
        on = arg[0] == "-"
        if "o" in arg[1:] and args:
            if args.pop(0) == "errexit":
                sh.errexit = on
        elif "e" in arg[1:]:
            sh.errexit = on
    return 0


async def _cat(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    names = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if not names:
        sh.out(stdin)
        return 0
    status = 0
    for name in names:
        if name == "-":
            sh.out(stdin)
        elif name in sh.files:
            sh.out(sh.files[name])
        else:
            sh.complain(f"cat: can't open '{name}': No such file or directory\n")
            status = 1
    return status


async def _tee(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    append = "-a" in argv[1:]
    for name in (a for a in argv[1:] if not a.startswith("-")):
        if name in TO_LOG:
            continue
        sh.files[name] = (sh.files.get(name, b"") if append else b"") + stdin
    sh.out(stdin)
    return 0


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _input(sh: ShellContext, names: list[str], stdin: bytes) -> bytes:
    return b"".join(sh.files.get(n, b"") for n in names) if names else stdin


async def _grep(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1)
    rest = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if not rest:
        sh.write("grep: missing pattern\n")
        return 2
    pattern, names = rest[0], rest[1:]
    if "F" in flags:
        pattern = re.escape(pattern)
    elif "E" not in flags:
        # Basic regular expressions: \( \) \| \+ are the operators, bare ones literal.
        pattern = re.sub(
            r"\\([()|+?{}])|([()|+?{}])", lambda m: m.group(1) or "\\" + m.group(2), pattern
        )
    try:
        regex = re.compile(pattern, re.IGNORECASE if "i" in flags else 0)
    except re.error:
        sh.write("grep: invalid regular expression\n")
        return 2
    found = [
        line
        for line in _lines(_input(sh, names, stdin))
        if bool(regex.search(line.decode(errors="replace"))) != ("v" in flags)
    ]
    if "q" not in flags:
        if "c" in flags:
            sh.write(f"{len(found)}\n")
        else:
            sh.out(b"".join(found))
    return 0 if found else 1


def _count_option(argv: list[str], default: int) -> tuple[int, list[str]]:
    count, names = default, []
    args = argv[1:]
    while args:
        arg = args.pop(0)
        if arg == "-n" and args:
            count = int(args.pop(0).lstrip("+-") or default)
        elif re.fullmatch(r"-n?\d+", arg):
            count = int(arg.lstrip("-n"))
        elif not arg.startswith("-"):
            names.append(arg)
    return count, names


async def _head(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    count, names = _count_option(argv, 10)
    sh.out(b"".join(_lines(_input(sh, names, stdin))[:count]))
    return 0


async def _tail(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    if any(a in ("-f", "-F", "--follow") for a in argv[1:]):
        return await _forever()
    count, names = _count_option(argv, 10)
    lines = _lines(_input(sh, names, stdin))
    sh.out(b"".join(lines[-count:] if count else []))
    return 0


async def _wc(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")]
    data = _input(sh, names, stdin)
    lines = data.count(b"\n")
    if "-l" in argv:
        sh.write(f"{lines}\n")
    elif "-c" in argv:
        sh.write(f"{len(data)}\n")
    elif "-w" in argv:
        sh.write(f"{len(data.split())}\n")
    else:
        sh.write(f"{lines} {len(data.split())} {len(data)}\n")
    return 0


async def _touch(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    for name in (a for a in argv[1:] if not a.startswith("-")):
        sh.files.setdefault(name, b"")
    return 0


async def _rm(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    for name in (a for a in argv[1:] if not a.startswith("-")):
        sh.files.pop(name, None)
    return 0


async def _seq(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    try:
        numbers = [int(a) for a in argv[1:]]
    except ValueError:
        sh.write("seq: invalid argument\n")
        return 1
    first, step, last = 1, 1, 0
    if len(numbers) == 1:
        last = numbers[0]
    elif len(numbers) == 2:
        first, last = numbers
    elif len(numbers) == 3:
        first, step, last = numbers
    else:
        sh.write("seq: missing operand\n")
        return 1
    if step:
        sh.write("".join(f"{n}\n" for n in range(first, last + (1 if step > 0 else -1), step)))
    return 0


async def _fixed_output(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    texts = {
        "whoami": "root",
        "id": "uid=0(root) gid=0(root) groups=0(root)",
        "pwd": "/",
        "uname": "Linux",
        "tty": "not a tty",
    }
    if program_name(argv[0]) == "uname" and "-a" in argv:
        sh.write(f"Linux {sh.vars.get('HOSTNAME', 'localhost')} 6.0.0 x86_64 GNU/Linux\n")
        return 0
    sh.write(texts[program_name(argv[0])] + "\n")
    return 0 if program_name(argv[0]) != "tty" else 1


async def _test(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    if program_name(argv[0]) == "[":
        if not args or args[-1] != "]":
            sh.write("[: missing ]\n")
            return 2
        args = args[:-1]
    try:
        return 0 if _test_expression(sh, args) else 1
    except ValueError as exc:
        sh.write(f"test: {exc}\n")
        return 2


def _test_expression(sh: ShellContext, args: list[str]) -> bool:
    if "-o" in args:
        i = args.index("-o")
        return _test_expression(sh, args[:i]) or _test_expression(sh, args[i + 1 :])
    if "-a" in args[1:]:
        i = args.index("-a", 1)
        return _test_expression(sh, args[:i]) and _test_expression(sh, args[i + 1 :])
    if args and args[0] == "!":
        return not _test_expression(sh, args[1:])
    if not args:
        return False
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        if op == "-n":
            return value != ""
        if op == "-z":
            return value == ""
        if op in ("-f", "-e", "-r", "-w"):
            return value in sh.files
        if op == "-s":
            return bool(sh.files.get(value))
        if op in ("-d",):
            return is_directory(sh.files, value)
        if op in ("-x", "-L", "-h", "-p", "-S", "-b", "-c", "-t"):
            return False
        raise ValueError(f"unknown operator {op}")
    left, op, right = args[0], args[1], " ".join(args[2:])
    if op in ("=", "=="):
        return left == right
    if op == "!=":
        return left != right
    compare = _NUMERIC_TESTS.get(op)
    if compare is not None:
        try:
            return compare(int(left), int(right))
        except ValueError:
            raise ValueError("integer expression expected") from None
    raise ValueError(f"unknown operator {op}")


_NUMERIC_TESTS: dict[str, Callable[[int, int], bool]] = {
    "-eq": lambda a, b: a == b,
    "-ne": lambda a, b: a != b,
    "-lt": lambda a, b: a < b,
    "-le": lambda a, b: a <= b,
    "-gt": lambda a, b: a > b,
    "-ge": lambda a, b: a >= b,
}


async def _loop_control(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    levels = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    raise LoopControl(program_name(argv[0]), max(levels, 1))


async def _exec(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    if len(argv) == 1:
        return 0
    raise Exit(await sh.call(argv[1:], stdin, {}))


async def _wait(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    tasks, sh.background = sh.background, []
    status = 0
    for task in tasks:
        status = await task
    return status


async def _read(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")] or ["REPLY"]
    if not stdin:
        return 1
    line = stdin.decode(errors="replace").split("\n", 1)[0]
    values = line.split(None, len(names) - 1)
    for i, name in enumerate(names):
        sh.vars[name] = values[i] if i < len(values) else ""
    return 0


async def _shift(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    count = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    if count > len(sh.positional) - 1:
        return 1
    sh.positional = sh.positional[:1] + sh.positional[1 + count :]
    return 0


async def _expr(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    text = " ".join(argv[1:]).replace("\\*", "*")
    try:
        value = evaluate(ast.parse(text.replace("/", "//"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        sh.write("expr: syntax error\n")
        return 2
    sh.write(f"{value}\n")
    return 0 if value else 1


async def _nothing(sh: ShellContext, argv: list[str], stdin: bytes) -> int:
    return 0


UTILITIES: dict[str, Utility] = {
    "echo": _echo,
    "printf": _printf,
    "sleep": _sleep,
    "exit": _exit,
    "true": _true,
    ":": _true,
    "false": _false,
    "date": _date,
    "hostname": _hostname,
    "env": _env,
    "printenv": _printenv,
    "export": _export,
    "readonly": _export,
    "local": _export,
    "unset": _unset,
    "set": _set,
    "cat": _cat,
    "tee": _tee,
    "touch": _touch,
    "rm": _rm,
    "seq": _seq,
    "grep": _grep,
    "head": _head,
    "tail": _tail,
    "wc": _wc,
    "whoami": _fixed_output,
    "id": _fixed_output,
    "pwd": _fixed_output,
    "uname": _fixed_output,
    "tty": _fixed_output,
    "test": _test,
    "[": _test,
    "break": _loop_control,
    "continue": _loop_control,
    "exec": _exec,
    "wait": _wait,
    "read": _read,
    "shift": _shift,
    "expr": _expr,
    # File system and process chores succeed without doing anything.
    **dict.fromkeys(
        [
            "cd",
            "trap",
            "ulimit",
            "umask",
            "mkdir",
            "chmod",
            "chown",
            "ln",
            "cp",
            "mv",
            "kill",
            "sync",
        ],
        _nothing,
    ),
}
