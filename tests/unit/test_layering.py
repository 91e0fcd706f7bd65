"""The package's import structure, read from the source: each layer imports only the layers
below it (docs/concepts.md), no module below the root imports the root package, and the
pure `api` layer has no import cycles, even through imports made inside functions."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kubeforge"

# Layer -> the kubeforge packages and modules its code may import (besides itself).
ALLOWED = {
    "api.machinery": {"_version"},
    "api": {"_version", "api.machinery"},
    "apiserver": {"_version", "api", "api.machinery"},
    "client": {"_version", "api", "api.machinery"},
    "webhook": {"_version", "api", "api.machinery"},
    "runtime": {"_version", "api", "api.machinery", "client", "webhook"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, *, top_level_only: bool = False) -> Iterator[str]:
    """The kubeforge names a module imports: `kubeforge.api.schema`, or `kubeforge` itself for
    `import kubeforge` and `from kubeforge import X` (X not a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("kubeforge"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parents, *([base] if base else [])])
            if base != "kubeforge" and not base.startswith("kubeforge."):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield full if full in MODULES else base


def owner(name: str) -> str:
    """The module of MODULES that `name` (a module or a name in one) is."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def layer_of(name: str) -> str:
    """The layer of ALLOWED that a kubeforge module (or a name in one) belongs to: the longest
    key naming one of its packages (`api.machinery` inside `api`), else its top package."""
    parts = name.split(".")[1:]
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in ALLOWED:
            return ".".join(parts[:end])
    return parts[0] if parts else ""


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below(layer: str) -> None:
    allowed = {layer, *ALLOWED[layer]}
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if layer_of(module) == layer
        for name in imported(path)
        if name == "kubeforge" or layer_of(name) not in allowed
    )
    assert wrong == []


def test_no_module_below_the_root_imports_the_root_package() -> None:
    wrong = sorted(
        module
        for module, path in MODULES.items()
        if module != "kubeforge" and "kubeforge" in set(imported(path))
    )
    assert wrong == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def graph_of(prefix: str, *, top_level_only: bool) -> dict[str, set[str]]:
    members = {m: p for m, p in MODULES.items() if m == prefix or m.startswith(prefix + ".")}
    return {
        module: {
            owner(name)
            for name in imported(path, top_level_only=top_level_only)
            if owner(name) in members and owner(name) != module
        }
        for module, path in members.items()
    }


def test_the_api_layer_has_no_import_cycles() -> None:
    assert cycles(graph_of("kubeforge.api", top_level_only=False)) == []


def test_no_module_level_import_cycles() -> None:
    assert cycles(graph_of("kubeforge", top_level_only=True)) == []


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
