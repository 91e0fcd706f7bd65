"""Loading a kubebuilder-layout project: its resources, reconcilers, RBAC rules and setup().

    project/
      api/v1alpha1/machine.py     @kubeforge.resource classes
      controllers/machine.py      reconcilers, with @rbac rules
      webhooks/machine.py         defaulters, validators and handlers (optional)
      main.py                     def setup(manager: kubeforge.Manager) -> None
      config/                     generated and kustomize files

The project's packages are imported with its root first on sys.path, as `python main.py`
would see them (`from api.v1alpha1 import Machine`), and what it depends on from kubeforge's
environment and then the project's `.venv` (_cluster/projectenv.py).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import re
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import typer

from kubeforge._api.meta import GroupVersionKind, ResourceInfo
from kubeforge._api.rbac import RbacRule, rules_of
from kubeforge._api.resource import pluralize
from kubeforge._cluster.projectenv import VENV, ProjectEnvironment, ProjectEnvironmentError

__all__ = [
    "Project",
    "ProjectError",
    "WatchedKind",
    "check_environment",
    "fail",
    "load_project",
    "open_project",
]

# The project's top-level module names; several projects may be loaded one after another.
_PACKAGES = ("api", "controllers", "webhooks")
_MAIN = "main"

Setup = Callable[[Any], Any]


class ProjectError(Exception):
    """The project cannot be loaded; the message names the file at fault."""


@dataclass(frozen=True, slots=True)
class WatchedKind:
    """A kind the project's controllers watch, with the resource that serves it."""

    group: str
    version: str
    kind: str
    plural: str
    resolved: bool = True  # False: the plural was guessed from the kind
    sharded: bool = False  # in a sharded controller's ring: its objects' labels are patched

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass
class Project:
    """What a project defines: resource classes, reconcilers and its `setup` function."""

    root: Path
    name: str
    resources: list[type[Any]]
    reconcilers: list[type[Any]]
    setup: Setup
    main_file: Path
    _watched: list[WatchedKind] | None = field(default=None, repr=False)
    _offline: Any = field(default=None, repr=False)

    @property
    def rules(self) -> list[RbacRule]:
        """Every @rbac rule of the project's reconcilers, each once, in declaration order."""
        seen: dict[RbacRule, None] = {}
        for cls in self.reconcilers:
            for rule in rules_of(cls):
                seen.setdefault(rule, None)
        return list(seen)

    def call_setup(self, manager: Any) -> Awaitable[Any] | None:
        """Call setup(manager) (ProjectError naming the line if it raises); an async setup's
        awaitable is returned for the caller to await."""
        try:
            result = self.setup(manager)
        except Exception as exc:
            raise self.setup_error(exc) from None
        return result if inspect.isawaitable(result) else None

    def setup_error(self, exc: BaseException) -> ProjectError:
        """The ProjectError for an exception raised by setup(manager)."""
        where = _blame(exc, self.root, _show(self.main_file))
        return ProjectError(f"{where}: setup(manager) failed: {_describe(exc)}")

    def watched_kinds(self) -> list[WatchedKind]:
        """The kinds setup()'s controllers watch (for_, owns, watches), learned offline."""
        if self._watched is None:
            self._watched = _watched_kinds(self)
        return list(self._watched)

    def webhooks(self) -> list[Any]:
        """The webhooks setup() registers (RegisteredWebhook: path, spec ...), learned
        offline."""
        hooks: list[Any] = self.offline_manager().webhook_server.webhooks
        return hooks

    def offline_manager(self) -> Any:
        """A Manager that setup(manager) has configured, connected to no cluster."""
        if self._offline is None:
            self._offline = _offline_manager(self)
        return self._offline


