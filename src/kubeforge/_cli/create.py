"""`kubeforge create api` and `kubeforge create webhook`: a kind, its controller, its webhooks.

Each command checks every name and the PROJECT file before it writes anything; an error is
one line and leaves the project as it was. Files it would create that exist already are
skipped (the project's code is never overwritten) and said so; files it edits (main.py,
kustomizations, PROJECT) get an insertion at a marker comment, once. The manifests are
regenerated at the end, as `kubeforge manifests` would.
"""

from __future__ import annotations

import keyword
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from kubeforge._cli.files import Files
from kubeforge._cli.init import boilerplate_header
from kubeforge._cli.manifests import certmanager_comment, generate
from kubeforge._cli.project import ProjectError, check_environment, fail, load_project
from kubeforge._scaffold.e2e import E2E_WEBHOOK_TESTS, add_checks, webhook_checks
from kubeforge._scaffold.layout import Placement, placement
from kubeforge._scaffold.names import InvalidName, ResourceNames
from kubeforge._scaffold.projectfile import ProjectFile, ProjectFileError
from kubeforge._scaffold.render import (
    import_at_marker,
    import_kubeforge_module,
    insert_at_marker,
    render,
    uncomment,
)
from kubeforge._scaffold.webhookfile import (
    LINE_LENGTH,
    add_classes,
    add_registrations,
    add_tests,
    registration,
)

__all__ = ["app"]

app = typer.Typer(
    help="Scaffold a kind (create api) or its webhooks (create webhook).",
    no_args_is_help=True,
)

IMPORTS = "# +kubeforge:scaffold:imports"
BUILDER = "# +kubeforge:scaffold:builder"
EXPORTS = "# +kubeforge:scaffold:exports"
SAMPLES = "# +kubeforge:scaffold:manifestskustomizesamples"

DirOption = Annotated[
    Path, typer.Option("--dir", help="The project root (holds PROJECT and main.py).")
]
GroupOption = Annotated[str, typer.Option(help="The API group, without the domain (e.g. ship).")]
VersionOption = Annotated[str, typer.Option(help="The API version (e.g. v1, v1alpha1, v2beta1).")]
KindOption = Annotated[str, typer.Option(help="The kind, in PascalCase (e.g. Frigate).")]


@dataclass
class _Context:
    """The project a create command works on."""

    root: Path
    project: ProjectFile
    names: ResourceNames
    place: Placement
    files: Files
    values: dict[str, str]
    python: list[Path]  # Python files written, formatted at the end

    def path(self, relative: str) -> Path:
        return self.root / relative

    def edit(self, relative: str, change: Any, what: str) -> bool:
        """Apply `change(text) -> text | None` to a file; a change that cannot be made (the
        file or its marker is gone) is reported with what to do by hand."""
        path = self.path(relative)
        if not path.is_file():
            self.files._report("skipped", path, f" (missing; {what} yourself)")
            return False
        text = path.read_text(encoding="utf-8")
        changed = change(text)
        if changed is None:
            self.files._report("skipped", path, f" (marker not found; {what} yourself)")
            return False
        self.files.update(path, changed)
        if relative.endswith(".py"):
            self.python.append(path)
        return True

    def edit_or_create(
        self, relative: str, create: Callable[[], str], change: Any, what: str
    ) -> bool:
        """`edit`, or, when the file is missing, write `create()` with the change made."""
        if self.path(relative).exists():
            return self.edit(relative, change, what)
        changed = change(create())
        if changed is None:  # the template lacks the marker: a bug, not the user's edit
            raise RuntimeError(f"{relative}: cannot {what}")
        return self.scaffold(relative, changed)

    def scaffold(self, relative: str, content: str) -> bool:
        written = self.files.scaffold(self.path(relative), content)
        if written and relative.endswith(".py"):
            self.python.append(self.path(relative))
        return written


def _open(directory: Path, group: str, version: str, kind: str, **extra: Any) -> _Context:
    root = directory.resolve()
    try:
        project = ProjectFile.load(root)
    except ProjectFileError as exc:
        raise fail(str(exc)) from None
    if not (root / "main.py").is_file():
        raise fail(f"{root}: no main.py here; is it the project root?")
    check_environment(root)  # the manifests, generated at the end, import the project
    try:
        names = ResourceNames.of(
            group=group, domain=project.domain, version=version, kind=kind, **extra
        )
    except InvalidName as exc:
        raise fail(str(exc)) from None
    lower = names.module
    namespaced = names.namespaced
    place = placement(project, names.group, kind)
    values = {
        "header": boilerplate_header(root),
        "project_name": project.project_name,
        "qualified_group": names.qualified_group,
        "group": names.group,
        "version": version,
        "kind": kind,
        "lower_kind": lower,
        "plural": names.plural,
        "var": lower + "_" if keyword.iskeyword(lower) else lower,
        "api_module": place.api_package(version),
        "api_parent": place.api_parent,
        "api_parent_dir": place.api_parent.replace(".", "/"),
        "role_prefix": place.role_prefix,
        "sample_namespace": ', namespace="default"' if namespaced else "",
    }
    return _Context(root, project, names, place, Files(root, brief=True), values, [])


