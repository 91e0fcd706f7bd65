"""A project's own dependencies, installed in its `.venv` and not in kubeforge's environment,
are importable where kubeforge runs the project: `kubeforge run`, and the manager deployed
onto a development cluster whose image is mapped to the project. Both write the same log
records: every line of a reconcile carries its controller, object and reconcile id.

The project's reconciler imports `tidemark`, a package made here (a wheel installed into
the project's `.venv` by pip, offline) that kubeforge's environment does not have."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib.util
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kubeforge import Client
from kubeforge._cluster.options import ClusterOptions
from kubeforge._cluster.projectenv import ProjectEnvironment, ProjectEnvironmentError
from kubeforge.testing import TestEnv, eventually
from tests.cli.test_cli_scaffold import KUBEFORGE, cli, scaffold
from tests.cli.test_create_webhook_versions import tree
from tests.cli.test_deploy_dev_cluster import NAMESPACE, deploy, frigate, manager_pods
from tests.support import free_port, kubeforge

DEPENDENCY = "tidemark"
MODULE = f"def mark(text: str) -> str:\n    return '{DEPENDENCY}: ' + text\n"
# A reconcile's text line: the message, then its fields (_runtime/logs.py's TextFormatter).
RECONCILE_LINE = re.compile(
    r"reconciling Frigate default/(?P<name>[a-z-]+) controller=frigate object_kind=Frigate "
    r"object_namespace=default object_name=(?P=name) reconcile_id=[0-9a-f-]{36}$",
    re.MULTILINE,
)


def wheel(directory: Path, name: str, source: str, version: str = "1.0") -> Path:
    """A pure-Python wheel of one module, as a build backend would write it."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}\n")
    files[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def make_venv(root: Path, *packages: Path) -> None:
    """`root/.venv` with `packages` installed by pip (from the files, no index)."""
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    if packages:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
             "--no-index", "--no-deps", "--quiet", *map(str, packages)],
            check=True,
        )  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scaffolded project whose reconciler writes what tidemark makes of the object's name
    into its Available condition, with tidemark in its .venv only."""
    assert importlib.util.find_spec(DEPENDENCY) is None, "kubeforge's environment has it"
    base = tmp_path_factory.mktemp("environment")
    root = base / "fleet"
    scaffold(root, webhook=False)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        re.sub(r"dependencies = \[", f'dependencies = ["{DEPENDENCY}", ', pyproject.read_text())
    )
    controller = root / "controllers" / "frigate.py"
    controller.write_text(
        controller.read_text()
        .replace("import logging\n", f"import logging\n\nimport {DEPENDENCY}\n", 1)
        .replace('message="the Frigate has been reconciled"', "message=tidemark.mark(request.name)")
    )
    make_venv(root, wheel(base, DEPENDENCY, MODULE))
    return root


async def marked(client: Client, name: str) -> bool:
    found = await client.get("ship.example.com/v1/Frigate", name, namespace="default")
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("message") == f"{DEPENDENCY}: {name}" for c in conditions)


async def test_run_imports_the_projects_dependencies_from_its_venv(
    project: Path, tmp_path: Path
) -> None:
    async with TestEnv(crd_paths=[project / "config" / "crd" / "bases"]) as env:
        kubeconfig = env.write_kubeconfig(tmp_path / "kubeconfig")
        await env.client.create(frigate("first"))
        proc = await asyncio.create_subprocess_exec(
            *KUBEFORGE, "run", "--dir", str(project), "--kubeconfig", str(kubeconfig),
            "--health-probe-bind-address", "0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:

            async def done_or_exited() -> bool:
                return proc.returncode is not None or await marked(env.client, "first")

            await eventually(done_or_exited, timeout=60)
            assert proc.returncode is None, "kubeforge run exited"
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            out, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = out.decode()
    assert proc.returncode == 0, text
    assert "warning" not in text, text
    assert RECONCILE_LINE.search(text), text


async def test_the_deployed_manager_imports_them_and_logs_as_run_does(
    project: Path, tmp_path: Path
) -> None:
    options = ClusterOptions(images={"controller:latest": project}, pod_start_seconds=0.05)
    async with TestEnv(crd_paths=(), options=options) as env:
        kubeconfig = str(env.write_kubeconfig(tmp_path / "kubeconfig"))
        await deploy(project, kubeconfig)
        await env.client.create(frigate("second"))
        await eventually(lambda: marked(env.client, "second"), timeout=30)
        (pod,) = await manager_pods(env.client)
        text = await env.client.logs(pod["metadata"]["name"], namespace=NAMESPACE)
        assert RECONCILE_LINE.search(text), text

        # The image's `python` sees them too, with kubeforge's packages.
        script = f"import kubeforge, {DEPENDENCY}; print({DEPENDENCY}.mark('pod'))"
        await env.client.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "script", "namespace": "default"},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "script",
                            "image": "controller:latest",
                            "command": ["python", "-c", script],
                        }
                    ],
                },
            }
        )

        async def finished() -> bool:
            found = await env.client.get("v1/Pod", "script", namespace="default")
            return (found.get("status") or {}).get("phase") in ("Succeeded", "Failed")

        await eventually(finished, timeout=30)
        found = await env.client.get("v1/Pod", "script", namespace="default")
        output = await env.client.logs("script", namespace="default")
        assert found["status"]["phase"] == "Succeeded", output
        assert output == f"{DEPENDENCY}: pod\n"


def test_the_projects_missing_dependencies_are_named(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'p'\nversion = '0'\ndependencies = [\n"
        f"  'kubeforge>=0.1', 'pyyaml>=6', '{DEPENDENCY}>=1', 'absent-thing',\n"
        f"  \"windows-only; sys_platform == 'win32'\", '{DEPENDENCY}-two>=2',\n]\n"
    )
    environment = ProjectEnvironment.of(root)
    assert environment.venv is None
    assert environment.missing() == [f"{DEPENDENCY}>=1", "absent-thing", f"{DEPENDENCY}-two>=2"]
    # What the .venv holds counts, with its version.
    make_venv(
        root,
        wheel(tmp_path, DEPENDENCY, MODULE),
        wheel(tmp_path, f"{DEPENDENCY}_two", MODULE, version="1.5"),
    )
    environment = ProjectEnvironment.of(root)
    assert environment.venv == root / ".venv"
    assert environment.missing() == ["absent-thing", f"{DEPENDENCY}-two>=2"]


def old_venv(root: Path) -> Path:
    """`root/.venv`, made by a Python kubeforge cannot load packages of."""
    venv = root / ".venv"
    (venv / "lib" / "python3.4" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.4.0\n")
    return venv


def test_a_venv_of_another_python_is_refused(tmp_path: Path) -> None:
    old_venv(tmp_path)
    with pytest.raises(ProjectEnvironmentError, match=r"is a Python 3\.4 environment"):
        ProjectEnvironment.of(tmp_path)


def test_init_and_create_refuse_it_before_writing_anything(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    old_venv(fresh)
    done = cli("init", "--domain", "example.com", cwd=fresh)
    assert done.returncode == 1 and "is a Python 3.4 environment" in done.stderr, done.stderr
    assert sorted(p.name for p in fresh.iterdir()) == [".venv"]

    root = tmp_path / "project"
    root.mkdir()
    assert cli("init", "--domain", "example.com", cwd=root).returncode == 0
    old_venv(root)
    before = tree(root)
    done = cli("create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate", cwd=root)
    assert done.returncode == 1 and "is a Python 3.4 environment" in done.stderr, done.stderr
    assert tree(root) == before


async def test_dev_refuses_an_image_whose_venv_is_of_another_python(tmp_path: Path) -> None:
    venv = old_venv(tmp_path)
    kubeconfig = tmp_path / "kubeconfig"
    done = await kubeforge(
        "dev", "--port", str(free_port()), "--kubeconfig", str(kubeconfig),
        "--image", f"demo:v1={tmp_path}",
    )  # fmt: skip
    assert done.code == 1, done.out + done.err
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert done.err.splitlines() == [
        f"error: --image 'demo:v1={tmp_path}': {venv} is a Python 3.4 environment and "
        f"kubeforge runs on Python {version}: recreate it with Python {version}, or install "
        "kubeforge into it and run its kubeforge (.venv/bin/kubeforge)"
    ]
    assert not kubeconfig.exists()
