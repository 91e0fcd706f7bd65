"""Where each test file lives: the tests mirror the source tree (docs/concepts.md, "The
tests").

`tests/<dirs>/test_<name>.py` holds the tests of `src/kubeforge/<_dirs>/<name>.py`, the
package path written without its leading underscores (`tests/apiserver/storage/test_store.py`
for `_apiserver/storage/store.py`). A module with several test files has them beside each
other as `test_<name>_<aspect>.py`; the tests of a package as a whole are
`tests/<dirs>/test_<package>.py` (or `test_<package>_<aspect>.py`). The files at the top of
tests/ test the package as a whole (its public surface, layering, typing) and the
repository's own tools; tests/conformance (other clients' suites), tests/fuzz, tests/e2e (end
to end, with no single home) and tests/support (shared helpers) are not mirrored.

    python tools/test_layout.py --check   list the test files not where the convention says
    python tools/test_layout.py           print where each file of the old flat layout goes
    python tools/test_layout.py --apply   move them there (`git mv`) and rewrite `tests.` imports

The old layout kept tests in tests/unit and tests/integration. `MOVES` says where each of
their files went; a file it does not know is given a guessed home (printed as a guess: read
it, and add it to `MOVES` when the guess is wrong).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "kubeforge"
TESTS = ROOT / "tests"

# Directories of tests/ that do not mirror the source tree.
UNMIRRORED = frozenset({"conformance", "fuzz", "e2e", "support", "data"})
# The old flat layout: nothing may live here any more.
OLD_DIRS = ("unit", "integration")

# Every file of the old layout, relative to tests/, and where it went. Helpers went to
# tests/support; a test file went beside the module it tests.
MOVES: dict[str, str] = {
    # helpers
    "support.py": "support/__init__.py",
    "unit/builtin_objects.py": "support/builtin_objects.py",
    "unit/rawhttp.py": "support/rawhttp.py",
    "unit/table_objects.py": "support/tables.py",
    "integration/admission_support.py": "support/admission.py",
    "integration/conversion_support.py": "support/conversion.py",
    "integration/crd_fixtures.py": "support/crds.py",
    "integration/streaming_support.py": "support/streaming.py",
    "integration/workload_support.py": "support/workloads.py",
    # the package as a whole, and the repository's tools
    "unit/test_benchmark_scripts.py": "test_benchmark_scripts.py",
    "unit/test_clock.py": "test_clock.py",
    "unit/test_exports.py": "test_exports.py",
    "unit/test_layering.py": "test_layering.py",
    "unit/test_public_surface.py": "test_public_surface.py",
    "unit/test_typing.py": "test_typing.py",
    "integration/test_on_dev_cluster.py": "test_on_dev_cluster.py",
    "integration/test_operator_benchmark.py": "test_operator_benchmark.py",
    "integration/test_examples.py": "e2e/test_examples.py",
    "integration/test_fuzz_apiserver.py": "fuzz/test_fuzz_apiserver.py",
    # _api
    "unit/test_conversion.py": "api/test_conversion.py",
    "unit/test_crd.py": "api/test_crd.py",
    "integration/test_typed_api.py": "api/test_crd_examples.py",
    "unit/test_marker_fit.py": "api/test_markers_fit.py",
    "integration/test_condition_schema.py": "api/test_meta_condition.py",
    "unit/test_model_arguments.py": "api/test_model.py",
    "integration/test_typed_reads.py": "api/test_model_typed_reads.py",
    "unit/test_rbac.py": "api/test_rbac.py",
    "integration/test_embedded_object_meta.py": "api/test_resource_embedded_object_meta.py",
    "unit/test_schema.py": "api/test_schema.py",
    "unit/test_webhook_manifests.py": "api/test_webhooks.py",
    # _api/machinery
    "unit/test_cel.py": "api/machinery/test_cel.py",
    "unit/test_crvalidation.py": "api/machinery/test_crvalidation.py",
    "unit/test_durations.py": "api/machinery/test_durations.py",
    "unit/test_jsonpath.py": "api/machinery/test_jsonpath.py",
    "unit/test_names.py": "api/machinery/test_names.py",
    "unit/test_quantity.py": "api/machinery/test_quantity.py",
    "unit/test_selectors.py": "api/machinery/test_selectors.py",
    "unit/test_structural.py": "api/machinery/test_structural.py",
    "unit/test_timestamps.py": "api/machinery/test_timestamps.py",
    # _apiserver (the server as a whole, and the modules at its root)
    "integration/test_bad_input.py": "apiserver/test_apiserver_bad_input.py",
    "unit/test_write_path_shortcuts.py": "apiserver/test_apiserver_write_path.py",
    "integration/test_audit_id.py": "apiserver/test_router_audit_id.py",
    # _apiserver/admission
    "integration/test_admission_authorizer.py": (
        "apiserver/admission/test_expressions_authorizer.py"
    ),
    "integration/test_admission_policy.py": "apiserver/admission/test_policy.py",
    "unit/test_admission_review.py": "apiserver/admission/test_review.py",
    "integration/test_admission_webhooks.py": "apiserver/admission/test_webhooks.py",
    # _apiserver/auth
    "integration/test_auth.py": "apiserver/auth/test_auth.py",
    "integration/test_certificate_signing.py": "apiserver/auth/test_csradmission.py",
    "integration/test_rbac_escalation.py": "apiserver/auth/test_escalation.py",
    "integration/test_openid_discovery.py": "apiserver/auth/test_openidmetadata.py",
    "unit/test_rbac_rules.py": "apiserver/auth/test_rules.py",
    "integration/test_tokenrequest.py": "apiserver/auth/test_tokenrequest.py",
    # _apiserver/controllers
    "integration/test_allocators.py": "apiserver/controllers/test_allocators.py",
    "integration/test_crds.py": "apiserver/controllers/test_crds.py",
    "integration/test_gc.py": "apiserver/controllers/test_gc.py",
    "integration/test_namespace_lifecycle.py": "apiserver/controllers/test_namespaces.py",
    # _apiserver/discovery
    "integration/test_discovery.py": "apiserver/discovery/test_discovery.py",
    "integration/test_builtin_discovery.py": "apiserver/discovery/test_documents_builtin.py",
    "unit/test_openapi.py": "apiserver/discovery/test_openapi.py",
    "unit/test_openapi_v2.py": "apiserver/discovery/test_openapiv2.py",
    "integration/test_openapi_v2.py": "apiserver/discovery/test_openapiv2_http.py",
    # _apiserver/handlers
    "integration/test_connect_subresources.py": "apiserver/handlers/test_connect.py",
    "integration/test_delete_options.py": "apiserver/handlers/test_delete.py",
    "integration/test_delete_options_docs.py": "apiserver/handlers/test_delete_docs.py",
    "integration/test_json_encoding.py": "apiserver/handlers/test_exchange_json.py",
    "integration/test_crud.py": "apiserver/handlers/test_handlers_crud.py",
    "integration/test_list_watch.py": "apiserver/handlers/test_handlers_list_watch.py",
    "integration/test_patch_status.py": "apiserver/handlers/test_patch.py",
    # _apiserver/http
    "unit/test_httpserver.py": "apiserver/http/test_server.py",
    "integration/test_connection_limits.py": "apiserver/http/test_server_connection_limits.py",
    "unit/test_http_framing.py": "apiserver/http/test_server_framing.py",
    "unit/test_http_limits.py": "apiserver/http/test_server_limits.py",
    # _apiserver/printing
    "unit/test_printers.py": "apiserver/printing/test_printers.py",
    "unit/test_tables.py": "apiserver/printing/test_tables.py",
    # _apiserver/request
    "integration/test_apiserver_metrics.py": "apiserver/request/test_metrics.py",
    "unit/test_requestinfo.py": "apiserver/request/test_info.py",
    "integration/test_object_metadata.py": "apiserver/request/test_metadecoding.py",
    "unit/test_nesting.py": "apiserver/request/test_nesting.py",
    "integration/test_nesting.py": "apiserver/request/test_nesting_http.py",
    "unit/test_protobuf.py": "apiserver/request/test_protobuf.py",
    "integration/test_query_booleans.py": "apiserver/request/test_queryparams.py",
    "unit/test_warning_headers.py": "apiserver/request/test_warningheaders.py",
    "unit/test_yamljson.py": "apiserver/request/test_yamljson.py",
    "integration/test_yaml_bodies.py": "apiserver/request/test_yamljson_bodies.py",
    # _apiserver/storage
    "integration/test_commit_isolation.py": "apiserver/storage/test_commits.py",
    "unit/test_managedfields.py": "apiserver/storage/test_managedfields.py",
    "integration/test_admission_server_fields.py": (
        "apiserver/storage/test_objectmeta_after_admission.py"
    ),
    "unit/test_patch.py": "apiserver/storage/test_patch.py",
    "unit/test_persistence.py": "apiserver/storage/test_persistence.py",
    "integration/test_crash.py": "apiserver/storage/test_persistence_crash.py",
    "integration/test_preconditions.py": "apiserver/storage/test_preconditions.py",
    "unit/test_store.py": "apiserver/storage/test_store.py",
    # _apiserver/streaming
    "unit/test_spdy.py": "apiserver/streaming/test_spdyframes.py",
    "integration/test_streaming_protocols.py": "apiserver/streaming/test_streaming.py",
    # _apiserver/types
    "unit/test_builtin_schemas.py": "apiserver/types/test_builtin_schemas.py",
    "integration/test_number_decoding.py": "apiserver/types/test_builtin_schemas_numbers.py",
    "integration/test_omitempty.py": "apiserver/types/test_builtin_schemas_omitempty.py",
    "integration/test_builtin_kinds.py": "apiserver/types/test_builtin_types.py",
    "integration/test_builtin_kinds_kubectl.py": "apiserver/types/test_builtin_types_kubectl.py",
    "integration/test_conversion_apiserver.py": "apiserver/types/test_conversion.py",
    "unit/test_defaults.py": "apiserver/types/test_defaults.py",
    "integration/test_type_changes.py": "apiserver/types/test_resource_changes.py",
    "unit/test_strategies.py": "apiserver/types/test_strategies.py",
    # _apiserver/types/validation
    "integration/test_volume_paths.py": "apiserver/types/validation/test_core_pods_volume_paths.py",
    "unit/test_builtin_validation.py": "apiserver/types/validation/test_validation.py",
    # _cli
    "integration/test_cli.py": "cli/test_cli.py",
    "integration/test_cli_project.py": "cli/test_cli_project.py",
    "integration/test_cli_scaffold.py": "cli/test_cli_scaffold.py",
    "integration/test_cli_webhook_versions.py": "cli/test_create_webhook_versions.py",
    "integration/test_deploy_on_dev_cluster.py": "cli/test_deploy_dev_cluster.py",
    "integration/test_cli_dev_images.py": "cli/test_dev_images.py",
    "integration/test_cli_conversion.py": "cli/test_manifests_conversion.py",
    "integration/test_cli_webhooks.py": "cli/test_manifests_webhooks.py",
    "integration/test_run_conversion.py": "cli/test_run_conversion.py",
    "integration/test_run_webhooks.py": "cli/test_run_webhooks.py",
    # _client
    "integration/test_client.py": "client/test_client.py",
    "unit/test_config.py": "client/test_config.py",
    "integration/test_config_kubectl.py": "client/test_config_kubectl.py",
    "unit/test_client_forwarding.py": "client/test_forwarding.py",
    "integration/test_http1.py": "client/test_http1.py",
    "integration/test_client_options.py": "client/test_options.py",
    "integration/test_storage_migration.py": "client/test_storagemigration.py",
    "integration/test_transport.py": "client/test_transport.py",
    # _cluster
    "unit/test_containers.py": "cluster/test_containers.py",
    "unit/test_controllernames.py": "cluster/test_controllernames.py",
    "integration/test_auth_cluster.py": "cluster/test_devcluster_auth.py",
    "integration/test_builtin_controllers.py": "cluster/test_devcluster_controllers.py",
    "integration/test_kubelet.py": "cluster/test_kubelet.py",
    "integration/test_exec.py": "cluster/test_podstreams_exec.py",
    "integration/test_exec_clients.py": "cluster/test_podstreams_exec_clients.py",
    "integration/test_portforward.py": "cluster/test_podstreams_portforward.py",
    "integration/test_project_environment.py": "cluster/test_projectenv.py",
    "unit/test_sandboxpaths.py": "cluster/test_sandboxpaths.py",
    "unit/test_simulation.py": "cluster/test_simulation.py",
    "integration/test_volumes_exec.py": "cluster/test_volumedirs.py",
    "integration/test_certmanager.py": "cluster/certmanager/test_certmanager.py",
    "integration/test_volumes.py": "cluster/controllers/test_controllers_volumes.py",
    "integration/test_volumes_options.py": (
        "cluster/controllers/test_controllers_volumes_options.py"
    ),
    "integration/test_controllers_cronjob.py": "cluster/controllers/test_cronjob.py",
    "unit/test_cronschedule.py": "cluster/controllers/test_cronschedule.py",
    "integration/test_controllers_daemonset.py": "cluster/controllers/test_daemonset.py",
    "integration/test_controllers_deployment.py": "cluster/controllers/test_deployment.py",
    "integration/test_disruption.py": "cluster/controllers/test_disruption.py",
    "integration/test_controllers_endpoints.py": "cluster/controllers/test_endpoints.py",
    "integration/test_controllers_job.py": "cluster/controllers/test_job.py",
    "integration/test_node_lifecycle.py": "cluster/controllers/test_nodelifecycle.py",
    "unit/test_node_lifecycle_rules.py": "cluster/controllers/test_nodelifecycle_rules.py",
    "integration/test_scheduler.py": "cluster/controllers/test_scheduler.py",
    "integration/test_controllers_statefulset.py": "cluster/controllers/test_statefulset.py",
    "unit/test_shell_files.py": "cluster/shell/test_filetools.py",
    "unit/test_shell.py": "cluster/shell/test_shell.py",
    # models
    "unit/test_models.py": "models/test_models.py",
    # _runtime
    "integration/test_builder.py": "runtime/test_builder.py",
    "unit/test_cache_keys.py": "runtime/test_cache_keys.py",
    "integration/test_cache_options.py": "runtime/test_cache_options.py",
    "integration/test_own_writes.py": "runtime/test_cached_client_own_writes.py",
    "unit/test_conditions.py": "runtime/test_conditions.py",
    "integration/test_controller.py": "runtime/test_controller.py",
    "integration/test_controller_features.py": "runtime/test_controller_features.py",
    "integration/test_events.py": "runtime/test_events.py",
    "unit/test_predicates_handlers.py": "runtime/test_handler.py",
    "integration/test_informer.py": "runtime/test_informer.py",
    "integration/test_leaderelection.py": "runtime/test_leaderelection.py",
    "integration/test_local_conversion.py": "runtime/test_localconversion.py",
    "integration/test_local_webhooks.py": "runtime/test_localwebhooks.py",
    "unit/test_logs.py": "runtime/test_logs.py",
    "integration/test_manager.py": "runtime/test_manager.py",
    "unit/test_metrics.py": "runtime/test_metrics.py",
    "unit/test_ownership.py": "runtime/test_ownership.py",
    "unit/test_ratelimiter.py": "runtime/test_ratelimiter.py",
    "integration/test_sync_reconcilers.py": "runtime/test_reconcile_sync.py",
    "unit/test_reflector.py": "runtime/test_reflector.py",
    "integration/test_upsert.py": "runtime/test_upsert.py",
    "unit/test_workqueue.py": "runtime/test_workqueue.py",
    # _scaffold
    "unit/test_scaffold.py": "scaffold/test_scaffold.py",
    "integration/test_project_wheel.py": "scaffold/test_scaffold_dockerfile.py",
    "integration/test_scaffold_existing_cluster.py": "scaffold/test_scaffold_existing_cluster.py",
    # _testing
    "integration/test_devprocess.py": "testing/test_devprocess.py",
    "integration/test_testenv.py": "testing/test_env.py",
    "integration/test_testenv_existing.py": "testing/test_env_existing.py",
    "integration/test_pytest_plugin.py": "testing/test_plugin.py",
    # _webhook
    "integration/test_conversion_webhook.py": "webhook/test_conversion.py",
    "unit/test_webhook_patch.py": "webhook/test_patch.py",
    "integration/test_webhook_server.py": "webhook/test_server.py",
    "unit/test_webhook_typed.py": "webhook/test_typed.py",
}


def source_dir(test_dir: Path) -> Path | None:
    """The source directory a directory of tests/ mirrors, or None when there is none: each
    part is the package of that name, with its leading underscore where it has one."""
    source = SOURCE
    for part in test_dir.relative_to(TESTS).parts:
        for name in (f"_{part}", part):
            if (source / name / "__init__.py").is_file():
                source = source / name
                break
        else:
            return None
    return source


def subjects(source: Path) -> set[str]:
    """What a test file beside `source`'s mirror may be named for: its modules (a leading
    underscore dropped) and the package itself."""
    names = {path.stem.lstrip("_") for path in source.glob("*.py") if path.stem != "__init__"}
    names.add(source.name.lstrip("_"))
    names.update(path.name.lstrip("_") for path in source.iterdir() if is_package(path))
    return names


def is_package(path: Path) -> bool:
    return (path / "__init__.py").is_file()


def names_a_subject(stem: str, names: set[str]) -> bool:
    """`test_<name>` or `test_<name>_<aspect>` for one of `names`."""
    rest = stem.removeprefix("test_")
    return any(rest == name or rest.startswith(f"{name}_") for name in names)


def reads_its_own_path(path: Path) -> bool:
    """Whether a test module computes a path from its own `__file__`, which breaks when it
    moves: tests reach the repository through `tests.support.ROOT`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Name) and node.id == "__file__" for node in ast.walk(tree))


