"""The edits `kubeforge create webhook` makes to a kind's webhook module and its test when
they exist already: another webhook type joins the module instead of being skipped.

kubebuilder's go/v4 plugin does the same to `internal/webhook/<version>/<kind>_webhook.go`
(pkg/plugins/golang/v4/scaffolds/internal/templates/webhooks/webhook_updater.go and
webhook_test_updater.go): the new defaulter or validator type is added to the file, its
`WithDefaulter`/`WithValidator` call is chained in before `Complete()`, and the test file
gets the matching cases. Here the classes go above the module's setup function, their
`.defaulter(...)`/`.validator(...)` calls into its `manager.webhook_for(Kind)...complete()`
statement, and the test module gets their names imported and their test functions.
"""

from __future__ import annotations

import re

from kubeforge._scaffold.render import import_kubeforge_module

__all__ = ["LINE_LENGTH", "add_classes", "add_registrations", "add_tests", "registration"]

LINE_LENGTH = 100  # the scaffolded project's ruff line length

# One chained call, `.defaulter(FrigateDefaulter())` or with arguments holding calls.
_CALL = r"\.\w+\((?:[^()]|\([^()]*\))*\)"


def registration(kind: str, calls: list[str], indent: str = "    ") -> str:
    """The statement serving `kind`'s webhooks, `manager.webhook_for(Kind)<calls>.complete()`:
    on one line when it fits, else one call a line, as ruff formats a long chain."""
    one_line = f"{indent}manager.webhook_for({kind}){''.join(calls)}.complete()"
    if len(one_line) <= LINE_LENGTH:
        return one_line
    inner = indent + "    "
    chained = "".join(f"\n{inner}{call}" for call in calls)
    return f"{indent}(\n{inner}manager.webhook_for({kind}){chained}\n{inner}.complete()\n{indent})"


def _statement(text: str, kind: str) -> re.Match[str] | None:
    # The statement on one line, or wrapped in parentheses one call a line.
    return re.search(
        rf"^(?P<indent>[ \t]*)(?P<open>\(\s*)?manager\.webhook_for\({re.escape(kind)}\)"
        rf"(?P<calls>(?:\s*{_CALL})*?)\s*\.complete\(\)(?(open)\s*\))[ \t]*$",
        text,
        re.MULTILINE,
    )


def add_registrations(text: str, kind: str, calls: list[str]) -> str | None:
    """`text` with `calls` chained into its `manager.webhook_for(Kind)...complete()`
    statement (a method it calls already is not added again); None without that statement."""
    match = _statement(text, kind)
    if match is None:
        return None
    present = [call.strip() for call in re.findall(_CALL, match.group("calls"))]
    methods = {call.partition("(")[0] for call in present}
    added = [call for call in calls if call.partition("(")[0] not in methods]
    if not added:
        return text
    statement = registration(kind, present + added, match.group("indent"))
    return text[: match.start()] + statement + text[match.end() :]


def add_classes(text: str, kind: str, classes: str) -> str | None:
    """`text` with `classes` (source starting with blank lines) above the function holding
    the kind's registration statement, the `webhook` module they name imported, and the
    module logger they use when it has none; None without that statement."""
    match = _statement(text, kind)
    if match is None:
        return None
    function = text.rfind("\ndef ", 0, match.start())
    function = function + 1 if function >= 0 else match.start()
    # Decorator lines above the function belong to it.
    head = text[:function].rstrip("\n")
    while head.rpartition("\n")[2].startswith("@"):
        head = head.rpartition("\n")[0].rstrip("\n")
    start = len(head)
    if not re.search(r"^log = logging\.getLogger\(", text, re.MULTILINE):
        # One blank line after the imports, as isort leaves before a statement.
        after_imports = head.rpartition("\n")[2].startswith(("import ", "from "))
        gap = "\n" if after_imports else "\n\n"
        classes = gap + "log = logging.getLogger(__name__)\n" + classes
        head = _import_logging(head)
    head = import_kubeforge_module(head, "webhook")
    return head + "\n" + classes.rstrip("\n") + "\n\n\n" + text[start:].lstrip("\n")


def _import_logging(text: str) -> str:
    """`text` importing `logging` (a standard-library import block of its own, after the
    `from __future__` import, as isort places it)."""
    if re.search(r"^import logging$", text, re.MULTILINE):
        return text
    future = re.search(r"^from __future__ import [^\n]+\n", text, re.MULTILINE)
    at = future.end() if future else 0
    rest = text[at:].lstrip("\n")
    return text[:at] + "\nimport logging\n\n" + rest


def add_tests(text: str, module: str, classes: list[str], tests: str) -> str | None:
    """A webhook test module with `classes` added to its import from `module` and `tests`
    (source starting with blank lines) at its end; None when it does not import from
    `module` on one line."""
    match = re.search(rf"^from {re.escape(module)} import (?P<names>[^(\n]+)$", text, re.MULTILINE)
    if match is None:
        return None
    names = [n.strip() for n in match.group("names").split(",")]
    missing = [c for c in classes if c not in names]
    if not missing:
        return text
    merged = ", ".join(sorted([*names, *missing]))
    text = text[: match.start("names")] + merged + text[match.end("names") :]
    return text.rstrip("\n") + "\n" + tests.rstrip("\n") + "\n"
