"""The typed API end to end: the seed resources' CRDs match their reviewed YAML, the API
server accepts them, and invalid objects are refused by the server and by
`Resource.validate()` with the same field paths."""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import kubeforge
import kubeforge.webhook
from kubeforge import Client, Invalid
from kubeforge._api.crd import crd_filename, dump_yaml, group_crds
from kubeforge._runtime.localwebhooks import LocalServing, register_webhook_server, serve_locally
from kubeforge.testing import Kubectl
from tests.support import ROOT

EXAMPLES = ROOT / "examples"
# Each example's kinds, as (module, class) pairs; a kind's versions are all listed.
SEEDS = {
    "cnat": [("api.v1alpha1", "At"), ("api.v1", "At")],
    "useless": [("api.v1alpha1", "Machine"), ("api.v1alpha1", "Switch")],
    "webserver": [("api.v1", "WebServer")],
    "customcluster": [("api.v1alpha1", "Customcluster")],
    "watcher": [("api.v1alpha1", "Watcher")],
}


@contextmanager
def project(name: str) -> Iterator[None]:
    """Import an example project's api package in isolation (each example has its own `api`)."""
    root = str(EXAMPLES / name)
    saved = {k: v for k, v in sys.modules.items() if k == "api" or k.startswith("api.")}
    for key in saved:
        del sys.modules[key]
    sys.path.insert(0, root)
    try:
        yield
    finally:
        sys.path.remove(root)
        for key in [k for k in sys.modules if k == "api" or k.startswith("api.")]:
            del sys.modules[key]
        sys.modules.update(saved)


def classes(name: str) -> list[type[Any]]:
    with project(name):
        return [getattr(importlib.import_module(module), kind) for module, kind in SEEDS[name]]


ALL = {name: classes(name) for name in SEEDS}


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_generated_crds_match_the_reviewed_yaml(name: str) -> None:
    for crd in group_crds(ALL[name]):
        golden = EXAMPLES / name / "config" / "crd" / "bases" / crd_filename(crd)
        assert golden.exists(), f"missing reviewed CRD {golden}"
        assert dump_yaml(crd) == golden.read_text(), f"{golden} differs from the generated CRD"


class ConversionServer:
    """A webhook server converting cnat's At (what cnat's manager serves), on this machine."""

    def __init__(self, server: kubeforge.webhook.WebhookServer, local: LocalServing) -> None:
        self.server = server
        self.local = local


async def install(
    api: Client, kinds: list[type[Any]], conversion: ConversionServer | None = None
) -> None:
    """The kinds' CRDs, pointed at `conversion`'s webhook server when they convert."""
    crds = group_crds(kinds)
    for crd in crds:
        await api.create(crd)
    await api.wait_established([c["metadata"]["name"] for c in crds])
    if conversion is not None:
        await register_webhook_server(api, conversion.server, ca_bundle=conversion.local.ca_bundle)


@pytest.fixture
async def conversion() -> AsyncIterator[ConversionServer]:
    """cnat's At conversion webhook, served on this machine."""
    server = kubeforge.webhook.WebhookServer()
    server.register_conversion(kind("cnat", "At", "v1"))
    local = serve_locally(server)
    await server.start()
    try:
        yield ConversionServer(server, local)
    finally:
        await server.stop()
        local.cleanup()


def kind(name: str, kind_name: str, version: str | None = None) -> type[Any]:
    return next(
        c
        for c in ALL[name]
        if c.__name__ == kind_name and version in (None, c.__kubeforge__.gvk.version)
    )


def valid_object(cls: type[Any]) -> dict[str, Any]:
    """A valid body for the class's kind, in its version."""
    gvk = cls.__kubeforge__.gvk
    objects = valid_objects()
    return objects.get(f"{gvk.kind}/{gvk.version}") or objects[gvk.kind]


def valid_objects() -> dict[str, dict[str, Any]]:
    return {
        "At": {"spec": {"schedule": "2026-11-21T09:00:00Z", "command": "echo hello"}},
        "At/v1": {"spec": {"schedule": "2026-11-21T09:00:00Z", "command": ["echo", "hello"]}},
        "Machine": {"spec": {"switchPosition": "up", "switches": 3}},
        "Switch": {"spec": {"position": "down"}},
        "WebServer": {"spec": {"replicas": 2, "image": "nginx:1.27"}},
        "Customcluster": {"spec": {"count": 2, "message": "hi"}},
        "Watcher": {
            "spec": {
                "container": {
                    "name": "main",
                    "image": "busybox:1.36",
                    "ports": [{"containerPort": 80}],
                },
                "configData": {"a": "b"},
                "configBinaryData": {"bin": "aGk="},
                "imagePullSecrets": [{"name": "registry"}],
                "volume": {"name": "data", "emptyDir": {}},
            }
        },
    }