def misplaced() -> list[tuple[str, str]]:
    """Every file of tests/ that breaks the convention, with why."""
    found: list[tuple[str, str]] = []
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(TESTS)
        parts = relative.parts
        if parts[0] in OLD_DIRS:
            found.append((str(relative), "the old flat layout: move it beside its subject"))
            continue
        if parts[0] != "support" and path.name != "__init__.py" and reads_its_own_path(path):
            found.append((str(relative), "a path from __file__: use tests.support.ROOT"))
        if len(parts) == 1 or parts[0] in UNMIRRORED or not path.name.startswith("test_"):
            continue
        source = source_dir(path.parent)
        if source is None:
            found.append((str(relative), f"no package src/kubeforge/{relative.parent} mirrors"))
        elif not names_a_subject(path.stem, subjects(source)):
            found.append((str(relative), f"names no module of {source.relative_to(ROOT)}"))
    for directory in sorted({path.parent for path in TESTS.rglob("test_*.py")}):
        if not (directory / "__init__.py").is_file():
            found.append(
                (str(directory.relative_to(TESTS)), "a test directory without __init__.py")
            )
    return found


def guess(path: Path) -> str:
    """A home for a test file `MOVES` does not know: the internal module that words of its
    name name, the best of them by how many words name it or its package and whether the
    file imports it; else the internal module it imports most."""
    stem = path.stem.removeprefix("test_")
    imported: Counter[Path] = Counter()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubeforge._"):
            target = SOURCE.joinpath(*str(node.module).split(".")[1:])
            imported[target if target.is_dir() else target.with_suffix(".py")] += 1
    packages = {module if module.is_dir() else module.parent for module in imported}
    words = stem.split("_")
    scored: list[tuple[float, Path, str]] = []
    for module in SOURCE.rglob("*.py"):
        if not is_internal(module) or "templates" in module.parts or module.stem == "__init__":
            continue
        name = module.stem.lstrip("_").split("_")
        for start in range(len(words) - len(name) + 1):
            if words[start : start + len(name)] != name:
                continue
            rest = words[:start] + words[start + len(name) :]
            score = len(name) + (module in imported) + 0.5 * (module.parent in packages)
            if module.parent.name.lstrip("_") in rest:
                rest.remove(module.parent.name.lstrip("_"))
                score += 1
            scored.append((score, module, "_".join([*name, *rest])))
    scored.sort(key=lambda entry: -entry[0])
    if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
        _, module, name = scored[0]
        return str(mirror(module.parent) / f"test_{name}.py")
    if not imported:
        return f"e2e/{path.name}"
    target = imported.most_common(1)[0][0]
    package, name = (target, target.name) if target.is_dir() else (target.parent, target.stem)
    name = name.lstrip("_")
    return str(mirror(package) / (f"test_{name}.py" if name == stem else f"test_{name}_{stem}.py"))