def _finish(ctx: _Context) -> None:
    """PROJECT, formatting, manifests."""
    ctx.files.update(ctx.path("PROJECT"), ctx.project.render())
    _format(ctx.python)
    try:
        generate(load_project(ctx.root), ctx.files)
    except ProjectError as exc:
        raise fail(f"{exc} (the files above were written)") from None


def _format(paths: list[Path]) -> None:
    """Format the new Python files with ruff when the environment has it, so that names
    longer than the templates' lines still give `ruff format --check`-clean code."""
    if not paths:
        return
    try:
        subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--quiet", *map(str, paths)],
            check=False,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        pass


# create api ---------------------------------------------------------------------------------


@app.command("api")
def create_api(
    group: GroupOption = "",
    version: VersionOption = "",
    kind: KindOption = "",
    resource: Annotated[
        bool, typer.Option("--resource/--no-resource", help="Scaffold the API type.")
    ] = True,
    controller: Annotated[
        bool, typer.Option("--controller/--no-controller", help="Scaffold the controller.")
    ] = True,
    namespaced: Annotated[
        bool,
        typer.Option("--namespaced/--cluster", help="Namespaced objects, or cluster-scoped."),
    ] = True,
    plural: Annotated[
        str | None, typer.Option(help="The resource's plural name (default: from the kind).")
    ] = None,
    directory: DirOption = Path("."),
) -> None:
    """Scaffold a kind: its API type, controller, sample, roles and test; registers the
    controller in main.py and regenerates the manifests."""
    if not resource and not controller:
        raise fail("nothing to scaffold: --no-resource and --no-controller")
    ctx = _open(directory, group, version, kind, plural=plural, namespaced=namespaced)
    names = ctx.names
    _check_files_free(ctx)
    entry = ctx.project.find(names.group, version, kind)
    if resource and entry is not None and entry.get("api"):
        raise fail(
            f"{kind} already exists in {names.api_version} (PROJECT); "
            "use --no-resource to add only a controller"
        )
    if not resource and (entry is None or not entry.get("api")):
        raise fail(f"no {kind} in {names.api_version} in this project; scaffold it with --resource")
    if controller and entry is not None and entry.get("controller"):
        raise fail(f"{kind} in {names.api_version} already has a controller (PROJECT)")
    controlled = [
        e.get("version")
        for e in ctx.project.versions_of(names.group, kind)
        if e.get("controller") and e.get("version") != version
    ]
    if controller and controlled:
        # One controller per kind: it reconciles every version through the stored one.
        raise fail(
            f"{kind} already has a controller (in {', '.join(map(str, controlled))}); "
            f"add {version} with --no-controller"
        )
    if entry is not None and plural is None and entry.get("plural"):
        ctx.names = names = ResourceNames.of(
            group=group,
            domain=ctx.project.domain,
            version=version,
            kind=kind,
            plural=entry["plural"],
            namespaced=namespaced,
        )
        ctx.values["plural"] = names.plural

    if resource:
        other_versions = [
            e for e in ctx.project.versions_of(names.group, kind) if e.get("version") != version
        ]
        _scaffold_resource(ctx, storage=not other_versions)
    if controller:
        _scaffold_controller(ctx)

    if entry is None:
        entry = {}
        ctx.project.resources.append(entry)
    if resource:
        entry["api"] = {"crdVersion": "v1", "namespaced": names.namespaced}
    if controller:
        entry["controller"] = True
    entry.update(
        {
            "domain": ctx.project.domain,
            "group": names.group,
            "kind": kind,
            "path": entry.get("path") or ctx.place.api_dir(version),
            "version": version,
        }
    )
    if not ctx.project.domain:
        entry.pop("domain")
    if not names.default_plural:
        entry["plural"] = names.plural
    _finish(ctx)
    typer.echo(
        f"Next: edit {ctx.place.api_dir(version)}/{names.module}.py, then `make manifests` and "
        "`make test`"
    )


def _check_files_free(ctx: _Context) -> None:
    """Refuse a kind whose files would be another kind's. In the single-group layout a
    kind's modules, test and roles are named by its lowercase kind alone
    (api/<version>/<kind>.py, controllers/<kind>.py, tests/test_<kind>.py,
    config/rbac/<kind>_*_role.yaml), so the same kind in another group, or a kind spelled
    alike (Cronjob, CronJob), would write nothing of its own; the multigroup layout
    (kubeforge._scaffold.layout) keeps each group's kinds apart. kubebuilder refuses any
    second group outside that layout (pkg/plugins/golang/v4/api.go); here a kind's group is
    its class's, not its package's, so kinds of other names may be in another group (their
    files do not meet) and only a clash is refused."""
    names, place = ctx.names, ctx.place
    for entry in ctx.project.resources:
        other, group = str(entry.get("kind", "")), str(entry.get("group", ""))
        if (other, group) == (names.kind, names.group):
            continue
        theirs = placement(ctx.project, group, other)
        qualified = ".".join(part for part in (group, ctx.project.domain) if part)
        if place.grouped and theirs.package == place.package and group != names.group:
            raise fail(
                f"group {names.qualified_group} would share the directories of group "
                f"{qualified} ({place.api_parent.replace('.', '/')}/, "
                f"{place.controller_package.replace('.', '/')}/): their names differ only in "
                "characters a package name cannot hold"
            )
        if theirs.module != place.module or theirs.package != place.package:
            continue
        files = (
            f"{place.api_parent.replace('.', '/')}/<version>/{place.module}.py, "
            f"{place.controller_module.replace('.', '/')}.py"
        )
        if group != names.group:
            hint = (
                ""
                if ctx.project.multigroup
                else "; `kubeforge edit --multigroup` gives each group its own directories "
                "(api/<group>/<version>/)"
            )
            raise fail(
                f"{other} exists in group {qualified or '(core)'} already (PROJECT): a kind's "
                f"files ({files}) are named by the kind alone in the single-group layout{hint}"
            )
        raise fail(f"{names.kind} would share the files of {other} ({files}); choose another kind")


