"""The scaffold's pieces: names checked as kubebuilder checks them, the PROJECT file, edits at
markers, the image setting of deploy, Go-style boolean flags, TLS without a writable disk."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeforge._cli.deploy import set_image, split_image
from kubeforge._cli.run import _go_booleans
from kubeforge._runtime.metricsauth import serving_context
from kubeforge._scaffold.names import InvalidName, ResourceNames, check_domain
from kubeforge._scaffold.projectfile import ProjectFile
from kubeforge._scaffold.render import import_at_marker, insert_at_marker, render_tree, uncomment


@pytest.mark.parametrize("version", ["v1", "v2", "v1alpha1", "v2beta3", "v10beta12"])
def test_kubernetes_versions_are_accepted(version: str) -> None:
    names = ResourceNames.of(group="ship", domain="example.com", version=version, kind="Frigate")
    assert names.api_version == f"ship.example.com/{version}"


@pytest.mark.parametrize("version", ["1", "v0", "v1beta", "V1", "v1.0", "v1gamma1", "v1alpha0"])
def test_other_versions_are_refused(version: str) -> None:
    with pytest.raises(InvalidName, match="invalid version"):
        ResourceNames.of(group="ship", domain="example.com", version=version, kind="Frigate")


@pytest.mark.parametrize("kind", ["frigate", "Fri-gate", "Fri_gate", "9Frigate", ""])
def test_kinds_must_be_pascal_case(kind: str) -> None:
    with pytest.raises(InvalidName):
        ResourceNames.of(group="ship", domain="example.com", version="v1", kind=kind)


def test_groups_and_domains_are_dns_subdomains() -> None:
    with pytest.raises(InvalidName, match="invalid group"):
        ResourceNames.of(group="Ship", domain="example.com", version="v1", kind="Frigate")
    with pytest.raises(InvalidName, match="invalid group"):
        ResourceNames.of(group="ship", domain="x" * 250 + ".com", version="v1", kind="Frigate")
    with pytest.raises(InvalidName, match="invalid domain"):
        check_domain("example_com")


def test_names_derive_as_kubebuilder_derives_them() -> None:
    names = ResourceNames.of(group="ship", domain="example.com", version="v1", kind="Policy")
    assert names.plural == "policies"
    assert names.crd_name == "policies.ship.example.com"
    assert names.sample_file == "ship_v1_policy.yaml"
    assert names.module == "policy"


def test_the_project_file_keeps_what_it_does_not_know(tmp_path: Path) -> None:
    (tmp_path / "PROJECT").write_text(
        "cliVersion: 4.1.0\ndomain: example.com\nlayout:\n- kubeforge.dev/v1\n"
        "plugins:\n  helm.kubebuilder.io/v1-alpha: {}\nprojectName: fleet\nversion: '3'\n"
    )
    project = ProjectFile.load(tmp_path)
    project.resources.append({"group": "ship", "kind": "Frigate", "version": "v1"})
    text = project.render()
    assert text.rstrip().endswith('version: "3"')
    data = yaml.safe_load(text)
    assert data["cliVersion"] == "4.1.0"
    assert data["plugins"] == {"helm.kubebuilder.io/v1-alpha": {}}
    assert list(data) == sorted(data)
    assert ProjectFile.load(tmp_path).find("ship", "v1", "Frigate") is None  # not saved


def test_first_party_imports_go_in_sorted_order_above_the_marker() -> None:
    text = "import kubeforge\n\n# +mark\n\n\ndef setup() -> None: ...\n"
    text = import_at_marker(text, "+mark", "from controllers.b import B") or ""
    text = import_at_marker(text, "+mark", "from api.v1 import B") or ""
    again = import_at_marker(text, "+mark", "from api.v1 import B")
    assert (
        text
        == again
        == (
            "import kubeforge\n\nfrom api.v1 import B\nfrom controllers.b import B\n\n# +mark\n\n\n"
            "def setup() -> None: ...\n"
        )
    )
    assert import_at_marker(text, "+missing", "from api import X") is None


def test_insertions_and_uncommenting_happen_once() -> None:
    text = "a:\n# +marker\n"
    once = insert_at_marker(text, "+marker", "- one")
    assert once == "a:\n- one\n# +marker\n"
    assert insert_at_marker(once or "", "+marker", "- one") == once
    commented = "resources:\n#- ../crd\n- ../rbac\n"
    assert uncomment(commented, "#- ../crd\n") == "resources:\n- ../crd\n- ../rbac\n"
    assert uncomment("resources:\n- ../crd\n", "#- ../crd\n") is None


def test_the_init_templates_have_a_value_for_every_placeholder() -> None:
    values = {
        "project_name": "fleet",
        "domain": "example.com",
        "kubeforge_version": "0.1.0",
        "header": "",
        "license_field": "",
        "license_section": "",
    }
    files = dict(render_tree("init", values))
    assert {"Makefile", "Dockerfile", ".dockerignore", ".gitignore", "main.py"} <= set(files)
    assert not any("{{" in content for content in files.values())


@pytest.mark.parametrize(
    ("image", "entry"),
    [
        ("controller:latest", {"newName": "controller", "newTag": "latest"}),
        ("registry:5000/team/op:v1", {"newName": "registry:5000/team/op", "newTag": "v1"}),
        ("registry:5000/team/op", {"newName": "registry:5000/team/op"}),
        ("op@sha256:abc", {"newName": "op", "digest": "sha256:abc"}),
    ],
)
def test_images_split_as_kustomize_edit_set_image_does(image: str, entry: dict[str, str]) -> None:
    assert split_image(image) == entry


def test_set_image_rewrites_only_the_controller_entry(tmp_path: Path) -> None:
    manager = tmp_path / "config" / "manager"
    manager.mkdir(parents=True)
    (manager / "kustomization.yaml").write_text(
        "resources:\n- manager.yaml\nimages:\n- name: sidecar\n  newTag: '2'\n"
        "- name: controller\n  newName: controller\n  newTag: latest\n"
    )
    assert set_image(tmp_path, "example.com/op:v2") is True
    assert set_image(tmp_path, "example.com/op:v2") is False
    data = yaml.safe_load((manager / "kustomization.yaml").read_text())
    assert data["images"] == [
        {"name": "sidecar", "newTag": "2"},
        {"name": "controller", "newName": "example.com/op", "newTag": "v2"},
    ]


def test_go_style_boolean_flags_are_understood() -> None:
    assert _go_booleans(
        ["--leader-elect=true", "--metrics-secure=false", "--metrics-bind-address=:8443"]
    ) == ["--leader-elect", "--no-metrics-secure", "--metrics-bind-address=:8443"]


def test_a_certificate_made_in_memory_loads_without_a_temporary_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pod with a read-only root filesystem has no writable temporary directory.
    def no_temp(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("tempfile.TemporaryDirectory", no_temp)
    # Secure metrics without --metrics-cert-path make their certificate in memory; loading
    # it through a temporary directory would raise here.
    context = serving_context(None, "127.0.0.1")
    assert context.verify_mode == ssl.CERT_NONE  # no client certificates asked for


def test_the_webhook_server_imports_without_a_writable_temporary_directory() -> None:
    code = (
        "import tempfile\n"
        "def fail(*a, **k): raise FileNotFoundError('No usable temporary directory found')\n"
        "tempfile.gettempdir = fail\n"
        "import kubeforge._webhook.server as s\n"
        "print(s.DEFAULT_CERT_DIR)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": "/var/run/empty"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "/var/run/empty/k8s-webhook-server/serving-certs"


def test_imports_of_one_module_are_merged_as_isort_merges_them() -> None:
    text = "import kubeforge\n\n# +mark\n"
    text = import_at_marker(text, "+mark", "from api.v1 import Frigate") or ""
    text = import_at_marker(text, "+mark", "from api.v1 import Sloop") or ""
    text = import_at_marker(text, "+mark", "from api.v1 import Barge") or ""
    assert "from api.v1 import Barge, Frigate, Sloop\n" in text
    assert text.count("from api.v1") == 1
