"""Reading a shell script: words and operators, then the syntax tree the interpreter runs.

The grammar is the part of POSIX sh that container commands use: simple commands with
assignments and redirections, pipelines, `&&` / `||` lists, `;` and `&`, `( ... )` and
`{ ...; }` groups, `if`, `while` / `until`, `for`, quoting, `$name`, `${...}` with the
common operators, `$(...)` / backquotes and `$((...))`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ASSIGNMENT",
    "AndOr",
    "CommandList",
    "For",
    "Group",
    "If",
    "Loop",
    "Pipeline",
    "Redirect",
    "ShellSyntaxError",
    "Simple",
    "Token",
    "Word",
    "parse",
]

# A word is a list of parts; each part is (kind, value, quoted) with kind one of
# "lit" (text), "var" (a parameter), "cmd" (command substitution), "arith" ($((...))).
Part = tuple[str, Any, bool]
Word = list[Part]

_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_REDIRECT = re.compile(r"(\d?)(>>|>&|<&|&>|>\||>|<)")


class ShellSyntaxError(Exception):
    """A script the interpreter cannot parse."""


@dataclass
class Redirect:
    fd: int
    op: str  # ">", ">>", "<", ">&"
    target: Word


@dataclass
class Token:
    kind: str  # "word", "op", "redir"
    word: Word = field(default_factory=list)
    op: str = ""
    redirect: Redirect | None = None

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

    def tokens(self) -> list[Token]:
        out: list[Token] = []
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
                out.append(Token("redir", redirect=redirect))
                continue
            op = next((o for o in _OPERATORS if text.startswith(o, self.i)), None)
            if op is not None:
                self.i += len(op)
                out.append(Token("op", op=op))
                continue
            out.append(Token("word", word=self._word()))

    def _skip_blanks(self) -> None:
        text = self.text
        while self.i < len(text):
            if text[self.i] in " \t\r":
                self.i += 1
            elif text.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    def _redirect(self) -> Redirect | None:
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
        return Redirect(fd, op, self._word())

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
            return ("cmd", parse(text[i + 1 : end]), quoted)
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
            return ("cmd", parse(text[i + 2 : end]), quoted)
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
class Simple:
    assignments: list[tuple[str, Word]]
    words: list[Word]
    redirects: list[Redirect]


@dataclass
class Pipeline:
    commands: list[Any]
    negate: bool = False


@dataclass
class AndOr:
    first: Pipeline
    rest: list[tuple[str, Pipeline]]


@dataclass
class CommandList:
    items: list[tuple[AndOr, bool]]  # (command, runs in the background)


@dataclass
class Group:
    body: CommandList
    subshell: bool
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class If:
    branches: list[tuple[CommandList, CommandList]]
    otherwise: CommandList | None
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Loop:
    condition: CommandList
    body: CommandList
    until: bool
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class For:
    name: str
    words: list[Word] | None
    body: CommandList
    redirects: list[Redirect] = field(default_factory=list)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Token | None:
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

    def script(self) -> CommandList:
        body = self.list_()
        if self.peek() is not None:
            tok = self.peek()
            assert tok is not None
            raise ShellSyntaxError(f"unexpected {tok.op or tok.literal() or 'word'!r}")
        return body

    def list_(self) -> CommandList:
        items: list[tuple[AndOr, bool]] = []
        while True:
            self.skip_newlines()
            tok = self.peek()
            if tok is None or self.at_op(")") or tok.literal() in _STOP_WORDS:
                return CommandList(items)
            if self.at_op(";"):
                self.i += 1
                continue
            command = self.and_or()
            background = self.at_op("&")
            items.append((command, background))
            if self.at_op(";", "&", "\n"):
                self.i += 1

    def and_or(self) -> AndOr:
        first = self.pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while self.at_op("&&", "||"):
            op = self.tokens[self.i].op
            self.i += 1
            self.skip_newlines()
            rest.append((op, self.pipeline()))
        return AndOr(first, rest)

    def pipeline(self) -> Pipeline:
        negate = False
        if self.at_word("!"):
            negate = True
            self.i += 1
        commands = [self.command()]
        while self.at_op("|"):
            self.i += 1
            self.skip_newlines()
            commands.append(self.command())
        return Pipeline(commands, negate)

    def command(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise ShellSyntaxError("unexpected end of script")
        word = tok.literal()
        node: Any
        if self.at_op("("):
            self.i += 1
            node = Group(self.list_(), subshell=True)
            if not self.at_op(")"):
                raise ShellSyntaxError("expected ')'")
            self.i += 1
        elif word == "{":
            self.i += 1
            node = Group(self.list_(), subshell=False)
            self.expect_word("}")
        elif word == "if":
            node = self.if_()
        elif word in ("while", "until"):
            self.i += 1
            condition = self.list_()
            self.expect_word("do")
            body = self.list_()
            self.expect_word("done")
            node = Loop(condition, body, word == "until")
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

    def if_(self) -> If:
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
                return If(branches, otherwise)

    def for_(self) -> For:
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
        return For(name, words, body)

    def simple(self) -> Simple:
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
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
        return Simple(assignments, words, redirects)


_STOP_WORDS = frozenset({"then", "elif", "else", "fi", "do", "done", "}"})


def _assignment(word: Word) -> tuple[str, Word] | None:
    if not word or word[0][0] != "lit" or word[0][2]:
        return None
    match = ASSIGNMENT.match(str(word[0][1]))
    if match is None:
        return None
    rest = str(word[0][1])[match.end() :]
    value: Word = ([("lit", rest, True)] if rest else []) + word[1:]
    return match.group(1), value


def parse(script: str) -> CommandList:
    return _Parser(_Lexer(script).tokens()).script()