# What each of a group's packages holds, for its __init__.py's docstring.
_GROUP_PACKAGES = {
    "api": ("API types", "one package per version"),
    "controllers": ("controllers", "one module per kind"),
    "tests": ("tests", "one module per kind"),
    "webhooks": ("webhooks", "one package per version"),
}


def _scaffold_group_packages(ctx: _Context, *tops: str) -> None:
    """The group's packages under `tops` (api, controllers, tests, webhooks) in the
    multigroup layout, each with its __init__.py, written once."""
    if not ctx.place.grouped:
        return
    for top in tops:
        path = f"{top}/{ctx.place.package}/__init__.py"
        if not ctx.path(path).exists():
            what, layout = _GROUP_PACKAGES[top]
            values = {**ctx.values, "what": what, "layout": layout}
            ctx.scaffold(path, render("api/group_init.py", values))


def _scaffold_resource(ctx: _Context, *, storage: bool) -> None:
    names, values = ctx.names, ctx.values
    options = []
    if not names.namespaced:
        options.append('scope="Cluster"')
    if not names.default_plural:
        options.append(f'plural="{names.plural}"')
    if not storage:
        # Another version of the kind is stored; this one is served and converted.
        options.append("storage=False")
    resource_values = {**values, "resource_options": "".join(", " + o for o in options)}
    _scaffold_group_packages(ctx, "api")
    version_dir = ctx.place.api_dir(names.version)
    ctx.scaffold(f"{version_dir}/{names.module}.py", render("api/types.py", resource_values))
    exported = [names.kind, f"{names.kind}Spec", f"{names.kind}Status"]
    statement = f"from {values['api_module']}.{names.module} import {', '.join(exported)}"
    ctx.edit_or_create(
        f"{version_dir}/__init__.py",
        lambda: render("api/version_init.py", values),
        lambda text: _export(import_at_marker(text, IMPORTS, statement), exported),
        f"add `{statement}` and export the names",
    )

    sample = f"config/samples/{names.sample_file}"
    ctx.scaffold(sample, render("api/sample.yaml", values))
    ctx.edit_or_create(
        "config/samples/kustomization.yaml",
        lambda: render("api/samples_kustomization.yaml", values),
        lambda text: insert_at_marker(text, SAMPLES, f"- {names.sample_file}"),
        f"list {names.sample_file} in its resources",
    )

    roles = [f"{ctx.place.role_stem}_{role}_role.yaml" for role in ("admin", "editor", "viewer")]
    for role, file in zip(("admin", "editor", "viewer"), roles, strict=True):
        ctx.scaffold(f"config/rbac/{file}", render(f"api/rbac/{role}_role.yaml", values))
    ctx.edit(
        "config/rbac/kustomization.yaml",
        lambda text: _add_roles(text, roles, ctx.project.project_name),
        f"list {', '.join(roles)} in its resources",
    )
    ctx.edit(
        "config/default/kustomization.yaml",
        lambda text: uncomment(text, "#- ../crd\n") or _already(text, "- ../crd\n"),
        "add ../crd to its resources",
    )


def _scaffold_controller(ctx: _Context) -> None:
    names, values, place = ctx.names, ctx.values, ctx.place
    _scaffold_group_packages(ctx, "controllers", "tests")
    module = place.controller_module.replace(".", "/") + ".py"
    ctx.scaffold(module, render("api/controller.py", values))
    test = f"{place.tests_dir}/test_{names.module}.py"
    ctx.scaffold(test, render("api/controller_test.py", values))
    kind = names.kind
    if place.grouped:
        # Modules under aliases naming the group, as kubebuilder's cmd/main.go imports
        # `shipv1` and `shipcontroller`: the same Kind may come from two groups.
        api, controllers = place.alias(names.version), place.alias(names.module)
        imports = [
            f"from {place.api_parent} import {names.version} as {api}",
            f"from {place.controller_package} import {names.module} as {controllers}",
        ]
        registration = _controller_registration(
            f"{api}.{kind}", f"{controllers}.{kind}Reconciler", place.controller_name
        )
    else:
        imports = [
            f"from {values['api_module']} import {kind}",
            f"from {place.controller_module} import {kind}Reconciler",
        ]
        registration = _controller_registration(kind, f"{kind}Reconciler", None)

    def register(text: str) -> str | None:
        for statement in imports:
            changed = import_at_marker(text, IMPORTS, statement)
            if changed is None:
                return None
            text = changed
        return insert_at_marker(text, BUILDER, registration)

    ctx.edit("main.py", register, f"register {kind}Reconciler in setup()")