def is_internal(module: Path) -> bool:
    return any(part.startswith("_") for part in module.relative_to(SOURCE).parent.parts)


def mirror(package: Path) -> Path:
    """The directory of tests/ (relative to it) that mirrors a source package."""
    return Path(*(part.lstrip("_") for part in package.relative_to(SOURCE).parts))


def plan() -> list[tuple[str, str, bool]]:
    """(from, to, guessed) for every file still in the old layout, relative to tests/."""
    moves: list[tuple[str, str, bool]] = []
    for old in (TESTS / "support.py", *(TESTS / name for name in OLD_DIRS)):
        files = [old] if old.is_file() else sorted(old.glob("*.py")) if old.is_dir() else []
        for path in files:
            relative = str(path.relative_to(TESTS))
            if path.name == "__init__.py" or path.name == "conftest.py":
                continue
            if relative in MOVES:
                moves.append((relative, MOVES[relative], False))
            else:
                moves.append((relative, guess(path), True))
    return moves


def dotted(relative: str) -> str:
    module = "tests." + relative.removesuffix(".py").replace("/", ".")
    return module.removesuffix(".__init__")


def rewrite_imports(moves: list[tuple[str, str, bool]]) -> None:
    """`tests.unit.x` and `tests.integration.x` become the modules' new names wherever the
    repository's Python code imports them."""
    renames = {dotted(old): dotted(new) for old, new in MOVES.items() if old != "support.py"}
    renames.update({dotted(old): dotted(new) for old, new, _ in moves})
    pattern = re.compile(r"\btests\.(?:unit|integration)\.\w+\b")
    for base in ("tests", "tools", "benchmarks"):
        for path in (ROOT / base).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            changed = pattern.sub(lambda match: renames.get(match[0], match[0]), text)
            if changed != text:
                path.write_text(changed, encoding="utf-8")