def load_project(root: str | os.PathLike[str]) -> Project:
    """Import the project at `root` and collect what it defines (ProjectError if it cannot)."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ProjectError(f"{root}: no such directory")
    if not (base / "api").is_dir():
        raise ProjectError(f"{root}: no api/ directory here; is it the project root?")
    main_file = base / "main.py"
    if not main_file.is_file():
        raise ProjectError(f"{_show(main_file)}: missing; it defines setup(manager)")

    try:
        environment = ProjectEnvironment.of(base)
    except ProjectEnvironmentError as exc:
        raise ProjectError(str(exc)) from None
    _purge()
    importlib.invalidate_caches()
    saved_path = list(sys.path)
    sys.path.insert(0, str(base))
    environment.activate()
    try:
        api_modules = [_import(name, base) for name in _module_names(base, "api")]
        controller_modules = [_import(name, base) for name in _module_names(base, "controllers")]
        for name in _module_names(base, "webhooks"):
            _import(name, base)
        main = _import(_MAIN, base)
    finally:
        sys.path[:] = saved_path

    setup = getattr(main, "setup", None)
    if not callable(setup):
        raise ProjectError(f"{_show(main_file)}: defines no setup(manager) function")
    resources = [
        cls
        for cls in _classes(api_modules)
        if isinstance(vars(cls).get("__kubeforge__"), ResourceInfo)
    ]
    # A small project may keep its reconciler in main.py.
    reconcilers = [cls for cls in _classes([*controller_modules, main]) if _is_reconciler(cls)]
    return Project(
        root=base,
        name=_project_name(base),
        resources=resources,
        reconcilers=reconcilers,
        setup=setup,
        main_file=main_file,
    )


# importing -----------------------------------------------------------------------------------


def _purge() -> None:
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if top in _PACKAGES or name == _MAIN:
            del sys.modules[name]


def _module_names(base: Path, package: str) -> list[str]:
    """Module names of every .py file under base/package (packages before their modules)."""
    top = base / package
    if not top.is_dir():
        return []
    names = {package}
    for dirpath, dirnames, filenames in os.walk(top):
        # Only directories that can be packages; skip caches and hidden folders.
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier())
        rel = Path(dirpath).relative_to(base).parts
        for filename in filenames:
            stem, ext = os.path.splitext(filename)
            if ext != ".py" or not stem.isidentifier() or _is_test(stem):
                continue
            parts = rel if stem == "__init__" else (*rel, stem)
            names.add(".".join(parts))
    return sorted(names)


def _is_test(stem: str) -> bool:
    # Tests kept next to the code import test tooling; they are not part of the program.
    return stem == "conftest" or stem.startswith("test_") or stem.endswith("_test")


def _import(name: str, base: Path) -> ModuleType:
    try:
        module = importlib.import_module(name)
    except SyntaxError as exc:
        where = _show(Path(exc.filename)) if exc.filename else name
        raise ProjectError(f"{where}:{exc.lineno}: syntax error: {exc.msg}") from None
    except ModuleNotFoundError as exc:
        hint = ""
        if (exc.name or "").partition(".")[0] not in (*_PACKAGES, _MAIN):
            hint = (
                " (a project's dependencies come from kubeforge's environment and then the "
                f"project's {VENV}: install it there)"
            )
        raise ProjectError(f"{_blame(exc, base, name)}: {_describe(exc)}{hint}") from None
    except Exception as exc:
        raise ProjectError(f"{_blame(exc, base, name)}: {_describe(exc)}") from None
    # A directory without __init__.py loses to an installed package of the same name.
    places = [getattr(module, "__file__", None), *getattr(module, "__path__", ())]
    if not any(p and Path(p).resolve().is_relative_to(base) for p in places):
        found = next((p for p in places if p), "elsewhere")
        raise ProjectError(
            f"{_show(base / name.replace('.', '/'))}: module {name!r} was imported from "
            f"{found} instead; add an __init__.py to the project's {name.partition('.')[0]}/"
        )
    return module


def _blame(exc: BaseException, base: Path, fallback: str) -> str:
    """`file:line` of the innermost traceback frame inside the project."""
    where = fallback
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        if path.is_absolute() and path.is_relative_to(base):
            where = f"{_show(path)}:{frame.lineno}"
    return where


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _show(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _classes(modules: list[ModuleType]) -> Iterator[type[Any]]:
    """Classes defined (not merely imported) in `modules`, in definition order, each once."""
    seen: set[type[Any]] = set()
    for module in modules:
        for value in vars(module).values():
            defined_here = isinstance(value, type) and value.__module__ == module.__name__
            if defined_here and value not in seen:
                seen.add(value)
                yield value


def _is_reconciler(cls: type[Any]) -> bool:
    from kubeforge._runtime.reconcile import Reconciler, SyncReconciler

    if cls in (Reconciler, SyncReconciler):
        return False
    return issubclass(cls, Reconciler | SyncReconciler) or bool(rules_of(cls))


def _project_name(base: Path) -> str:
    """The PROJECT file's projectName, or the directory name, as a label value."""
    name = base.name
    project_file = base / "PROJECT"
    if project_file.is_file():
        for line in project_file.read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "projectName" and value.strip():
                name = value.strip().strip("'\"")
                break
    label = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")[:63].rstrip("-.")
    return label or "project"