def _controller_registration(kind: str, reconciler: str, name: str | None) -> str:
    """The statement of setup() registering a controller, split as ruff formats it when
    it is longer than a line."""
    named = f'.named("{name}")' if name else ""
    head = f"    manager.controller(){named}.for_({kind}).complete("
    if len(head) + len(reconciler) + 3 <= LINE_LENGTH:
        return f"{head}{reconciler}())\n"
    return f"{head}\n        {reconciler}()\n    )\n"


def _export(text: str | None, names: list[str]) -> str | None:
    """Add `names` to the `__all__` list that ends with the exports marker, sorted."""
    if text is None:
        return None
    pattern = r"__all__ = \[\n(?P<body>(?:.*\n)*?)(?P<marker>[ \t]*" + re.escape(EXPORTS) + r"\n)"
    match = re.search(pattern, text)
    if match is None:
        return None
    present = re.findall(r'"([^"]+)"', match.group("body"))
    entries = sorted(set(present) | set(names))
    body = "".join(f'    "{name}",\n' for name in entries)
    return text[: match.start("body")] + body + text[match.start("marker") :]


def _add_roles(text: str, roles: list[str], project: str) -> str:
    """config/rbac/kustomization.yaml with the kind's helper roles listed (once)."""
    comment = (
        "# Helper roles for each kind (admin, editor, viewer), for cluster administrators to\n"
        f"# grant to users; {project} itself does not use them. Leave them out if not wanted.\n"
    )
    missing = [role for role in roles if f"- {role}" not in text]
    if not missing:
        return text
    if comment not in text:
        text = text.rstrip("\n") + "\n" + comment
    return text.rstrip("\n") + "\n" + "".join(f"- {role}\n" for role in missing)


def _already(text: str, line: str) -> str | None:
    """`text` when it has `line` already (a section turned on before), else None."""
    return text if any(ln + "\n" == line for ln in text.splitlines()) else None


# create webhook -----------------------------------------------------------------------------


@app.command("webhook")
def create_webhook(
    group: GroupOption = "",
    version: VersionOption = "",
    kind: KindOption = "",
    defaulting: Annotated[
        bool, typer.Option("--defaulting", help="A defaulting (mutating) webhook.")
    ] = False,
    validation: Annotated[
        bool,
        typer.Option("--programmatic-validation", help="A validating webhook."),
    ] = False,
    conversion: Annotated[
        bool,
        typer.Option(
            "--conversion", help="A conversion webhook (this version is the hub; see --spoke)."
        ),
    ] = False,
    spoke: Annotated[
        list[str] | None,
        typer.Option(help="With --conversion: a version converted to and from the hub."),
    ] = None,
    directory: DirOption = Path("."),
) -> None:
    """Scaffold a kind's webhooks: the defaulter and validator skeletons, their registration
    in main.py, their test, and the kustomize wiring (webhook, cert-manager)."""
    if not (defaulting or validation or conversion):
        raise fail(
            "say which webhooks: --defaulting, --programmatic-validation and/or --conversion"
        )
    ctx = _open(directory, group, version, kind)
    names = ctx.names
    entry = ctx.project.find(names.group, version, kind)
    if entry is None or not entry.get("api"):
        raise fail(
            f"no {kind} in {names.api_version} in this project; "
            f"create it first with `kubeforge create api`"
        )
    if entry.get("plural"):
        ctx.values["plural"] = entry["plural"]
    namespaced = bool((entry.get("api") or {}).get("namespaced", True))
    ctx.values["sample_namespace"] = ', namespace="default"' if namespaced else ""
    hooks = dict(entry.get("webhooks") or {})
    if defaulting and hooks.get("defaulting"):
        raise fail(f"{kind} in {names.api_version} already has a defaulting webhook (PROJECT)")
    if validation and hooks.get("validation"):
        raise fail(f"{kind} in {names.api_version} already has a validating webhook (PROJECT)")
    if conversion and hooks.get("conversion"):
        raise fail(f"{kind} in {names.api_version} already has a conversion webhook (PROJECT)")
    if conversion:
        _check_conversion(ctx, spoke or [])

    if defaulting or validation:
        _scaffold_admission(ctx, defaulting=defaulting, validation=validation)
        _enable_webhook_config(ctx, defaulting=defaulting, validation=validation)
    if conversion:
        _scaffold_conversion(ctx, spoke or [])
    _add_e2e_checks(
        ctx, defaulting=defaulting, validation=validation, spokes=(spoke or []) * conversion
    )

    if defaulting:
        hooks["defaulting"] = True
    if validation:
        hooks["validation"] = True
    if conversion:
        hooks["conversion"] = True
        hooks["spoke"] = sorted(set(hooks.get("spoke") or []) | set(spoke or []))
    hooks["webhookVersion"] = "v1"
    entry["webhooks"] = hooks
    _finish(ctx)
    if conversion:
        # The manifests just wrote the CRD's conversion patches.
        _enable_crd_ca_injection(ctx)


