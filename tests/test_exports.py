"""The lazily exported names of `kubeforge`, `kubeforge.testing`, `kubeforge.cluster` and
`kubeforge.apiserver`: the names that load on first use, the imports type checkers read and
`__all__` name the same objects."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import kubeforge
import kubeforge.apiserver
import kubeforge.cluster
import kubeforge.testing

PACKAGES = [kubeforge, kubeforge.testing, kubeforge.cluster, kubeforge.apiserver]


def type_checking_imports(package: ModuleType) -> dict[str, str]:
    """Name -> module of the imports under `if TYPE_CHECKING:` in the package's __init__."""
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1
    imports: dict[str, str] = {}
    for statement in blocks[0].body:
        assert isinstance(statement, ast.ImportFrom) and statement.module, ast.dump(statement)
        for alias in statement.names:
            # Only `name as name` re-exports a name under mypy --strict.
            assert alias.asname == alias.name, (statement.module, alias.name)
            assert alias.name not in imports, f"{alias.name} imported twice"
            imports[alias.name] = statement.module
    return imports


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_lazy_names_and_type_checking_imports_match(package: ModuleType) -> None:
    lazy: dict[str, str] = package._EXPORTS
    assert type_checking_imports(package) == lazy
    assert set(package.__all__) - {"__version__"} == set(lazy)
    assert len(package.__all__) == len(set(package.__all__))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_lazy_name_resolves_to_its_module_s_object(package: ModuleType) -> None:
    for name, module in package._EXPORTS.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(dir(package)) == set(package.__all__)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        _ = package.NoSuchName


def test_importing_the_packages_loads_none_of_the_exported_modules() -> None:
    code = (
        "import sys, kubeforge, kubeforge.testing, kubeforge.cluster, kubeforge.apiserver\n"
        "loaded = sorted(k for k in sys.modules if k.startswith('kubeforge'))\n"
        "assert loaded == ['kubeforge', 'kubeforge._lazyload', 'kubeforge._version',"
        " 'kubeforge.apiserver', 'kubeforge.cluster', 'kubeforge.testing'], loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