# watched kinds -------------------------------------------------------------------------------


def _offline_manager(project: Project) -> Any:
    from kubeforge._client.config import ClusterConfig
    from kubeforge._runtime.manager import Manager

    # The manager connects only when started: setup() can run without a cluster.
    manager = Manager(ClusterConfig(server="https://127.0.0.1:1"))
    pending = project.call_setup(manager)
    if pending is not None:
        try:
            asyncio.run(_wait(pending))
        except Exception as exc:
            raise project.setup_error(exc) from None
    return manager


def _watched_kinds(project: Project) -> list[WatchedKind]:
    from kubeforge._runtime.cache import kind_key
    from kubeforge._runtime.sharding.ring import ShardRing

    manager = project.offline_manager()
    resolver = _KindResolver(project.resources)
    kinds: dict[tuple[str, str, str], WatchedKind] = {}
    for controller in manager.controllers.values():
        ring = controller.started_by if isinstance(controller.started_by, ShardRing) else None
        sharded = {str(k.gvk) for k in ring.kinds} if ring is not None else set()
        for informer in controller.informers:
            watched = resolver.resolve(informer.kind)
            key = (watched.group, watched.version, watched.kind)
            if kind_key(informer.kind) in sharded:
                watched = replace(watched, sharded=True)
            if key not in kinds or watched.sharded:
                kinds[key] = watched
    return sorted(kinds.values(), key=lambda w: (w.group, w.plural, w.version))


async def _wait(awaitable: Any) -> None:
    await awaitable


class _KindResolver:
    """Plurals for kinds named by class, GroupVersionKind or `apiVersion/Kind` string."""

    def __init__(self, resources: list[type[Any]]) -> None:
        self._exact: dict[tuple[str, str, str], str] = {}
        self._any_version: dict[tuple[str, str], str] = {}
        for cls in resources:
            info: ResourceInfo = vars(cls)["__kubeforge__"]
            self._add(info.gvk.group, info.gvk.version, info.gvk.kind, info.plural)
        self._builtins_loaded = False

    def _add(self, group: str, version: str, kind: str, plural: str) -> None:
        self._exact.setdefault((group, version, kind), plural)
        self._any_version.setdefault((group, kind), plural)

    def _load_builtins(self) -> None:
        from kubeforge._apiserver.types.builtin_types import builtin_types

        for resource in builtin_types():
            self._add(resource.group, resource.version, resource.kind, resource.plural)
        self._builtins_loaded = True

    def resolve(self, kind: Any) -> WatchedKind:
        info = getattr(kind, "__kubeforge__", None)
        if isinstance(info, ResourceInfo):
            gvk = info.gvk
            return WatchedKind(gvk.group, gvk.version, gvk.kind, info.plural)
        gvk = kind if isinstance(kind, GroupVersionKind) else GroupVersionKind.parse(str(kind))
        plural = self._lookup(gvk)
        if plural is None and not self._builtins_loaded:
            self._load_builtins()
            plural = self._lookup(gvk)
        if plural is None:
            return WatchedKind(gvk.group, gvk.version, gvk.kind, pluralize(gvk.kind), False)
        return WatchedKind(gvk.group, gvk.version, gvk.kind, plural)

    def _lookup(self, gvk: GroupVersionKind) -> str | None:
        return self._exact.get((gvk.group, gvk.version, gvk.kind)) or self._any_version.get(
            (gvk.group, gvk.kind)
        )


# for commands ------------------------------------------------------------------------------


def fail(message: str) -> typer.Exit:
    """Print `error: message` to stderr; raise the returned Exit (status 1)."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(1)


def check_environment(root: Path) -> None:
    """End the command when the project's environment cannot be used (a .venv of another
    Python version), before it writes anything."""
    try:
        ProjectEnvironment.of(root)
    except ProjectEnvironmentError as exc:
        raise fail(str(exc)) from None


def open_project(directory: str | os.PathLike[str]) -> Project:
    """load_project for commands: a project that cannot be loaded ends the command."""
    try:
        return load_project(directory)
    except ProjectError as exc:
        raise fail(str(exc)) from None