def _scaffold_admission(ctx: _Context, *, defaulting: bool, validation: bool) -> None:
    """The version's webhook module and its test, written, or (when the version has a
    webhook module already, e.g. a defaulter or the conversion) given the new classes."""
    names, values = ctx.names, ctx.values
    kind, version, module = names.kind, names.version, names.module
    webhook_module = f"{ctx.place.webhook_package(version)}.{module}"
    classes = [f"{kind}Defaulter"] * defaulting + [f"{kind}Validator"] * validation
    calls = [f".defaulter({kind}Defaulter())"] * defaulting + [
        f".validator({kind}Validator())"
    ] * validation
    hook_values = {
        **values,
        "webhook_module": webhook_module,
        "classes": ", ".join(classes),
        "registration": registration(kind, calls),
    }
    _scaffold_webhook_packages(ctx, version)

    added = ""
    tests = ""
    if defaulting:
        added += render("webhook/defaulter.py", {**hook_values, **_webhook_name(ctx, "m")})
        tests += render("webhook/test_defaulter.py", hook_values)
    if validation:
        added += render("webhook/validator.py", {**hook_values, **_webhook_name(ctx, "v")})
        tests += render("webhook/test_validator.py", hook_values)
    path = f"{ctx.place.webhook_dir(version)}/{module}.py"
    if ctx.path(path).exists():

        def join(text: str) -> str | None:
            changed = add_classes(text, kind, added)
            return changed and add_registrations(changed, kind, calls)

        ctx.edit(
            path,
            join,
            f"add {' and '.join(classes)} and chain {''.join(calls)} into "
            f"manager.webhook_for({kind})",
        )
    else:
        source = render("webhook/head.py", hook_values) + added
        ctx.scaffold(path, source + render("webhook/setup.py", hook_values))

    test_path = _webhook_test(ctx)
    if ctx.path(test_path).exists():
        ctx.edit(
            test_path,
            lambda text: add_tests(text, webhook_module, classes, tests),
            f"import {', '.join(classes)} from {webhook_module} and test them",
        )
    else:
        ctx.scaffold(test_path, render("webhook/test_head.py", hook_values) + tests)
    _register_webhooks(ctx)


def _webhook_name(ctx: _Context, prefix: str) -> dict[str, str]:
    """The marker's `name=` (the `webhook_name` template value): none in the single-group
    layout, where the default `m<kind>-<version>.kb.io` is kubebuilder's; with the group
    (`m<group>-<kind>-<version>.kb.io`) in the multigroup layout, where the same kind in two
    groups would otherwise give one configuration two webhooks of one name, which the API
    server refuses."""
    name = _grouped_webhook_name(ctx, prefix)
    return {"webhook_name": f', name="{name}"' if name else ""}


def _grouped_webhook_name(ctx: _Context, prefix: str) -> str:
    """The webhook's name with its group in the multigroup layout ("" in the other)."""
    place = ctx.place
    if not place.grouped:
        return ""
    return f"{prefix}{place.group}-{place.module}-{ctx.names.version}.kb.io"


def _scaffold_webhook_packages(ctx: _Context, version: str) -> None:
    """webhooks/ and the version's package under it (in the group's, in the multigroup
    layout), each with its __init__.py, written once."""
    if not ctx.path("webhooks/__init__.py").exists():
        ctx.scaffold("webhooks/__init__.py", render("webhook/package_init.py", ctx.values))
    _scaffold_group_packages(ctx, "webhooks")
    package = ctx.place.webhook_dir(version)
    if not ctx.path(f"{package}/__init__.py").exists():
        values = {**ctx.values, "version": version}
        ctx.scaffold(f"{package}/__init__.py", render("webhook/version_init.py", values))


def _add_e2e_checks(
    ctx: _Context, *, defaulting: bool, validation: bool, spokes: list[str]
) -> None:
    """The new webhooks' checks in the project's end-to-end suite (kubeforge._scaffold.e2e);
    a project made before `init` wrote test/e2e/ is left without one."""
    if not ctx.path("test/e2e").is_dir():
        return
    place = ctx.place
    checks = webhook_checks(
        ctx.names,
        ctx.values,
        defaulting=defaulting,
        validation=validation,
        spokes=spokes,
        # The same Kind in two groups: the tests' names and the webhooks' carry the group.
        test_kind=f"{place.package}_{place.module}" if place.grouped else "",
        mutate_name=_grouped_webhook_name(ctx, "m"),
        validate_name=_grouped_webhook_name(ctx, "v"),
    )
    ctx.edit_or_create(
        E2E_WEBHOOK_TESTS,
        lambda: render("webhook/e2e_test.py", ctx.values),
        lambda text: add_checks(text, checks),
        "add the end-to-end checks of its webhooks",
    )


