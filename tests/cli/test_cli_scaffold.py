"""The kubebuilder workflow through the CLI: `init`, `create api`, `create webhook`, then the
generated project's own checks, its kustomize build, `deploy` onto a development cluster and
`undeploy`; and what each command does when run again or given bad names.

The project's Frigate has two versions: v1 (defaulting and validating webhooks, the hub) and
v2, which converts to and from it (`create webhook --conversion --spoke v2`). Its Ferryman is
cluster-scoped and named with an irregular plural (`create api --cluster --plural ferrymen`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubeforge.conversion
from kubeforge import NotFound
from kubeforge._cli.files import Files
from kubeforge._cli.manifests import generate
from kubeforge._cli.project import load_project
from kubeforge._version import __version__
from kubeforge.testing import TestEnv
from tests.cli.test_cli_project import kubeforge, kustomize, rules_of
from tests.support import ROOT

KUBEFORGE = [sys.executable, "-m", "kubeforge._cli.main"]
PROJECT = "fleet"
FRIGATE_WEBHOOK = ("create", "webhook", "--group", "ship", "--version", "v1", "--kind", "Frigate")
FERRYMAN_API = ("create", "api", "--group", "ship", "--version", "v1", "--kind", "Ferryman")
NAMESPACE = f"{PROJECT}-system"
DEPLOYMENT = f"{PROJECT}-controller-manager"
# mypy's cache for generated projects outlives the test, so later runs check in a second.
MYPY_CACHE = ROOT / ".mypy_cache" / "generated-project"

# cert-manager's kinds, as its CRDs serve them (schemas left open: what is checked here is
# that deploy applies config/certmanager, not what cert-manager does with it).
CERT_MANAGER_CRDS = [
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates"))
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBEFORGE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


def scaffold(root: Path, *, webhook: bool = True) -> None:
    root.mkdir()
    steps = [
        ("init", "--domain", "example.com", "--owner", "The Fleet Authors"),
        ("create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate"),
    ]
    if webhook:
        hook = ("create", "webhook", "--group", "ship", "--version", "v1", "--kind", "Frigate")
        api_v2 = ("create", "api", "--group", "ship", "--version", "v2", "--kind", "Frigate")
        steps += [
            (*hook, "--defaulting", "--programmatic-validation"),
            (*api_v2, "--no-controller"),
            (*hook, "--conversion", "--spoke", "v2"),
        ]
    for step in steps:
        done = cli(*step, cwd=root)
        assert done.returncode == 0, (step, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project as `init`, `create api` and `create webhook` leave it (tests must not edit it)."""
    root = tmp_path_factory.mktemp("scaffold") / PROJECT
    scaffold(root)
    # The default plural would be "ferrymans".
    done = cli(*FERRYMAN_API, "--cluster", "--plural", "ferrymen", cwd=root)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return root


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith((".", "__")) for part in p.parts[-2:])
    }