def full(cls: type[Any], name: str, body: dict[str, Any]) -> dict[str, Any]:
    info = cls.__kubeforge__
    return {
        "apiVersion": info.gvk.api_version,
        "kind": info.gvk.kind,
        "metadata": {"name": name},
        **body,
    }


async def test_valid_objects_are_accepted_everywhere(
    api: Client, conversion: ConversionServer
) -> None:
    for name in SEEDS:
        await install(api, ALL[name], conversion)
    for kinds in ALL.values():
        for cls in kinds:
            body = full(cls, f"ok-{cls.__kubeforge__.gvk.version}", valid_object(cls))
            assert cls.validate_data(body) == [], (cls.__name__, cls.validate_data(body))
            created = await api.create(body)
            typed = cls.from_dict(created)
            assert typed.validate() == []


INVALID = [
    ("wrong type", "useless", "Machine", {"spec": {"switches": "many"}}, ["spec.switches"]),
    ("out of range", "useless", "Machine", {"spec": {"switches": 17}}, ["spec.switches"]),
    ("bad enum", "useless", "Switch", {"spec": {"position": "sideways"}}, ["spec.position"]),
    (
        "pattern",
        "cnat",
        "At",
        {"spec": {"schedule": "2026-11-21T09:00:00+02:00", "command": "x"}},
        ["spec.schedule"],
    ),
    (
        "missing required",
        "customcluster",
        "Customcluster",
        {"spec": {"count": 1}},
        ["spec.message"],
    ),
    ("failing rule", "webserver", "WebServer", {"spec": {"image": "nginx:latest"}}, ["spec.image"]),
    (
        "too long",
        "customcluster",
        "Customcluster",
        {"spec": {"message": "x" * 300}},
        ["spec.message"],
    ),
    (
        "container without image",
        "watcher",
        "Watcher",
        {"spec": {"container": {"name": "main"}}},
        ["spec.container.image"],
    ),
]


@pytest.mark.parametrize(
    ("case", "example", "kind_name", "body", "fields"), INVALID, ids=[c[0] for c in INVALID]
)
async def test_invalid_objects_fail_with_the_same_field_paths(
    api: Client, case: str, example: str, kind_name: str, body: dict[str, Any], fields: list[str]
) -> None:
    cls = kind(example, kind_name)
    await install(api, ALL[example])
    obj = full(cls, "bad", body)
    local = sorted({e.field for e in cls.validate_data(obj)})
    with pytest.raises(Invalid) as refused:
        await api.create(obj)
    remote = sorted({c["field"] for c in refused.value.causes})
    assert local == fields, (case, cls.validate_data(obj))
    assert remote == fields, (case, refused.value.causes)


async def test_a_failing_transition_rule_on_update(
    api: Client, conversion: ConversionServer
) -> None:
    cls = kind("cnat", "At", "v1alpha1")
    await install(api, ALL["cnat"], conversion)
    created = await api.create(full(cls, "once", valid_objects()["At"]))
    changed = dict(created, spec=dict(created["spec"], schedule="2026-12-01T00:00:00Z"))
    local = cls.validate_data(changed, old=created)
    assert [e.field for e in local] == ["spec.schedule"]
    assert "the schedule cannot be changed once set" in str(local[0])
    with pytest.raises(Invalid) as refused:
        await api.update(changed)
    assert [c["field"] for c in refused.value.causes] == ["spec.schedule"]
    assert str(local[0]).split(": ", 1)[1] in refused.value.message


async def test_kubectl_explain_shows_the_generated_docs(api: Client, kubectl: Kubectl) -> None:
    await install(api, ALL["useless"])
    out = (await kubectl.run("explain", "machine.spec")).out
    assert "switchPosition" in out and "The machine's own switch" in out
    assert "switches" in out and "How many Switch objects" in out
    top = (await kubectl.run("explain", "machine")).out
    assert "A useless machine" in top