def _webhook_test(ctx: _Context) -> str:
    """The test module of the version's webhooks: `tests/test_<kind>_<version>_webhook.py`
    (under tests/<group>/ in the multigroup layout), or the `tests/test_<kind>_webhook.py`
    of a project scaffolded before webhooks of several versions had a test each, when it
    tests this version's."""
    module, version = ctx.names.module, ctx.names.version
    earlier = f"tests/test_{module}_webhook.py"
    if not ctx.place.grouped and ctx.path(earlier).is_file():
        text = ctx.path(earlier).read_text(encoding="utf-8")
        if re.search(rf"^from webhooks\.{version}\.{module} import ", text, re.MULTILINE):
            return earlier
    return f"{ctx.place.tests_dir}/test_{module}_{version}_webhook.py"


def _register_webhooks(ctx: _Context) -> None:
    """Call the version's `setup_<kind>_webhook` from main.setup. Each version's module
    has one, so main.py imports it under a name with the version, as kubebuilder's
    cmd/main.go imports each version's webhook package under its own alias
    (`webhookbatchv1`, `webhookbatchv2`); in the multigroup layout the alias names the group
    too."""
    module, version, place = ctx.names.module, ctx.names.version, ctx.place
    source = f"{place.webhook_package(version)}.{module}"
    function = f"setup_{module}_webhook"
    alias = f"setup_{place.alias(module) if place.grouped else module}_{version}_webhook"
    statement = f"from {source} import {function} as {alias}"

    def register(text: str) -> str | None:
        if re.search(rf"^from {re.escape(source)} import {function}\b", text, re.MULTILINE):
            return text  # registered already (by an earlier scaffold, maybe without alias)
        changed = import_at_marker(text, IMPORTS, statement)
        call = f"    {alias}(manager)\n"
        return None if changed is None else insert_at_marker(changed, BUILDER, call)

    ctx.edit("main.py", register, f"call {source}.{function}(manager) in setup()")


def _enable_webhook_config(ctx: _Context, *, defaulting: bool, validation: bool) -> None:
    """Turn on config/default's [WEBHOOK] and [CERTMANAGER] sections (and the [DEFAULTING] or
    [VALIDATING] CA injection), as kubebuilder's `create webhook` does."""
    values = ctx.values
    ctx.files.create(
        ctx.path("config/default/manager_webhook_patch.yaml"),
        render("webhook/manager_webhook_patch.yaml", values),
    )
    ctx.files.create(
        ctx.path("config/network-policy/allow-webhook-traffic.yaml"),
        render("webhook/allow-webhook-traffic.yaml", values),
    )
    ctx.edit(
        "config/network-policy/kustomization.yaml",
        lambda text: _add_resource(text, "allow-webhook-traffic.yaml"),
        "list allow-webhook-traffic.yaml in its resources",
    )
    blocks = [
        "#- ../webhook\n",
        "#- ../certmanager\n",
        "#- path: manager_webhook_patch.yaml\n#  target:\n#    kind: Deployment\n",
        "#replacements:\n",
        _replacement_block("[WEBHOOK]"),
    ]
    if validation:
        blocks.append(_replacement_block("[VALIDATING]"))
    if defaulting:
        blocks.append(_replacement_block("[DEFAULTING]"))

    def enable(text: str) -> str | None:
        for block in blocks:
            if block is None:
                continue
            text = uncomment(text, block) or text
        return text

    ctx.edit("config/default/kustomization.yaml", enable, "turn on its [WEBHOOK] sections")


def _replacement_block(tag: str) -> str | None:
    """The commented-out replacements of config/default/kustomization.yaml that start with
    `# - source: # <tag>`, up to the blank line that ends them."""
    from kubeforge._scaffold.render import template

    text = template("init/config/default/kustomization.yaml")
    start = text.find(f"# - source: # {tag}")
    if start < 0:
        return None
    end = text.find("\n\n", start)
    return text[start : end + 1]


def _add_resource(text: str, name: str) -> str | None:
    if re.search(rf"^- {re.escape(name)}$", text, re.MULTILINE):
        return text
    match = re.search(r"^resources:\n((?:- .*\n)*)", text, re.MULTILINE)
    if match is None:
        return None
    return text[: match.end()] + f"- {name}\n" + text[match.end() :]


# conversion ---------------------------------------------------------------------------------

CA_NAMESPACE = "# +kubeforge:scaffold:crdkustomizecainjectionns"
CA_NAME = "# +kubeforge:scaffold:crdkustomizecainjectionname"


def _check_conversion(ctx: _Context, spokes: list[str]) -> None:
    """The hub (this version) and every spoke must be versions of the kind in PROJECT, with
    their type files in place; refused before anything is written."""
    names = ctx.names
    if not spokes:
        raise fail("--conversion needs the versions that convert to this one: --spoke <version>")
    entries = ctx.project.versions_of(names.group, names.kind)
    known = {str(e.get("version")) for e in entries if e.get("api")}
    hubs = [
        str(e.get("version"))
        for e in entries
        if (e.get("webhooks") or {}).get("conversion") and e.get("version") != names.version
    ]
    if hubs:
        # One hub per kind: its versions convert through it (controller-runtime's
        # pkg/webhook/conversion/conversion.go refuses a kind with two Hub types).
        raise fail(
            f"{names.kind} converts through its hub {hubs[0]} already (PROJECT); "
            f"a kind has one hub, and {names.version} can only be one of its spokes"
        )
    for version in spokes:
        if version == names.version:
            raise fail(f"{version} is the hub; a spoke is another version of {names.kind}")
        if version not in known:
            raise fail(
                f"no {names.kind} in {names.qualified_group}/{version} in this project; "
                f"create it first with `kubeforge create api --version {version} --no-controller`"
            )
    for version in [names.version, *spokes]:
        path = f"{ctx.place.api_dir(version)}/{names.module}.py"
        if not ctx.path(path).is_file():
            raise fail(f"{path} is missing: the {version} {names.kind} type is not where it was")


