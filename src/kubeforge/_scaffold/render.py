"""Templates (package data under `templates/`) and the edits scaffolding makes to existing files.

A template is a file ending in `.tmpl` whose `{{ name }}` placeholders are replaced with
values; there is no logic in templates: the code chooses which to render. `dot-` at the start
of a template's or a folder's name stands for `.` (`dot-gitignore` is written as `.gitignore`,
`dot-github/` as `.github/`), so that packaging tools neither take the templates for their own
configuration nor leave hidden folders out. Templates are read from the template set in force
(templatesets.py): this release's, or an older release's while its scaffold is written again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib.resources.abc import Traversable

from kubeforge._scaffold import templatesets

__all__ = [
    "FIRST_PARTY",
    "import_at_marker",
    "import_kubeforge_module",
    "insert_at_marker",
    "render",
    "render_tree",
    "template",
    "uncomment",
]

_PLACEHOLDER = re.compile(r"\{\{ ([a-z_]+) \}\}")
_SUFFIX = ".tmpl"


def _node(root: Traversable, name: str) -> Traversable:
    *folders, file = name.split("/")
    for part in folders:
        root = root.joinpath(part)
    return root.joinpath(file + _SUFFIX)


def template(name: str) -> str:
    """The text of template `name` (a path under templates/, without `.tmpl`), from the set in
    force; one an older set lacks is this release's (and noted in the set's stand_ins)."""
    template_set = templatesets.active()
    node = _node(template_set.root, name)
    if node.is_file() or template_set.is_packaged:
        return node.read_text(encoding="utf-8")
    if name not in template_set.stand_ins:
        template_set.stand_ins.append(name)
    return _node(templatesets.packaged().root, name).read_text(encoding="utf-8")


def render(name: str, values: Mapping[str, str]) -> str:
    """Template `name` with its placeholders replaced (KeyError for a value not given)."""
    return substitute(template(name), values)


def substitute(text: str, values: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template placeholder {key!r} has no value")
        return values[key]

    return _PLACEHOLDER.sub(value, text)


def _undot(name: str) -> str:
    return "." + name[len("dot-") :] if name.startswith("dot-") else name


def render_tree(directory: str, values: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(relative path, content) of every template under `directory`, in path order."""

    def walk(node: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir():
                yield from walk(child, f"{prefix}{_undot(child.name)}/")
            elif child.name.endswith(_SUFFIX):
                yield f"{prefix}{_undot(child.name[: -len(_SUFFIX)])}", child

    for path, node in walk(templatesets.active().root.joinpath(directory), ""):
        yield path, substitute(node.read_text(encoding="utf-8"), values)


# editing existing files -------------------------------------------------------------------


def insert_at_marker(text: str, marker: str, fragment: str) -> str | None:
    """`text` with `fragment` (whole lines) inserted just above the line holding `marker`;
    None when the marker is missing. A fragment already there is not inserted again."""
    if fragment.strip() and fragment.strip() in text:
        return text
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if marker in line:
            block = fragment if fragment.endswith("\n") else fragment + "\n"
            return "".join([*lines[:index], block, *lines[index:]])
    return None


FIRST_PARTY = ("api", "controllers", "webhooks", "main", "tests")


def import_at_marker(
    text: str, marker: str, statement: str, first_party: tuple[str, ...] = FIRST_PARTY
) -> str | None:
    """`text` with the one-line `from x import y` statement among the project's own imports
    just above `marker`, kept in isort's order (by module, then names), the block set apart
    by blank lines as ruff's isort wants; None when the marker is missing."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if marker in line), None)
    if at is None:
        return None
    end = at
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    start = end
    while start > 0 and _module(lines[start - 1]).split(".")[0] in first_party:
        start -= 1
    block = [line.rstrip("\n") for line in lines[start:end]]
    if statement in block:
        return text
    block = _merge(block, statement)
    block.sort(key=_import_key)
    before = lines[:start]
    while before and not before[-1].strip():
        before.pop()
    head = [*before, "\n"] if before else []
    return "".join([*head, *(line + "\n" for line in block), "\n", *lines[at:]])


def import_kubeforge_module(text: str, name: str) -> str:
    """`text` importing the concept module `name` as the templates do (`from kubeforge import
    webhook`): merged into the module's one-line `from kubeforge import ...` when it has one,
    else on the line after its `import kubeforge`, where isort puts it; `text` unchanged when
    it has neither."""
    lines = text.splitlines(keepends=True)
    statement = f"from kubeforge import {name}"
    for index, line in enumerate(lines):
        if line.startswith("from kubeforge import ") and "(" not in line:
            lines[index] = _merge([line.rstrip("\n")], statement)[0] + "\n"
            return "".join(lines)
    for index, line in enumerate(lines):
        if line.rstrip("\n") == "import kubeforge":
            return "".join([*lines[: index + 1], statement + "\n", *lines[index + 1 :]])
    return text


def _merge(block: list[str], statement: str) -> list[str]:
    """`block` with `from m import x` added: into a one-line import of the same module when
    there is one (isort keeps one statement per module), names in isort's order. An import
    under an alias (`from m import x as y`) stays a statement of its own, as isort keeps it
    unless told to combine them."""
    module, _, names = statement.partition(" import ")
    aliased = " as " in names
    for index, line in enumerate(block):
        other, _, present = line.partition(" import ")
        if aliased or " as " in present:
            continue
        if other == module and "(" not in present and module.startswith("from "):
            merged = {n.strip() for n in present.split(",")} | {n.strip() for n in names.split(",")}
            block[index] = f"{module} import {', '.join(sorted(merged, key=_name_key))}"
            return block
    return [*block, statement]


def _name_key(name: str) -> tuple[int, str]:
    # isort's order by type: CONSTANTS, then Classes, then functions and modules.
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def _module(line: str) -> str:
    words = line.split()
    return words[1] if len(words) > 1 and words[0] in ("from", "import") else ""


def _import_key(line: str) -> tuple[str, str]:
    return _module(line).lower(), line


def uncomment(text: str, block: str, prefix: str = "#") -> str | None:
    """`text` with the commented-out `block` (lines each starting with `prefix`) turned on
    by removing one `prefix` per line, as kubebuilder's scaffolding does; None when the
    block is not there commented out."""
    if block not in text:
        return None
    lines = block.splitlines(keepends=True)
    if not all(line.startswith(prefix) for line in lines if line.strip()):
        return None
    enabled = "".join(line[len(prefix) :] if line.startswith(prefix) else line for line in lines)
    return text.replace(block, enabled, 1)
