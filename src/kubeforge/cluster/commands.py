"""What a container does: its command simulated (the default) or run on this machine.

A simulated container never executes anything. `echo` prints, `sleep` waits, `exit 3` fails,
and `sh -c` / `bash -c` scripts go through a small shell interpreter that knows the forms
container commands use most: `;`, `&&`, `||`, pipes, `if`, `while`, `for`, variables,
`$(...)`, `$((...))`, redirections and the everyday utilities (echo, printf, sleep, date,
test, cat, env ...). Other programs are either well-known servers (nginx, redis-server,
`sleep infinity` ...) that keep running, or run for the configured time and exit 0. A
container without a command runs its image's default entrypoint: a server.

With local execution (opt-in, `ClusterOptions.exec_pods`) the command really runs as a
process of this machine, without any image or isolation; its output becomes the log.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import fnmatch
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ContainerProcess",
    "StartError",
    "Timing",
    "container_argv",
    "expand_references",
    "is_server",
    "simulate",
]

Output = Callable[[bytes], None]


# Images whose entrypoint is a shell (or none): arguments without a command are the command.
def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SHELL_IMAGES = _names(
    "busybox alpine ubuntu debian bash centos fedora rockylinux almalinux amazonlinux python "
    "node golang ruby perl bitnami/kubectl curlimages/curl"
)
SHELLS = frozenset(("sh", "bash", "ash", "dash", "zsh", "ksh"))
# Programs that serve until stopped.
SERVERS = _names(
    "nginx httpd apache2-foreground redis-server postgres mysqld mariadbd mongod memcached etcd "
    "caddy traefik envoy haproxy pause php-fpm gunicorn uvicorn hypercorn agnhost"
)
# Arguments with which a server program only reports something and exits.
_SERVER_QUERIES = frozenset({"-v", "-V", "-t", "-T", "-h", "--help", "--version"})
# Loops yield to the event loop every round; one that has not slept for this long is
# slowed down, so an endless busy loop cannot eat the cluster's CPU.
_BUSY_SECONDS = 0.5
_BUSY_PAUSE = 0.01


@dataclass(frozen=True)
class Timing:
    """How long simulated work takes: `run_seconds` for programs that are not simulated
    in detail, `sleep_seconds` (when set) in place of every finite `sleep` argument."""

    run_seconds: float = 0.1
    sleep_seconds: float | None = None


class StartError(Exception):
    """The container's command could not be started (the runtime's StartError)."""


# -- the command line ------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


def expand_references(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of command, args and env values: defined variables are
    replaced, undefined references stay as written and `$$` escapes a `$`."""
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        value = env.get(name)
        return match.group(0) if value is None else value

    return _REFERENCE.sub(replace, text)


def _image_name(image: str) -> str:
    """`docker.io/library/busybox:1.36@sha256:..` -> `busybox`; keeps `owner/name`."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if parts and parts[0] == "library":
        parts = parts[1:]
    return "/".join(parts)


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str] | None:
    """The command line a container runs, or None for its image's default entrypoint."""
    command = [str(c) for c in container.get("command") or ()]
    args = [str(a) for a in container.get("args") or ()]
    if not command:
        image = _image_name(str(container.get("image") or ""))
        if not args or (image not in SHELL_IMAGES and image.split("/")[-1] not in SHELL_IMAGES):
            return None
    return [expand_references(part, env) for part in command + args]


def _program(argv0: str) -> str:
    return argv0.rsplit("/", 1)[-1]


def _shell_script(argv: Sequence[str]) -> tuple[str, list[str], str] | None:
    """For `sh [-opts] -c script [name args...]`: the script, its parameters from $0 on
    and the options given (e for errexit ...)."""
    if not argv or _program(argv[0]) not in SHELLS:
        return None
    options = ""
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-", "--"):
        options += argv[i][1:]
        i += 1
    if "c" not in options or i >= len(argv):
        return None
    return argv[i], list(argv[i + 1 :]), options


def is_server(argv: Sequence[str] | None) -> bool:
    """Whether a command line (None: the image's entrypoint) runs until it is stopped."""
    if argv is None:
        return True
    if not argv:
        return False
    program = _program(argv[0])
    rest = list(argv[1:])
    if program in SERVERS:
        return not any(a in _SERVER_QUERIES for a in rest)
    if program == "sleep":
        return any(a in ("infinity", "inf") for a in rest)
    if program == "tail":
        return any(a in ("-f", "-F", "--follow") or a.startswith("--follow=") for a in rest)
    if program.startswith("python") and "-m" in rest:
        module = rest[rest.index("-m") + 1 : rest.index("-m") + 2]
        return module in (["http.server"], ["uvicorn"], ["gunicorn"])
    return False


# -- tokens ----------------------------------------------------------------------------------

# A word is a list of parts; each part is (kind, value, quoted) with kind one of
# "lit" (text), "var" (a parameter), "cmd" (command substitution), "arith" ($((...))).
Part = tuple[str, Any, bool]
Word = list[Part]