def _scaffold_conversion(ctx: _Context, spokes: list[str]) -> None:
    """kubebuilder's conversion scaffolding: the hub marked, each spoke given to_hub and
    from_hub stubs, a round-trip test, the webhook served, and the kustomize pieces that
    call it (the CRD's CA injection) turned on."""
    names, values, place = ctx.names, ctx.values, ctx.place
    kind, hub, module = names.kind, names.version, names.module
    ctx.edit(
        f"{place.api_dir(hub)}/{module}.py",
        lambda text: _convertible(_add_base(text, kind, "conversion.Hub")),
        f"add conversion.Hub to the bases of {kind}",
    )
    for spoke in spokes:
        spoke_values = {**values, "hub": hub, "spoke": spoke}
        methods = render("webhook/conversion_spoke.py", spoke_values)

        def convertible(text: str, methods: str = methods) -> str | None:
            changed = _convertible(_add_base(text, kind, f"conversion.Convertible[{hub}.{kind}]"))
            if changed is None or "def to_hub(" in changed:
                return changed
            changed = _add_method_block(changed, kind, methods)
            changed = changed and _add_typing_name(changed, "Self")
            hub_import = f"from {place.api_parent} import {hub}"
            return changed and _add_first_party_import(changed, hub_import)

        ctx.edit(
            f"{place.api_dir(spoke)}/{module}.py",
            convertible,
            f"make {kind} conversion.Convertible[{hub}.{kind}] with to_hub and from_hub",
        )

    versions = sorted({hub, *spokes})
    parent = place.api_parent
    ctx.edit(
        f"{parent.replace('.', '/')}/__init__.py",
        lambda text: _import_versions(text, parent, versions),
        f"import {', '.join(versions)} in it (`from {parent} import ...`)",
    )
    cases = "".join(
        render("webhook/test_conversion_case.py", {**values, "version": v}) for v in versions
    )
    test_values = {**values, "hub": hub, "versions": ", ".join(versions), "cases": cases}
    ctx.scaffold(
        f"{place.tests_dir}/test_{module}_conversion.py",
        render("webhook/test_conversion.py", test_values),
    )

    existing = sorted(ctx.root.glob(f"{place.webhook_dir('*')}/{module}.py"))
    if existing:
        # Its webhook_for(...).complete() serves the conversion too, the kind being
        # convertible now.
        typer.echo(
            f"note: setup_{module}_webhook in {existing[0].relative_to(ctx.root)} serves the "
            "conversion too"
        )
    else:
        hook_values = {**values, "hub": hub, "spokes": ", ".join(spokes)}
        _scaffold_webhook_packages(ctx, hub)
        hook = f"{place.webhook_dir(hub)}/{module}.py"
        ctx.scaffold(hook, render("webhook/conversion.py", hook_values))
        _register_webhooks(ctx)
    _enable_conversion_config(ctx)


def _enable_conversion_config(ctx: _Context) -> None:
    """config/default's [WEBHOOK], [CERTMANAGER] and [CONVERSION] sections, with the CRD
    among the targets of the CA injection."""
    crd = f"{ctx.values['plural']}.{ctx.names.qualified_group}"
    _enable_webhook_config(ctx, defaulting=False, validation=False)
    blocks = [_conversion_block(CA_NAMESPACE), _conversion_block(CA_NAME)]

    def enable(text: str) -> str | None:
        for block in blocks:
            if block is not None:
                text = uncomment(text, block) or text
        for marker, index in ((CA_NAMESPACE, 0), (CA_NAME, 1)):
            changed = insert_at_marker(text, marker, _ca_target(crd, index))
            if changed is None:
                return None
            text = changed
        return text

    ctx.edit(
        "config/default/kustomization.yaml",
        enable,
        f"turn on its [CONVERSION] replacements for {crd}",
    )


def _conversion_block(marker: str) -> str | None:
    """The commented-out replacement of config/default/kustomization.yaml that ends just
    above `marker` (the [CONVERSION] sources)."""
    from kubeforge._scaffold.render import template

    text = template("init/config/default/kustomization.yaml")
    end = text.find(marker)
    start = text.rfind("# - source:", 0, end)
    if start < 0 or end < 0:
        return None
    return text[start:end]


def _ca_target(crd: str, index: int) -> str:
    """One CRD as a target of the [CONVERSION] replacement putting the certificate's
    namespace (index 0) or name (index 1) into its cert-manager.io/inject-ca-from."""
    return (
        "     - select:\n"
        "         kind: CustomResourceDefinition\n"
        f"         name: {crd}\n"
        "       fieldPaths:\n"
        "         - .metadata.annotations.[cert-manager.io/inject-ca-from]\n"
        "       options:\n"
        "         delimiter: '/'\n"
        f"         index: {index}\n"
        "         create: true\n"
    )