def apply(moves: list[tuple[str, str, bool]]) -> None:
    for old, new, _ in moves:
        target = TESTS / new
        for directory in reversed(target.relative_to(TESTS).parents):
            init = TESTS / directory / "__init__.py"
            if directory != Path() and init != target and not init.exists():
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text("", encoding="utf-8")
                subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(TESTS / old), str(target)], cwd=ROOT, check=True)
    rewrite_imports(moves)
    for name in OLD_DIRS:
        old_dir = TESTS / name
        leftover = [path for path in old_dir.glob("*") if path.name != "__pycache__"]
        if old_dir.is_dir() and [path.name for path in leftover] == ["__init__.py"]:
            subprocess.run(["git", "rm", "-q", str(old_dir / "__init__.py")], cwd=ROOT, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="list misplaced test files")
    action.add_argument("--apply", action="store_true", help="move the old layout's files")
    args = parser.parse_args()
    if args.check:
        found = misplaced()
        for path, why in found:
            print(f"tests/{path}: {why}")
        return 1 if found else 0
    moves = plan()
    for old, new, guessed in moves:
        print(f"tests/{old} -> tests/{new}{'  (guessed: check it)' if guessed else ''}")
    if args.apply:
        apply(moves)
    return 0


if __name__ == "__main__":
    sys.exit(main())