_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_REDIRECT = re.compile(r"(\d?)(>>|>&|<&|&>|>\||>|<)")
_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*!-])(##|#|%%|%|:?[-=+?])?(.*)", re.S)


class ShellSyntaxError(Exception):
    """A script the interpreter cannot parse."""


@dataclass
class _Redirect:
    fd: int
    op: str  # ">", ">>", "<", ">&"
    target: Word


@dataclass
class _Token:
    kind: str  # "word", "op", "redir"
    word: Word = field(default_factory=list)
    op: str = ""
    redirect: _Redirect | None = None

    def literal(self) -> str | None:
        """The word's text when it is one unquoted literal (how reserved words are told)."""
        if self.kind == "word" and len(self.word) == 1:
            kind, value, quoted = self.word[0]
            if kind == "lit" and not quoted:
                return str(value)
        return None


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """The index of the `close` that balances text[start-1] == open_, skipping quotes."""
    depth = 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        if ch == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError(f"unterminated {open_}")


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        text = self.text
        while True:
            self._skip_blanks()
            if self.i >= len(text):
                return out
            ch = text[self.i]
            if ch == "#":
                while self.i < len(text) and text[self.i] != "\n":
                    self.i += 1
                continue
            redirect = self._redirect()
            if redirect is not None:
                out.append(_Token("redir", redirect=redirect))
                continue
            op = next((o for o in _OPERATORS if text.startswith(o, self.i)), None)
            if op is not None:
                self.i += len(op)
                out.append(_Token("op", op=op))
                continue
            out.append(_Token("word", word=self._word()))

    def _skip_blanks(self) -> None:
        text = self.text
        while self.i < len(text):
            if text[self.i] in " \t\r":
                self.i += 1
            elif text.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    def _redirect(self) -> _Redirect | None:
        match = _REDIRECT.match(self.text, self.i)
        if match is None:
            return None
        digits, op = match.group(1), match.group(2)
        self.i = match.end()
        if op == "&>":
            fd, op = -1, ">"  # both stdout and stderr
        elif op == "<&":
            fd, op = int(digits or 0), "<"
        else:
            fd = int(digits) if digits else (0 if op == "<" else 1)
        if op == ">|":
            op = ">"
        self._skip_blanks()
        return _Redirect(fd, op, self._word())

    def _word(self) -> Word:
        parts: Word = []
        text = self.text
        buf: list[str] = []

        def flush(quoted: bool = False) -> None:
            if buf:
                parts.append(("lit", "".join(buf), quoted))
                buf.clear()

        start = self.i
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\r\n;&|()<>":
                break
            if ch == "\\":
                if self.i + 1 < len(text):
                    if text[self.i + 1] != "\n":
                        flush()
                        parts.append(("lit", text[self.i + 1], True))
                    self.i += 2
                else:
                    self.i += 1
                continue
            if ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated quoted string")
                flush()
                parts.append(("lit", text[self.i + 1 : end], True))
                self.i = end + 1
                continue
            if ch == '"':
                flush()
                self.i += 1
                parts.extend(self._double_quoted())
                continue
            if ch == "$" or ch == "`":
                expansion = self._expansion(quoted=False)
                if expansion is not None:
                    flush()
                    parts.append(expansion)
                    continue
            buf.append(ch)
            self.i += 1
        flush()
        if self.i == start:
            raise ShellSyntaxError(f"unexpected character {text[self.i]!r}")
        return parts or [("lit", "", True)]

    def _double_quoted(self) -> Word:
        parts: Word = []
        buf: list[str] = []
        text = self.text
        while True:
            if self.i >= len(text):
                raise ShellSyntaxError("unterminated quoted string")
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                break
            if ch == "\\" and self.i + 1 < len(text) and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    buf.append(text[self.i + 1])
                self.i += 2
                continue
            if ch in "$`":
                expansion = self._expansion(quoted=True)
                if expansion is not None:
                    if buf:
                        parts.append(("lit", "".join(buf), True))
                        buf.clear()
                    parts.append(expansion)
                    continue
            buf.append(ch)
            self.i += 1
        parts.append(("lit", "".join(buf), True))
        return parts

    def _expansion(self, quoted: bool) -> Part | None:
        text = self.text
        i = self.i
        if text[i] == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise ShellSyntaxError("unterminated `")
            self.i = end + 1
            return ("cmd", _parse(text[i + 1 : end]), quoted)
        nxt = text[i + 1 : i + 2]
        if text.startswith("$((", i):
            end = _matching(text, i + 3, "(", ")")
            if text[end + 1 : end + 2] != ")":
                raise ShellSyntaxError("unterminated $((")
            self.i = end + 2
            return ("arith", text[i + 3 : end], quoted)
        if nxt == "(":
            end = _matching(text, i + 2, "(", ")")
            self.i = end + 1
            return ("cmd", _parse(text[i + 2 : end]), quoted)
        if nxt == "{":
            end = _matching(text, i + 2, "{", "}")
            self.i = end + 1
            return ("var", text[i + 2 : end], quoted)
        if nxt and nxt in "?$#@*!-0123456789":
            self.i = i + 2
            return ("var", nxt, quoted)
        match = _NAME.match(text, i + 1)
        if match is None:
            return None  # a lone `$` is literal
        self.i = match.end()
        return ("var", match.group(0), quoted)


# -- syntax tree -----------------------------------------------------------------------------


@dataclass
class _Simple:
    assignments: list[tuple[str, Word]]
    words: list[Word]
    redirects: list[_Redirect]


@dataclass
class _Pipeline:
    commands: list[Any]
    negate: bool = False


@dataclass
class _AndOr:
    first: _Pipeline
    rest: list[tuple[str, _Pipeline]]


@dataclass
class _List:
    items: list[tuple[_AndOr, bool]]  # (command, runs in the background)


@dataclass
class _Group:
    body: _List
    subshell: bool
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class _If:
    branches: list[tuple[_List, _List]]
    otherwise: _List | None
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class _Loop:
    condition: _List
    body: _List
    until: bool
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class _For:
    name: str
    words: list[Word] | None
    body: _List
    redirects: list[_Redirect] = field(default_factory=list)


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.op in ops

    def at_word(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.literal() in words

    def expect_word(self, word: str) -> None:
        if not self.at_word(word):
            raise ShellSyntaxError(f"expected {word!r}")
        self.i += 1

    def skip_newlines(self) -> None:
        while self.at_op("\n"):
            self.i += 1

    def script(self) -> _List:
        body = self.list_()
        if self.peek() is not None:
            tok = self.peek()
            assert tok is not None
            raise ShellSyntaxError(f"unexpected {tok.op or tok.literal() or 'word'!r}")
        return body

    def list_(self) -> _List:
        items: list[tuple[_AndOr, bool]] = []
        while True:
            self.skip_newlines()
            tok = self.peek()
            if tok is None or self.at_op(")") or tok.literal() in _STOP_WORDS:
                return _List(items)
            if self.at_op(";"):
                self.i += 1
                continue
            command = self.and_or()
            background = self.at_op("&")
            items.append((command, background))
            if self.at_op(";", "&", "\n"):
                self.i += 1

    def and_or(self) -> _AndOr:
        first = self.pipeline()
        rest: list[tuple[str, _Pipeline]] = []
        while self.at_op("&&", "||"):
            op = self.tokens[self.i].op
            self.i += 1
            self.skip_newlines()
            rest.append((op, self.pipeline()))
        return _AndOr(first, rest)

    def pipeline(self) -> _Pipeline:
        negate = False
        if self.at_word("!"):
            negate = True
            self.i += 1
        commands = [self.command()]
        while self.at_op("|"):
            self.i += 1
            self.skip_newlines()
            commands.append(self.command())
        return _Pipeline(commands, negate)

    def command(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise ShellSyntaxError("unexpected end of script")
        word = tok.literal()
        node: Any
        if self.at_op("("):
            self.i += 1
            node = _Group(self.list_(), subshell=True)
            if not self.at_op(")"):
                raise ShellSyntaxError("expected ')'")
            self.i += 1
        elif word == "{":
            self.i += 1
            node = _Group(self.list_(), subshell=False)
            self.expect_word("}")
        elif word == "if":
            node = self.if_()
        elif word in ("while", "until"):
            self.i += 1
            condition = self.list_()
            self.expect_word("do")
            body = self.list_()
            self.expect_word("done")
            node = _Loop(condition, body, word == "until")
        elif word == "for":
            node = self.for_()
        else:
            return self.simple()
        while self.peek() is not None and self.tokens[self.i].kind == "redir":
            redirect = self.tokens[self.i].redirect
            assert redirect is not None
            node.redirects.append(redirect)
            self.i += 1
        return node

    def if_(self) -> _If:
        self.expect_word("if")
        branches = []
        condition = self.list_()
        self.expect_word("then")
        branches.append((condition, self.list_()))
        otherwise = None
        while True:
            if self.at_word("elif"):
                self.i += 1
                condition = self.list_()
                self.expect_word("then")
                branches.append((condition, self.list_()))
            elif self.at_word("else"):
                self.i += 1
                otherwise = self.list_()
            else:
                self.expect_word("fi")
                return _If(branches, otherwise)

    def for_(self) -> _For:
        self.expect_word("for")
        tok = self.peek()
        name = tok.literal() if tok is not None else None
        if not name or not _NAME.fullmatch(name):
            raise ShellSyntaxError("bad for loop variable")
        self.i += 1
        words: list[Word] | None = None
        self.skip_newlines()
        if self.at_word("in"):
            self.i += 1
            words = []
            while self.peek() is not None and self.tokens[self.i].kind == "word":
                if self.at_word("do"):
                    break
                words.append(self.tokens[self.i].word)
                self.i += 1
        if self.at_op(";", "\n"):
            self.i += 1
        self.skip_newlines()
        self.expect_word("do")
        body = self.list_()
        self.expect_word("done")
        return _For(name, words, body)

    def simple(self) -> _Simple:
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[_Redirect] = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind == "op":
                break
            if tok.kind == "redir":
                assert tok.redirect is not None
                redirects.append(tok.redirect)
                self.i += 1
                continue
            assignment = _assignment(tok.word) if not words else None
            if assignment is not None:
                assignments.append(assignment)
            else:
                if not words and tok.literal() in _STOP_WORDS:
                    break
                words.append(tok.word)
            self.i += 1
        if not words and not assignments and not redirects:
            tok = self.peek()
            what = "end of script" if tok is None else repr(tok.op or tok.literal() or "word")
            raise ShellSyntaxError(f"syntax error: unexpected {what}")
        return _Simple(assignments, words, redirects)


_STOP_WORDS = frozenset({"then", "elif", "else", "fi", "do", "done", "}"})


def _assignment(word: Word) -> tuple[str, Word] | None:
    if not word or word[0][0] != "lit" or word[0][2]:
        return None
    match = _ASSIGNMENT.match(str(word[0][1]))
    if match is None:
        return None
    rest = str(word[0][1])[match.end() :]
    value: Word = ([("lit", rest, True)] if rest else []) + word[1:]
    return match.group(1), value


def _parse(script: str) -> _List:
    return _Parser(_Lexer(script).tokens()).script()


# -- running a script ------------------------------------------------------------------------


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class _LoopControl(Exception):
    def __init__(self, kind: str, levels: int) -> None:
        self.kind = kind
        self.levels = levels


_DEV_NULL = ("/dev/null",)
_TO_LOG = ("/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/proc/self/fd/2")


class _Shell:
    """One simulated shell: variables, positional parameters, an in-memory file system."""

    def __init__(
        self,
        env: Mapping[str, str],
        timing: Timing,
        out: Output,
        positional: Sequence[str] = (),
        options: str = "",
        files: dict[str, bytes] | None = None,
    ) -> None:
        self.vars: dict[str, str] = dict(env)
        self.timing = timing
        self.out = out
        self.positional = list(positional)
        self.errexit = "e" in options
        self.status = 0
        self.files: dict[str, bytes] = files if files is not None else {}
        self.background: list[asyncio.Task[int]] = []
        self.busy_since: float | None = None
        self.condition_depth = 0

    # expansion ------------------------------------------------------------------------------

    def param(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "#":
            return str(max(len(self.positional) - 1, 0))
        if name in ("@", "*"):
            return " ".join(self.positional[1:])
        if name == "!":
            return "2"
        if name == "-":
            return "e" if self.errexit else ""
        if name.isdigit():
            index = int(name)
            return self.positional[index] if index < len(self.positional) else ""
        return self.vars.get(name, "")

    def braced(self, spec: str) -> str:
        if spec.startswith("#") and len(spec) > 1:
            return str(len(self.braced(spec[1:])))
        match = _BRACED.fullmatch(spec)
        if match is None:
            raise ShellSyntaxError(f"bad substitution: ${{{spec}}}")
        name, op, rest = match.group(1), match.group(2), match.group(3)
        value = self.param(name)
        if op is None:
            if rest:
                raise ShellSyntaxError(f"bad substitution: ${{{spec}}}")
            return value
        if op in ("#", "##"):
            # Remove the shortest (#) or longest (##) prefix matching the pattern.
            ends = range(len(value) + 1) if op == "#" else range(len(value), -1, -1)
            return next((value[n:] for n in ends if fnmatch.fnmatchcase(value[:n], rest)), value)
        if op in ("%", "%%"):
            starts = range(len(value), -1, -1) if op == "%" else range(len(value) + 1)
            return next((value[:n] for n in starts if fnmatch.fnmatchcase(value[n:], rest)), value)
        is_set = name in self.vars or (name.isdigit() and int(name) < len(self.positional))
        empty = not value if op.startswith(":") else not is_set
        kind = op[-1]
        if kind in "-=" and empty:
            if kind == "=":
                self.vars[name] = rest
            return rest
        if kind == "+":
            return "" if empty else rest
        if kind == "?" and empty:
            self.out(f"sh: {name}: {rest or 'parameter not set'}\n".encode())
            raise _Exit(1)
        return value

    async def expand(self, word: Word, split: bool = True) -> list[str]:
        """A word's fields after parameter, command and arithmetic expansion."""
        fields: list[str] = []
        current: list[str] = []
        have_field = False
        for kind, value, quoted in word:
            if kind == "lit":
                current.append(str(value))
                have_field = True
                continue
            if kind == "var":
                if value == "@" and quoted and split:
                    # "$@": one field per positional parameter.
                    args = self.positional[1:]
                    if args:
                        current.append(args[0])
                        for arg in args[1:]:
                            fields.append("".join(current))
                            current = [arg]
                        have_field = True
                    continue
                text = self.braced(value)
            elif kind == "cmd":
                text = (await self.capture(value)).rstrip("\n")
            else:
                text = str(self.arithmetic(str(value)))
            if quoted or not split:
                current.append(text)
                have_field = True
                continue
            pieces = text.split()
            if not pieces:
                continue
            if text[:1].isspace() and current:
                fields.append("".join(current))
                current = []
            current.append(pieces[0])
            for piece in pieces[1:]:
                fields.append("".join(current))
                current = [piece]
            have_field = True
            if text[-1:].isspace():
                fields.append("".join(current))
                current = []
                have_field = False
        if have_field or current:
            fields.append("".join(current))
        return fields

    async def expand_words(self, words: list[Word]) -> list[str]:
        out: list[str] = []
        for word in words:
            out.extend(await self.expand(word))
        return out

    async def expand_one(self, word: Word) -> str:
        return "".join(await self.expand(word, split=False))

    def arithmetic(self, expression: str) -> int:
        def value_of(match: re.Match[str]) -> str:
            text = self.param(match.group(0))
            try:
                return str(int(text or "0"))
            except ValueError:
                return "0"

        text = re.sub(r"\$?([A-Za-z_][A-Za-z0-9_]*)", value_of, expression)
        text = re.sub(r"\$(\d|[?#])", lambda m: self.param(m.group(1)) or "0", text)
        text = text.replace("&&", " and ").replace("||", " or ")
        text = re.sub(r"!(?!=)", " not ", text)
        try:
            return _evaluate(ast.parse(text.strip() or "0", mode="eval").body)
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
            self.out(f"sh: arithmetic syntax error: {expression}\n".encode())
            raise _Exit(2) from exc

    async def capture(self, body: _List) -> str:
        chunks: list[bytes] = []
        self.status = await self.subshell(chunks.append).run_script(body)
        return b"".join(chunks).decode(errors="replace")

    def subshell(self, out: Output) -> _Shell:
        sub = _Shell(self.vars, self.timing, out, self.positional, files=self.files)
        sub.errexit = self.errexit
        return sub

    # running --------------------------------------------------------------------------------

    async def run_script(self, body: _List) -> int:
        try:
            await self.run_list(body)
        except _Exit as done:
            self.status = done.code
        except _LoopControl:
            pass
        except ShellSyntaxError as exc:
            self.out(f"sh: {exc}\n".encode())
            self.status = 2
        finally:
            for task in self.background:
                task.cancel()
        return self.status

    async def run_list(self, body: _List) -> int:
        for command, background in body.items:
            if background:
                sub = self.subshell(self.out)
                task = asyncio.ensure_future(sub.run_script(_List([(command, False)])))
                self.background.append(task)
                self.status = 0
                continue
            status, exempt = await self.run_and_or(command)
            if status and self.errexit and not exempt and not self.condition_depth:
                raise _Exit(status)
        return self.status

    async def run_and_or(self, command: _AndOr) -> tuple[int, bool]:
        """The status of an `a && b || c` chain, and whether it came from a command errexit
        ignores (one followed by && or ||, or a negated one)."""
        pipelines = [command.first, *(p for _, p in command.rest)]
        status, exempt = 0, False
        for i, pipeline in enumerate(pipelines):
            if i and (command.rest[i - 1][0] == "&&") != (status == 0):
                continue
            last = i == len(pipelines) - 1
            self.condition_depth += 0 if last else 1
            try:
                status = await self.run_pipeline(pipeline)
            finally:
                self.condition_depth -= 0 if last else 1
            exempt = not last or pipeline.negate
        self.status = status
        return status, exempt

    async def run_pipeline(self, pipeline: _Pipeline) -> int:
        stdin = b""
        status = 0
        last = len(pipeline.commands) - 1
        for i, command in enumerate(pipeline.commands):
            if i == last:
                status = await self.run_command(command, stdin, self.out)
            else:
                chunks: list[bytes] = []
                status = await self.run_command(command, stdin, chunks.append)
                stdin = b"".join(chunks)
        if pipeline.negate:
            status = 0 if status else 1
        self.status = status
        return status

    async def run_command(self, node: Any, stdin: bytes, out: Output) -> int:
        if isinstance(node, _Simple):
            return await self.run_simple(node, stdin, out)
        saved = self.out
        self.out, stdin = await self.redirected(node.redirects, out, stdin)
        try:
            if isinstance(node, _Group) and node.subshell:
                self.status = await self.subshell(self.out).run_script(node.body)
                return self.status
            if isinstance(node, _Group):
                return await self.run_list(node.body)
            if isinstance(node, _If):
                return await self.run_if(node)
            if isinstance(node, _Loop):
                return await self.run_loop(node)
            return await self.run_for(node)
        finally:
            self.out = saved

    async def run_if(self, node: _If) -> int:
        for condition, body in node.branches:
            if await self.test_condition(condition) == 0:
                return await self.run_list(body)
        if node.otherwise is not None:
            return await self.run_list(node.otherwise)
        self.status = 0
        return 0

    async def test_condition(self, condition: _List) -> int:
        self.condition_depth += 1
        try:
            return await self.run_list(condition)
        finally:
            self.condition_depth -= 1

    async def run_loop(self, node: _Loop) -> int:
        status = 0
        while True:
            result = await self.test_condition(node.condition)
            if (result == 0) == node.until:
                break
            try:
                status = await self.run_list(node.body)
            except _LoopControl as control:
                if control.levels > 1:
                    control.levels -= 1
                    raise
                if control.kind == "break":
                    break
            await self.pace()
        self.status = status
        return status

    async def run_for(self, node: _For) -> int:
        values = self.positional[1:] if node.words is None else await self.expand_words(node.words)
        status = 0
        for value in values:
            self.vars[node.name] = value
            try:
                status = await self.run_list(node.body)
            except _LoopControl as control:
                if control.levels > 1:
                    control.levels -= 1
                    raise
                if control.kind == "break":
                    break
            await self.pace()
        self.status = status
        return status

    async def pace(self) -> None:
        """Yield to the event loop each round; slow down loops that never sleep."""
        now = time.monotonic()
        if self.busy_since is None:
            self.busy_since = now
        await asyncio.sleep(_BUSY_PAUSE if now - self.busy_since > _BUSY_SECONDS else 0)

    async def redirected(
        self, redirects: list[_Redirect], out: Output, stdin: bytes
    ) -> tuple[Output, bytes]:
        for redirect in redirects:
            target = await self.expand_one(redirect.target)
            if redirect.op == "<":
                stdin = self.files.get(target, b"")
            elif redirect.op == ">&" or redirect.fd == 2 or target in _TO_LOG:
                # Both output streams end in the container log.
                continue
            elif target in _DEV_NULL:
                out = _discard
            else:
                if redirect.op == ">" or target not in self.files:
                    self.files[target] = b""
                out = self._file_writer(target)
        return out, stdin

    def _file_writer(self, path: str) -> Output:
        def write(data: bytes) -> None:
            self.files[path] = self.files.get(path, b"") + data

        return write

    async def run_simple(self, node: _Simple, stdin: bytes, out: Output) -> int:
        saved = self.out
        try:
            argv = await self.expand_words(node.words)
            if not argv:
                self.status = 0  # a command substitution in a value sets it
            values = [(name, await self.expand_one(value)) for name, value in node.assignments]
            self.out, stdin = await self.redirected(node.redirects, out, stdin)
            if not argv:
                self.vars.update(values)
                return self.status
            self.status = await self.call(argv, stdin, dict(values))
            return self.status
        finally:
            self.out = saved

    async def call(self, argv: list[str], stdin: bytes, scoped: Mapping[str, str]) -> int:
        """Run one command line with `scoped` variables set for it alone."""
        name = _program(argv[0])
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            if not scoped:
                return await builtin(self, argv, stdin)
            saved = dict(self.vars)
            self.vars.update(scoped)
            try:
                return await builtin(self, argv, stdin)
            finally:
                self.vars = saved
        env = {**self.vars, **scoped}
        script = _shell_script(argv)
        if script is not None:
            text, positional, options = script
            return await simulate_script(
                text, env, self.timing, self.out, positional or [name], options, self.files
            )
        if name in SHELLS and len(argv) == 1:
            text = stdin.decode(errors="replace")
            return await simulate_script(text, env, self.timing, self.out, files=self.files)
        return await run_program(argv, self.timing, self.out)

    def write(self, text: str) -> None:
        self.out(text.encode())


def _discard(data: bytes) -> None:
    return None


def _divide(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


_ARITH_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _divide,
    ast.FloorDiv: _divide,
    ast.Mod: lambda a, b: a - b * _divide(a, b),
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
_COMPARE_OPS: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _evaluate(node: ast.AST) -> int:
    """Integer arithmetic as `$((...))` does it, over a parsed expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
        return _ARITH_OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Not):
            return int(not value)
        if isinstance(node.op, ast.Invert):
            return ~value
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comparator)
            if type(op) not in _COMPARE_OPS or not _COMPARE_OPS[type(op)](left, right):
                return 0
            left = right
        return 1
    raise ValueError("unsupported arithmetic")


# -- utilities -------------------------------------------------------------------------------

Builtin = Callable[[_Shell, list[str], bytes], Awaitable[int]]
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


async def _echo(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _printf(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _sleep(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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
    if sh.timing.sleep_seconds is not None:
        total = sh.timing.sleep_seconds
    sh.busy_since = None
    await asyncio.sleep(total)
    return 0


async def _exit(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    code = sh.status
    if len(argv) > 1:
        try:
            code = int(argv[1]) & 0xFF
        except ValueError:
            sh.write(f"sh: exit: Illegal number: {argv[1]}\n")
            code = 2
    raise _Exit(code)


async def _true(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    return 0


async def _false(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    return 1


async def _date(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    fmt = "%a %b %e %H:%M:%S UTC %Y"
    for arg in argv[1:]:
        if arg.startswith("+"):
            fmt = arg[1:]
        elif arg in ("-I", "--iso-8601"):
            fmt = "%Y-%m-%d"
        elif arg == "-R":
            fmt = "%a, %d %b %Y %H:%M:%S +0000"
    now = time.time()
    text = time.strftime(fmt.replace("%N", "{nanos}").replace("%s", "{epoch}"), time.gmtime(now))
    text = text.replace("{nanos}", f"{int(now % 1 * 1e9):09d}").replace("{epoch}", str(int(now)))
    sh.write(text + "\n")
    return 0


async def _hostname(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    sh.write(sh.vars.get("HOSTNAME", "localhost") + "\n")
    return 0


async def _env(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    scoped: dict[str, str] = {}
    while args and _ASSIGNMENT.match(args[0]):
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


async def _printenv(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    if len(argv) == 1:
        return int(await _env(sh, argv[:1], stdin))
    status = 0
    for name in argv[1:]:
        if name in sh.vars:
            sh.write(sh.vars[name] + "\n")
        else:
            status = 1
    return status


async def _export(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    for arg in argv[1:]:
        if "=" in arg:
            key, _, value = arg.partition("=")
            sh.vars[key] = value
    return 0


async def _unset(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    for name in argv[1:]:
        sh.vars.pop(name, None)
    return 0


async def _set(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _cat(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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
            sh.write(f"cat: can't open '{name}': No such file or directory\n")
            status = 1
    return status


async def _tee(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    append = "-a" in argv[1:]
    for name in (a for a in argv[1:] if not a.startswith("-")):
        if name in _TO_LOG:
            continue
        sh.files[name] = (sh.files.get(name, b"") if append else b"") + stdin
    sh.out(stdin)
    return 0


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _input(sh: _Shell, names: list[str], stdin: bytes) -> bytes:
    return b"".join(sh.files.get(n, b"") for n in names) if names else stdin


async def _grep(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _head(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    count, names = _count_option(argv, 10)
    sh.out(b"".join(_lines(_input(sh, names, stdin))[:count]))
    return 0


async def _tail(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    if any(a in ("-f", "-F", "--follow") for a in argv[1:]):
        return await _forever()
    count, names = _count_option(argv, 10)
    lines = _lines(_input(sh, names, stdin))
    sh.out(b"".join(lines[-count:] if count else []))
    return 0


async def _wc(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _touch(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    for name in (a for a in argv[1:] if not a.startswith("-")):
        sh.files.setdefault(name, b"")
    return 0


async def _rm(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    for name in (a for a in argv[1:] if not a.startswith("-")):
        sh.files.pop(name, None)
    return 0


async def _seq(sh: _Shell, argv: list[str], stdin: bytes) -> int:
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


async def _fixed_output(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    texts = {
        "whoami": "root",
        "id": "uid=0(root) gid=0(root) groups=0(root)",
        "pwd": "/",
        "uname": "Linux",
        "tty": "not a tty",
    }
    if _program(argv[0]) == "uname" and "-a" in argv:
        sh.write(f"Linux {sh.vars.get('HOSTNAME', 'localhost')} 6.0.0 x86_64 GNU/Linux\n")
        return 0
    sh.write(texts[_program(argv[0])] + "\n")
    return 0 if _program(argv[0]) != "tty" else 1


async def _test(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    args = argv[1:]
    if _program(argv[0]) == "[":
        if not args or args[-1] != "]":
            sh.write("[: missing ]\n")
            return 2
        args = args[:-1]
    try:
        return 0 if _test_expression(sh, args) else 1
    except ValueError as exc:
        sh.write(f"test: {exc}\n")
        return 2


def _test_expression(sh: _Shell, args: list[str]) -> bool:
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
            return value in ("/", "/tmp", ".", "/etc", "/var", "/usr", "/bin", "/home")
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


async def _loop_control(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    levels = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    raise _LoopControl(_program(argv[0]), max(levels, 1))


async def _exec(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    if len(argv) == 1:
        return 0
    raise _Exit(await sh.call(argv[1:], stdin, {}))


async def _wait(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    tasks, sh.background = sh.background, []
    status = 0
    for task in tasks:
        status = await task
    return status


async def _read(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")] or ["REPLY"]
    if not stdin:
        return 1
    line = stdin.decode(errors="replace").split("\n", 1)[0]
    values = line.split(None, len(names) - 1)
    for i, name in enumerate(names):
        sh.vars[name] = values[i] if i < len(values) else ""
    return 0


async def _shift(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    count = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    if count > len(sh.positional) - 1:
        return 1
    sh.positional = sh.positional[:1] + sh.positional[1 + count :]
    return 0


async def _expr(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    text = " ".join(argv[1:]).replace("\\*", "*")
    try:
        value = _evaluate(ast.parse(text.replace("/", "//"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        sh.write("expr: syntax error\n")
        return 2
    sh.write(f"{value}\n")
    return 0 if value else 1


async def _nothing(sh: _Shell, argv: list[str], stdin: bytes) -> int:
    return 0


_BUILTINS: dict[str, Builtin] = {
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
    **dict.fromkeys(_names("cd trap ulimit umask mkdir chmod chown ln cp mv kill sync"), _nothing),
}


# -- entry points ----------------------------------------------------------------------------


async def run_program(argv: Sequence[str], timing: Timing, out: Output) -> int:
    """A program the simulation knows only by name: a server runs until stopped, anything
    else runs `timing.run_seconds` and exits 0, noting in the log that it was simulated."""
    line = shlex.join(argv)
    if is_server(argv):
        out(f"(simulated) {line}: running\n".encode())
        return await _forever()
    out(f"(simulated) {line}\n".encode())
    await asyncio.sleep(timing.run_seconds)
    return 0


async def simulate_script(
    script: str,
    env: Mapping[str, str],
    timing: Timing,
    out: Output,
    positional: Sequence[str] = ("sh",),
    options: str = "",
    files: dict[str, bytes] | None = None,
) -> int:
    """Run a shell script in the interpreter; returns its exit status. A script beyond the
    interpreter runs like any program it does not know, rather than failing the pod."""
    try:
        body = _parse(script)
    except ShellSyntaxError:
        return await run_program([positional[0] if positional else "sh", "-c", script], timing, out)
    shell = _Shell(env, timing, out, positional, options, files)
    return await shell.run_script(body)


async def simulate(
    argv: Sequence[str] | None,
    env: Mapping[str, str],
    timing: Timing,
    out: Output,
    image: str = "",
) -> int:
    """Simulate a container's command line (None: the image's entrypoint, a server);
    returns the exit code. Cancel the call to stop the container."""
    if argv is None:
        out(f"(simulated) {image or 'image'}: entrypoint running\n".encode())
        return await _forever()
    if not argv:
        return 0
    script = _shell_script(argv)
    if script is not None:
        text, positional, options = script
        return await simulate_script(
            text, env, timing, out, positional or [_program(argv[0])], options
        )
    shell = _Shell(env, timing, out)
    try:
        return int(await shell.call(list(argv), b"", {}))
    except _Exit as done:
        return done.code
    except _LoopControl:
        return 0


# -- containers ------------------------------------------------------------------------------

_BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")


class ContainerProcess:
    """One run of a container: simulated, or (`local=True`) a process on this machine.

    `wait()` runs it to the end and returns the exit code (raising StartError when a local
    command cannot start); `stop(grace)` asks it to end (SIGTERM, then SIGKILL after
    `grace` seconds for a local process) and returns the exit code.
    """

    def __init__(
        self,
        argv: Sequence[str] | None,
        env: Mapping[str, str],
        timing: Timing,
        out: Output,
        *,
        local: bool = False,
        workdir_prefix: str = "kubeforge-",
        image: str = "",
    ) -> None:
        self.argv = None if argv is None else list(argv)
        self.image = image
        self.env = dict(env)
        self.timing = timing
        self.out = out
        self.local = local and argv is not None and len(argv) > 0
        self.workdir_prefix = workdir_prefix
        self._task: asyncio.Task[int] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stopped = False

    async def wait(self) -> int:
        """Run until the command ends; its exit code."""
        if self._task is None:
            if self._stopped:
                return 0
            self._task = asyncio.ensure_future(self._run())
        task = self._task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._stopped and task.done():
                return 0  # stop() ended a simulated container
            # Whoever waited gave up: leave nothing running behind.
            task.cancel()
            if self._process is not None and self._process.returncode is None:
                _signal_group(self._process.pid, signal.SIGKILL)
            raise

    async def _run(self) -> int:
        if not self.local:
            return await simulate(self.argv, self.env, self.timing, self.out, self.image)
        assert self.argv is not None
        workdir = tempfile.mkdtemp(prefix=self.workdir_prefix)
        env = {k: os.environ[k] for k in _BASE_ENV_KEYS if k in os.environ}
        env["HOME"] = workdir
        env.update(self.env)
        try:
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *self.argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    cwd=workdir,
                    env=env,
                    start_new_session=True,
                )
            except FileNotFoundError:
                raise StartError(
                    f'exec: "{self.argv[0]}": executable file not found in $PATH'
                ) from None
            except OSError as exc:
                raise StartError(f'exec: "{self.argv[0]}": {exc.strerror or exc}') from None
            stream = self._process.stdout
            assert stream is not None
            while chunk := await stream.read(65536):
                self.out(chunk)
            code = await self._process.wait()
            return 128 - code if code < 0 else code
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    async def stop(self, grace: float = 0.0) -> int:
        """End the container; its exit code."""
        self._stopped = True
        task = self._task
        if task is None:
            return 0
        process = self._process
        if process is None or process.returncode is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StartError):
                return await task
            return 0
        _signal_group(process.pid, signal.SIGTERM)
        try:
            return await asyncio.wait_for(asyncio.shield(task), max(grace, 0.0))
        except TimeoutError:
            _signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(asyncio.CancelledError, StartError):
            return await task
        return 137


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