def _enable_crd_ca_injection(ctx: _Context) -> None:
    """Turn on the CRD's cainjection patch in config/crd/kustomization.yaml (written by the
    manifests; `kubeforge manifests` keeps it on from then). Its name has the group's first
    label in front when another group has a kind of the same plural (the manifests' patch
    names)."""
    plural, group = ctx.values["plural"], ctx.names.qualified_group.partition(".")[0]
    entries = [
        f"#- path: patches/cainjection_in_{stem}.yaml\n" for stem in (f"{group}_{plural}", plural)
    ]
    entry = entries[1]

    def enable(text: str) -> str | None:
        changed = None
        for each in entries:
            changed = uncomment(text, each) or _already(text, each[1:])
            if changed is not None:
                break
        return None if changed is None else certmanager_comment(changed)

    ctx.edit("config/crd/kustomization.yaml", enable, f"uncomment {entry.strip()}")


def _import_versions(text: str, parent: str, versions: list[str]) -> str:
    """The `parent` package's __init__.py (api/, or api/<group>/ in the multigroup layout)
    importing (and exporting) its version packages: a hub's spokes are the classes that name
    it, known once their modules are imported, whichever version the program imports first
    (what Go's AddToScheme calls in main.go do)."""
    pattern = rf"^from {re.escape(parent)} import (?P<names>[^(\n]+)$"
    match = re.search(pattern, text, re.MULTILINE)
    present = [n.strip() for n in match.group("names").split(",")] if match else []
    names = sorted(set(present) | set(versions))
    statement = f"from {parent} import {', '.join(names)}"
    exports = "__all__ = [" + ", ".join(f'"{n}"' for n in names) + "]"
    if match is not None:
        text = text[: match.start()] + statement + text[match.end() :]
        found = re.search(r"^__all__ = \[[^\]]*\]$", text, re.MULTILINE)
        if found is not None:
            return text[: found.start()] + exports + text[found.end() :]
        return text.rstrip("\n") + "\n\n" + exports + "\n"
    return text.rstrip("\n") + "\n\n" + statement + "\n\n" + exports + "\n"


def _class_line(text: str, kind: str) -> re.Match[str] | None:
    return re.search(rf"^class {re.escape(kind)}\((?P<bases>[^)]*)\):[ \t]*$", text, re.MULTILINE)


def _add_base(text: str, kind: str, base: str) -> str | None:
    """`text` with `base` among the bases of class `kind` (None: no such class line)."""
    match = _class_line(text, kind)
    if match is None:
        return None
    bases = match.group("bases")
    if base in bases:
        return text
    return text[: match.end("bases")] + f", {base}" + text[match.end("bases") :]


def _convertible(text: str | None) -> str | None:
    """A types module importing `kubeforge.conversion`, whose Hub or Convertible it names."""
    return None if text is None else import_kubeforge_module(text, "conversion")


def _add_method_block(text: str, kind: str, methods: str) -> str | None:
    """`text` with `methods` at the end of class `kind`'s body."""
    match = _class_line(text, kind)
    if match is None:
        return None
    following = re.search(r"^\S", text[match.end() :], re.MULTILINE)
    end = match.end() + following.start() if following else len(text)
    body = text[:end].rstrip("\n") + "\n"
    rest = text[end:]
    return body + methods + ("\n\n" + rest if rest else "")


def _add_typing_name(text: str, name: str) -> str:
    """`text` importing `name` from typing (merged into its `from typing import` line)."""
    match = re.search(r"^from typing import (?P<names>[^(\n]+)$", text, re.MULTILINE)
    if match is None:
        return text.replace(
            "from __future__ import annotations\n",
            f"from __future__ import annotations\n\nfrom typing import {name}\n",
            1,
        )
    present = [n.strip() for n in match.group("names").split(",")]
    if name in present:
        return text
    merged = ", ".join(sorted([*present, name]))
    return text[: match.start("names")] + merged + text[match.end("names") :]


def _add_first_party_import(text: str, statement: str) -> str:
    """`text` with `statement` after its last top-level import, as a block of its own unless
    the last block is the project's own imports (then in it, in order)."""
    if statement in text:
        return text
    imports = list(re.finditer(r"^(?:from \S+ import [^(\n]+|import \S+)$", text, re.MULTILINE))
    if not imports:
        return text
    last = imports[-1]
    if last.group(0).startswith(("from api", "from controllers", "from webhooks")):
        block_start = last.start()
        for match in reversed(imports[:-1]):
            between = text[match.end() : block_start]
            if between.strip() or between.count("\n") > 1:
                break
            if not match.group(0).startswith(("from api", "from controllers", "from webhooks")):
                break
            block_start = match.start()
        lines = sorted([*text[block_start : last.end()].splitlines(), statement])
        return text[:block_start] + "\n".join(lines) + text[last.end() :]
    return text[: last.end()] + "\n\n" + statement + text[last.end() :]