async def run(
    *args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a command to its end, in `env` (default: this process's environment) without
    colours: its exit status and its output, stdout and stderr together."""
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**(os.environ if env is None else env), "NO_COLOR": "1"},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode()


# the generated project ------------------------------------------------------------------------


def test_init_writes_the_kubebuilder_layout(project: Path) -> None:
    for path in [
        "pyproject.toml",
        "Makefile",
        "Dockerfile",
        ".dockerignore",
        ".gitignore",
        "PROJECT",
        "README.md",
        "main.py",
        "hack/boilerplate.py.txt",
        "config/default/kustomization.yaml",
        "config/default/manager_metrics_patch.yaml",
        "config/default/manager_webhook_patch.yaml",
        "config/default/metrics_service.yaml",
        "config/manager/manager.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/rbac/metrics_auth_role.yaml",
        "config/rbac/metrics_reader_role.yaml",
        "config/rbac/frigate_editor_role.yaml",
        "config/rbac/frigate_viewer_role.yaml",
        "config/rbac/frigate_admin_role.yaml",
        "config/prometheus/monitor.yaml",
        "config/network-policy/allow-metrics-traffic.yaml",
        "config/network-policy/allow-webhook-traffic.yaml",
        "config/samples/ship_v1_frigate.yaml",
        "config/crd/bases/ship.example.com_frigates.yaml",
        "config/webhook/manifests.yaml",
        "config/certmanager/certificate-webhook.yaml",
        "api/v1/frigate.py",
        "controllers/frigate.py",
        "webhooks/v1/frigate.py",
        "tests/test_frigate.py",
        "tests/test_frigate_v1_webhook.py",
        "api/v2/frigate.py",
        "tests/test_frigate_conversion.py",
        "config/crd/patches/webhook_in_frigates.yaml",
        "config/crd/patches/cainjection_in_frigates.yaml",
    ]:
        assert (project / path).is_file(), path
    makefile = (project / "Makefile").read_text()
    for target in [
        "help",
        "manifests",
        "fmt",
        "lint",
        "typecheck",
        "test",
        "run",
        "install",
        "uninstall",
        "deploy",
        "undeploy",
        "docker-build",
        "docker-push",
        "build-installer",
        "dev",
    ]:
        assert f"\n{target}:" in makefile, target
    assert "--img ${IMG}" in makefile
    dockerfile = (project / "Dockerfile").read_text()
    assert "USER 65532:65532" in dockerfile and 'ENTRYPOINT ["manager"]' in dockerfile
    assert "Copyright" in (project / "main.py").read_text()

    described = yaml.safe_load((project / "PROJECT").read_text())
    assert described == {
        "cliVersion": __version__,
        "domain": "example.com",
        "layout": ["kubeforge.dev/v1"],
        "projectName": PROJECT,
        "resources": [
            {
                "api": {"crdVersion": "v1", "namespaced": True},
                "controller": True,
                "domain": "example.com",
                "group": "ship",
                "kind": "Frigate",
                "path": "api/v1",
                "version": "v1",
                "webhooks": {
                    "conversion": True,
                    "defaulting": True,
                    "spoke": ["v2"],
                    "validation": True,
                    "webhookVersion": "v1",
                },
            },
            {
                "api": {"crdVersion": "v1", "namespaced": True},
                "domain": "example.com",
                "group": "ship",
                "kind": "Frigate",
                "path": "api/v2",
                "version": "v2",
            },
            {
                "api": {"crdVersion": "v1", "namespaced": False},
                "controller": True,
                "domain": "example.com",
                "group": "ship",
                "kind": "Ferryman",
                "path": "api/v1",
                "plural": "ferrymen",
                "version": "v1",
            },
        ],
        "version": "3",
    }
    main = (project / "main.py").read_text()
    assert "manager.controller().for_(Frigate).complete(FrigateReconciler())" in main
    assert "setup_frigate_v1_webhook(manager)" in main
    assert "manager.controller().for_(Ferryman).complete(FerrymanReconciler())" in main


def test_conversion_makes_v1_the_hub_and_v2_a_spoke_of_it(project: Path, tmp_path: Path) -> None:
    assert (
        "class Frigate(kubeforge.Resource[FrigateSpec, FrigateStatus], conversion.Hub):"
        in (project / "api" / "v1" / "frigate.py").read_text()
    )
    spoke = (project / "api" / "v2" / "frigate.py").read_text()
    assert "conversion.Convertible[v1.Frigate]" in spoke
    assert "def to_hub(self) -> v1.Frigate:" in spoke
    assert "def from_hub(cls, hub: v1.Frigate) -> Self:" in spoke
    # Both versions are imported with the API package, so the hub always knows its spoke.
    assert (
        'from api import v1, v2\n\n__all__ = ["v1", "v2"]'
        in (project / "api" / "__init__.py").read_text()
    )
    crd = yaml.safe_load((project / "config/crd/bases/ship.example.com_frigates.yaml").read_text())
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"] == "/convert"
    kustomization = (project / "config" / "crd" / "kustomization.yaml").read_text()
    assert "\n- path: patches/webhook_in_frigates.yaml\n" in kustomization
    assert "\n- path: patches/cainjection_in_frigates.yaml\n" in kustomization
    # The comment above the CA injection says it is on, as `kubeforge manifests` writes it.
    assert (
        "# [CERTMANAGER] cert-manager injects the CA bundle into those CRDs (with config/default\n"
        "# replacing CERTIFICATE_NAMESPACE and CERTIFICATE_NAME).\n"
        "- path: patches/cainjection_in_frigates.yaml\n"
    ) in kustomization
    assert "Uncomment" not in kustomization
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    generate(load_project(copy), Files(copy, brief=True))
    assert (copy / "config" / "crd" / "kustomization.yaml").read_text() == kustomization


def test_a_cluster_scoped_kind_with_an_irregular_plural(project: Path) -> None:
    assert (
        '@kubeforge.resource(group="ship.example.com", version="v1", scope="Cluster", '
        'plural="ferrymen")' in (project / "api" / "v1" / "ferryman.py").read_text()
    )
    crd = yaml.safe_load((project / "config/crd/bases/ship.example.com_ferrymen.yaml").read_text())
    assert crd["metadata"]["name"] == "ferrymen.ship.example.com"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"] == {
        "kind": "Ferryman",
        "listKind": "FerrymanList",
        "plural": "ferrymen",
        "singular": "ferryman",
    }
    crd_resources = yaml.safe_load((project / "config/crd/kustomization.yaml").read_text())
    assert "bases/ship.example.com_ferrymen.yaml" in crd_resources["resources"]
    # The derived plural is used nowhere, in file names or in content.
    for path, content in files_of(project).items():
        assert "ferrymans" not in path and b"ferrymans" not in content, path

    # The sample is named after the kind, as kubebuilder names samples; it has no namespace.
    sample = yaml.safe_load((project / "config/samples/ship_v1_ferryman.yaml").read_text())
    assert (sample["apiVersion"], sample["kind"]) == ("ship.example.com/v1", "Ferryman")
    assert sample["metadata"]["name"] == "ferryman-sample"
    assert "namespace" not in sample["metadata"]
    samples = yaml.safe_load((project / "config/samples/kustomization.yaml").read_text())
    assert "ship_v1_ferryman.yaml" in samples["resources"]
    # Its test creates and reads the sample without a namespace.
    test = (project / "tests" / "test_ferryman.py").read_text()
    assert 'metadata=kubeforge.ObjectMeta(name="ferryman-sample"),' in test
    assert 'await kubeforge_client.get(Ferryman, "ferryman-sample")' in test

    # The manager's ClusterRole grants the plural, as for any kind; so do the helper roles.
    controller = (project / "controllers" / "ferryman.py").read_text()
    for resource in ("ferrymen", "ferrymen/status", "ferrymen/finalizers"):
        assert f'resources="{resource}"' in controller, resource
    role = yaml.safe_load((project / "config/rbac/role.yaml").read_text())
    assert (role["kind"], role["metadata"]["name"]) == ("ClusterRole", "manager-role")
    rules = rules_of(role)
    assert rules["ship.example.com", "ferrymen"] == [
        "create",
        "delete",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert rules["ship.example.com", "ferrymen/status"] == ["get", "patch", "update"]
    assert rules["ship.example.com", "ferrymen/finalizers"] == ["update"]
    for helper in ("admin", "editor", "viewer"):
        role = yaml.safe_load((project / f"config/rbac/ferryman_{helper}_role.yaml").read_text())
        assert (role["kind"], role["metadata"]["name"]) == (
            "ClusterRole",
            f"ferryman-{helper}-role",
        )
        assert {"ferrymen", "ferrymen/status"} == {
            r for rule in role["rules"] for r in rule["resources"]
        }
    roles = yaml.safe_load((project / "config/rbac/kustomization.yaml").read_text())
    assert {f"ferryman_{helper}_role.yaml" for helper in ("admin", "editor", "viewer")} <= set(
        roles["resources"]
    )


async def test_init_project_name_names_the_project_not_its_directory(tmp_path: Path) -> None:
    root = tmp_path / "checkout-7f3a"
    root.mkdir()
    done = cli("init", "--domain", "example.com", "--project-name", "harbor", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "Writing the scaffold of project harbor (domain example.com)" in done.stdout

    assert yaml.safe_load((root / "PROJECT").read_text())["projectName"] == "harbor"
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "harbor"
    # The manager's name: its leader election Lease is harbor-leader-election.
    assert 'kubeforge.manager_main(setup, name="harbor")' in (root / "main.py").read_text()
    default = yaml.safe_load((root / "config/default/kustomization.yaml").read_text())
    assert (default["namespace"], default["namePrefix"]) == ("harbor-system", "harbor-")
    readme = (root / "README.md").read_text()
    assert "# harbor\n" in readme and "kubectl get pods -n harbor-system" in readme
    # kubebuilder's Makefile and Dockerfile name the project only for kind's e2e cluster and
    # the buildx builder, which these have not; nothing names the directory.
    for path, content in files_of(root).items():
        assert b"checkout-7f3a" not in content, path

    # What config/default builds is in NAME-system, each name prefixed with NAME-.
    built = [o for o in await kustomize(root / "config" / "default") if o]
    objects = by_kind(built)
    assert ("Namespace", "harbor-system") in objects
    deployment = objects["Deployment", "harbor-controller-manager"]
    assert deployment["metadata"]["namespace"] == "harbor-system"
    assert deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "harbor"
    binding = objects["ClusterRoleBinding", "harbor-manager-rolebinding"]
    assert binding["roleRef"]["name"] == "harbor-manager-role"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "harbor-controller-manager",
            "namespace": "harbor-system",
        }
    ]
    for obj in built:
        assert obj["metadata"]["name"].startswith("harbor-"), obj["metadata"]["name"]
        assert obj["metadata"].get("namespace", "harbor-system") == "harbor-system"


async def project_checks(project: Path) -> str:
    """Run a generated project's lint, format check, type check and tests, each of which must
    pass; pytest's output."""
    python = sys.executable
    checks = await asyncio.gather(
        run(python, "-m", "ruff", "check", ".", cwd=project),
        run(python, "-m", "ruff", "format", "--check", ".", cwd=project),
        run(python, "-m", "mypy", "--cache-dir", str(MYPY_CACHE), ".", cwd=project),
        run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project),
    )
    for code, out in checks:
        assert code == 0, out
    return checks[3][1]


async def test_the_generated_project_passes_ruff_mypy_and_its_own_tests(project: Path) -> None:
    tests = await project_checks(project)
    assert "7 passed" in tests, tests


# build and deploy ----------------------------------------------------------------------------


def by_kind(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


async def test_deploy_applies_config_default_and_undeploy_removes_it(
    project: Path, tmp_path: Path
) -> None:
    copy = tmp_path / PROJECT
    code, out = await run("cp", "-r", str(project), str(copy), cwd=tmp_path)
    assert code == 0, out

    async with TestEnv(crd_paths=()) as env:
        kubeconfig = env.write_kubeconfig(tmp_path / "kubeconfig")
        # Without cert-manager, nothing is applied and the command says what is missing.
        refused = await kubeforge("deploy", "--dir", str(copy), "--kubeconfig", str(kubeconfig))
        assert refused.code == 1
        assert refused.err.strip().splitlines() == [
            "error: the cluster does not serve Certificate (cert-manager.io/v1), Issuer "
            "(cert-manager.io/v1): config/certmanager needs cert-manager: "
            "https://cert-manager.io/docs/installation/"
        ], refused.err
        with pytest.raises(NotFound):
            await env.client.get("v1/Namespace", NAMESPACE)

        for crd in CERT_MANAGER_CRDS:
            await env.client.apply(crd, field_manager="test", force=True)
        await env.client.wait_established([c["metadata"]["name"] for c in CERT_MANAGER_CRDS])
        env.client.discovery.invalidate()
        done = await kubeforge(
            "deploy",
            "--dir",
            str(copy),
            "--img",
            "registry.example.com/fleet:v1.2",
            "--kubeconfig",
            str(kubeconfig),
            "--no-wait",
        )
        assert done.code == 0, done.out + done.err
        assert "applied      Deployment fleet-system/fleet-controller-manager" in done.out

        # The image was set as `kustomize edit set image` sets it, so kubectl's build is what
        # was applied.
        manager_kustomization = yaml.safe_load(
            (copy / "config" / "manager" / "kustomization.yaml").read_text()
        )
        assert manager_kustomization["images"] == [
            {"name": "controller", "newName": "registry.example.com/fleet", "newTag": "v1.2"}
        ]
        built = by_kind([o for o in await kustomize(copy / "config" / "default") if o])
        applied_lines = [ln for ln in done.out.splitlines() if ln.startswith("applied")]
        assert len(applied_lines) == len(built)

        deployment = await env.client.get("apps/v1/Deployment", DEPLOYMENT, namespace=NAMESPACE)
        assert deployment["spec"] == {
            **deployment["spec"],
            "replicas": 1,
            "selector": {
                "matchLabels": {
                    "control-plane": "controller-manager",
                    "app.kubernetes.io/name": PROJECT,
                }
            },
        }
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == f"{PROJECT}-controller-manager"
        assert pod["terminationGracePeriodSeconds"] == 10
        assert pod["securityContext"] == {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        (container,) = pod["containers"]
        assert container["image"] == "registry.example.com/fleet:v1.2"
        assert container["command"] == ["manager"]
        assert container["args"] == [
            "--metrics-bind-address=:8443",
            "--leader-elect",
            "--health-probe-bind-address=:8081",
            "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
            "--webhook-port=9443",
        ]
        assert container["securityContext"] == {
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }
        assert container["livenessProbe"]["httpGet"] == {
            "path": "/healthz",
            "port": 8081,
            "scheme": "HTTP",
        }
        assert container["readinessProbe"]["httpGet"] == {
            "path": "/readyz",
            "port": 8081,
            "scheme": "HTTP",
        }
        assert set(container["resources"]) == {"limits", "requests"}
        assert {p["containerPort"] for p in container["ports"]} == {8081, 8443, 9443}
        assert container["volumeMounts"] == [
            {
                "mountPath": "/tmp/k8s-webhook-server/serving-certs",
                "name": "webhook-certs",
                "readOnly": True,
            }
        ]
        (volume,) = pod["volumes"]
        assert volume["name"] == "webhook-certs"
        assert volume["secret"]["secretName"] == "webhook-server-cert"

        # RBAC: the manager's ServiceAccount is bound to its roles.
        binding = await env.client.get(
            "rbac.authorization.k8s.io/v1/ClusterRoleBinding", f"{PROJECT}-manager-rolebinding"
        )
        assert binding["roleRef"]["name"] == f"{PROJECT}-manager-role"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": DEPLOYMENT, "namespace": NAMESPACE}
        ]
        role = await env.client.get(
            "rbac.authorization.k8s.io/v1/ClusterRole", f"{PROJECT}-manager-role"
        )
        assert any("frigates" in rule.get("resources", []) for rule in role["rules"])
        assert any("ferrymen" in rule.get("resources", []) for rule in role["rules"])
        await env.client.get(
            "rbac.authorization.k8s.io/v1/Role",
            f"{PROJECT}-leader-election-role",
            namespace=NAMESPACE,
        )
        crd = await env.client.get(
            "apiextensions.k8s.io/v1/CustomResourceDefinition", "frigates.ship.example.com"
        )
        assert crd["spec"]["names"]["kind"] == "Frigate"
        crd = await env.client.get(
            "apiextensions.k8s.io/v1/CustomResourceDefinition", "ferrymen.ship.example.com"
        )
        assert crd["spec"]["scope"] == "Cluster"
        webhooks = await env.client.get(
            "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
            f"{PROJECT}-validating-webhook-configuration",
        )
        assert webhooks["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{PROJECT}-serving-cert"
        }
        service = webhooks["webhooks"][0]["clientConfig"]["service"]
        assert (service["name"], service["namespace"]) == (f"{PROJECT}-webhook-service", NAMESPACE)
        certificate = await env.client.get(
            "cert-manager.io/v1/Certificate", f"{PROJECT}-serving-cert", namespace=NAMESPACE
        )
        assert certificate["spec"]["dnsNames"] == [
            f"{PROJECT}-webhook-service.{NAMESPACE}.svc",
            f"{PROJECT}-webhook-service.{NAMESPACE}.svc.cluster.local",
        ]

        # Applying again changes nothing and succeeds (server-side apply).
        again = await kubeforge(
            "deploy", "--dir", str(copy), "--kubeconfig", str(kubeconfig), "--no-wait"
        )
        assert again.code == 0, again.err

        gone = await kubeforge("undeploy", "--dir", str(copy), "--kubeconfig", str(kubeconfig))
        assert gone.code == 0, gone.out + gone.err
        assert f"deleted      {len(built)} objects" in gone.out, gone.out
        for (kind, name), obj in built.items():
            namespace = obj["metadata"].get("namespace")
            with pytest.raises(NotFound):
                await env.client.get(f"{obj['apiVersion']}/{kind}", name, namespace=namespace)

        # Undeploying what is not there reports it and succeeds.
        twice = await kubeforge("undeploy", "--dir", str(copy), "--kubeconfig", str(kubeconfig))
        assert twice.code == 0, twice.err
        assert "not found    Namespace fleet-system" in twice.out


async def test_build_installer_writes_what_kustomize_builds(project: Path, tmp_path: Path) -> None:
    copy = tmp_path / PROJECT
    code, out = await run("cp", "-r", str(project), str(copy), cwd=tmp_path)
    assert code == 0, out
    done = await kubeforge(
        "build-installer", "--dir", str(copy), "--img", "fleet:dev", "--replicas", "3"
    )
    assert done.code == 0, done.err
    assert "replicas     controller-manager=3 (config/manager/kustomization.yaml)" in done.out
    installer = [d for d in yaml.safe_load_all((copy / "dist" / "install.yaml").read_text()) if d]
    assert installer == [o for o in await kustomize(copy / "config" / "default") if o]
    (deployment,) = [o for o in installer if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "fleet:dev"
    # As `kustomize edit set replicas` writes it, so kubectl's own build has it too.
    assert deployment["spec"]["replicas"] == 3
    manager = yaml.safe_load((copy / "config/manager/kustomization.yaml").read_text())
    assert manager["replicas"] == [{"name": "controller-manager", "count": 3}]
    # The CRD calls the conversion webhook through the project's Service, with the CA
    # cert-manager injects from the serving certificate.
    crds = by_kind([o for o in installer if o["kind"] == "CustomResourceDefinition"])
    crd = crds["CustomResourceDefinition", "frigates.ship.example.com"]
    assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NAMESPACE}/{PROJECT}-serving-cert"
    )
    service = crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert (service["name"], service["namespace"]) == (f"{PROJECT}-webhook-service", NAMESPACE)


# running again, and errors -----------------------------------------------------------------


def test_commands_run_again_refuse_in_one_line_and_change_nothing(project: Path) -> None:
    before = files_of(project)
    cases = [
        (("init", "--domain", "example.com"), "already a project"),
        (
            ("create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate"),
            "Frigate already exists in ship.example.com/v1",
        ),
        (
            (
                "create",
                "webhook",
                "--group",
                "ship",
                "--version",
                "v1",
                "--kind",
                "Frigate",
                "--defaulting",
            ),
            "already has a defaulting webhook",
        ),
        (
            (
                "create",
                "webhook",
                "--group",
                "ship",
                "--version",
                "v1",
                "--kind",
                "Sloop",
                "--defaulting",
            ),
            "no Sloop in ship.example.com/v1",
        ),
        (
            (*FRIGATE_WEBHOOK, "--conversion", "--spoke", "v2"),
            "already has a conversion webhook",
        ),
    ]
    for args, message in cases:
        done = cli(*args, cwd=project)
        assert done.returncode == 1, (args, done.stdout)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (
            args,
            done.stderr,
        )
    assert files_of(project) == before


def test_a_controller_added_later_skips_the_existing_files(tmp_path: Path) -> None:
    root = tmp_path / "later"
    root.mkdir()
    assert cli("init", "--domain", "example.com", "--license", "none", cwd=root).returncode == 0
    base = ("create", "api", "--group", "ship", "--version", "v1", "--kind", "Sloop")
    done = cli(*base, "--no-controller", cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / "controllers" / "sloop.py").exists()
    # A test file the user wrote meanwhile, where the controller's test would go, is kept.
    (root / "tests" / "test_sloop.py").write_text("# mine\n")
    done = cli(*base, "--no-resource", "--controller", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "skipped    tests/test_sloop.py (exists; left as it is)" in done.stdout
    assert (root / "tests" / "test_sloop.py").read_text() == "# mine\n"
    assert (root / "controllers" / "sloop.py").is_file()
    assert (
        "manager.controller().for_(Sloop).complete(SloopReconciler())"
        in (root / "main.py").read_text()
    )
    entry = yaml.safe_load((root / "PROJECT").read_text())["resources"][0]
    assert entry["controller"] is True and entry["api"]["namespaced"] is True

    # A second version of the kind: its type only, not stored; one controller per kind.
    v2 = ("create", "api", "--group", "ship", "--version", "v2", "--kind", "Sloop")
    done = cli(*v2, cwd=root)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: Sloop already has a controller (in v1); add v2 with --no-controller"
    )
    done = cli(*v2, "--no-controller", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "storage=False" in (root / "api" / "v2" / "sloop.py").read_text()
    assert "from api.v1 import Sloop" in (root / "main.py").read_text()
    assert "api.v2" not in (root / "main.py").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--group", "ship", "--version", "v1", "--kind", "frigate"), "must be PascalCase"),
        (("--group", "ship", "--version", "v1", "--kind", "Fri-gate"), "must be PascalCase"),
        (("--group", "Ship_Yard", "--version", "v1", "--kind", "Frigate"), "invalid group"),
        (("--group", "ship", "--version", "1", "--kind", "Frigate"), "invalid version '1'"),
        (("--group", "ship", "--version", "v1beta", "--kind", "Frigate"), "invalid version"),
        (("--group", "ship", "--version", "V1", "--kind", "Frigate"), "invalid version"),
        (("--group", "ship", "--version", "v1", "--kind", "Frigate", "--plural", "Frig"), "plural"),
    ],
)
def test_bad_names_are_refused_in_one_line(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    root = tmp_path / "names"
    root.mkdir()
    assert cli("init", "--domain", "example.com", cwd=root).returncode == 0
    before = files_of(root)
    done = cli("create", "api", *args, cwd=root)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert files_of(root) == before


def test_init_refuses_a_directory_with_files_or_a_bad_domain(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    done = cli("init", "--domain", "example.com", cwd=busy)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: {busy}: not empty (notes.txt); run `kubeforge init` in an empty directory"
    ]
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".git").mkdir()  # a new repository is fine
    done = cli("init", "--domain", "Example_Com", cwd=fresh)
    assert done.returncode == 1 and "invalid domain 'Example_Com'" in done.stderr
    done = cli("create", "api", "--group", "a", "--version", "v1", "--kind", "A", cwd=fresh)
    assert done.returncode == 1
    assert "not a kubeforge project (no PROJECT file)" in done.stderr
