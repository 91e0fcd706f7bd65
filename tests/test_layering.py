"""The package's import structure, read from the source: each layer imports only the layers
below it, and each stage of the API server only the stages below it (docs/concepts.md); no
internal module imports a public one (the root and the concept modules sit above every
layer; decision 44); and there is no import cycle anywhere, between modules or between the
packages of any one package. Every import counts: those under `if TYPE_CHECKING:` and those
made inside functions too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "src" / "kubeforge"

# Layer -> the kubeforge packages and modules its code may import (besides itself).
_BELOW_RUNTIME = {"_version", "clock", "_api", "_api.machinery", "_client", "_webhook"}
_BELOW_CLUSTER = {*_BELOW_RUNTIME, "_runtime", "_apiserver"}
ALLOWED = {
    "_api.machinery": {"_version", "clock"},
    "_api": {"_version", "clock", "_api.machinery"},
    "_apiserver": {"_version", "clock", "_api", "_api.machinery"},
    "_client": {"_version", "clock", "_api", "_api.machinery"},
    "_webhook": {"_version", "clock", "_api", "_api.machinery"},
    "_runtime": _BELOW_RUNTIME,
    "_cluster": _BELOW_CLUSTER,
    "_testing": {*_BELOW_CLUSTER, "_cluster"},
    # The console sits above the testing layer (it may use its helpers) and below the CLI.
    "_console": {*_BELOW_CLUSTER, "_cluster", "_testing"},
}

# The API server's stages, from the bottom: each imports only the stages before it (besides
# the layers `_apiserver` may import). A request meets them from `auth` down in this order
# (who asks, admission, the verb's handler, storage, types); `http` and `request` below
# them are the framing and the vocabulary every stage speaks.
APISERVER_STAGES = (
    "http",
    "request",
    "streaming",
    "webhookclient",
    "types",
    "storage",
    "printing",
    "discovery",
    "handlers",
    "admission",
    "auth",
    "controllers",
)
# The modules at the API server's root are its top: they put the stages together and may
# import every one of them.
APISERVER_TOP = ("config", "kubeconfig", "router", "server", "tls")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _parse(path: Path) -> ast.Module:
    """The module's syntax tree. CPython 3.11 before 3.11.8 can raise a spurious SystemError
    ("AST constructor recursion depth mismatch", python/cpython gh-106905) when something
    interrupts the conversion; parsing again gives the tree."""
    source = path.read_text(encoding="utf-8")
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def imported(path: Path, *, top_level_only: bool = False) -> Iterator[str]:
    """The kubeforge names a module imports: `kubeforge._api.schema`, or `kubeforge` itself for
    `import kubeforge` and `from kubeforge import X` (X not a module)."""
    tree = _parse(path)
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
    key naming one of its packages (`_api.machinery` inside `_api`), else its top package."""
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


def apiserver_part(name: str) -> str:
    """The stage of the API server `name` (a module, or a name in one) belongs to, or
    "top" for the package itself and the modules at its root."""
    part = name.split(".")[2:3]
    return part[0] if part and part[0] in APISERVER_STAGES else "top"


@pytest.mark.parametrize("stage", APISERVER_STAGES)
def test_each_apiserver_stage_imports_only_the_stages_below(stage: str) -> None:
    allowed = set(APISERVER_STAGES[: APISERVER_STAGES.index(stage) + 1])
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if module.split(".")[1:3] == ["_apiserver", stage]
        for name in imported(path)
        if name.startswith("kubeforge._apiserver") and apiserver_part(name) not in allowed
    )
    assert wrong == []


def test_every_apiserver_module_is_in_a_stage_or_at_the_top() -> None:
    top = {"kubeforge._apiserver", *(f"kubeforge._apiserver.{name}" for name in APISERVER_TOP)}
    loose = sorted(
        module
        for module in MODULES
        if module.startswith("kubeforge._apiserver")
        and apiserver_part(module) == "top"
        and module not in top
    )
    assert loose == []


def is_internal(module: str) -> bool:
    """Internal by decision 44: a part of the path starts with an underscore."""
    return any(part.startswith("_") for part in module.split("."))


def is_foundation(module: str) -> bool:
    """The public modules every layer reads: the process's clock and the generated typed
    models."""
    return module in ("kubeforge.clock", "kubeforge.models") or module.startswith(
        "kubeforge.models."
    )


def test_no_internal_module_imports_a_public_one() -> None:
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if is_internal(module)
        for name in imported(path)
        if not is_internal(owner(name)) and not is_foundation(owner(name))
    )
    assert wrong == []


def test_public_modules_import_only_internal_ones() -> None:
    # A concept module is a façade over the implementation, never over another façade.
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if not is_internal(module) and not is_foundation(module)
        for name in imported(path)
        if not is_internal(owner(name)) and not is_foundation(owner(name))
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


PACKAGES = sorted(m for m, path in MODULES.items() if path.name == "__init__.py")


def child_of(package: str, module: str) -> str | None:
    """The part of `package` that holds `module`: the package itself (its `__init__`), a
    module directly in it, or a sub-package with everything below it; None when `module`
    is outside `package`."""
    if module == package:
        return package
    if not module.startswith(package + "."):
        return None
    return f"{package}.{module[len(package) + 1 :].split('.')[0]}"


def parts_graph(package: str, modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports between the parts of `package`, from the imports between modules."""
    graph: dict[str, set[str]] = {}
    for module, names in modules.items():
        part = child_of(package, module)
        if part is None:
            continue
        targets = graph.setdefault(part, set())
        for name in names:
            other = child_of(package, name)
            if other is not None and other != part:
                targets.add(other)
                graph.setdefault(other, set())
    return graph


def test_the_api_layer_has_no_import_cycles() -> None:
    assert cycles(graph_of("kubeforge._api", top_level_only=False)) == []


def test_no_import_cycles_between_modules() -> None:
    assert cycles(graph_of("kubeforge", top_level_only=False)) == []


def test_no_import_cycles_between_the_parts_of_any_package() -> None:
    modules = graph_of("kubeforge", top_level_only=False)
    found = {
        package: found for package in PACKAGES if (found := cycles(parts_graph(package, modules)))
    }
    assert found == {}


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_packages_whose_modules_import_each_other_both_ways_are_a_cycle() -> None:
    modules = {
        "p.x.one": {"p.y.two"},
        "p.y.two": set(),
        "p.y.three": {"p.x"},
        "p.x": set(),
        "p.z": {"p.x.one"},
    }
    assert cycles(parts_graph("p", modules)) == [["p.x", "p.y"]]
    assert cycles(parts_graph("p.x", modules)) == []
