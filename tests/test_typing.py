"""What a type checker sees in a reconciler: reads typed as the kind asked for, every client
satisfying the Reader / Writer / StatusWriter protocols, helpers typed for every client, and
mistakes reported. Checked by running mypy (strict, the project's settings) on a snippet."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import ROOT

SNIPPET = '''
from typing import Any, Unpack

import kubeforge
import kubeforge.cache
import kubeforge.client
import kubeforge.meta
import kubeforge.testing
import kubeforge.workqueue
from kubeforge.client import GetOptions, KindLike, KindOf, ListOptions, Obj, PatchOptions
from kubeforge.models import ConfigMap


class ThingSpec(kubeforge.Model):
    size: int = 1


@kubeforge.resource(group="typing.example.com", version="v1")
class Thing(kubeforge.Resource[ThingSpec, None]):
    """A thing."""


class Reconcile(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        thing = await self.client.get(Thing, request.name, namespace=request.namespace)
        reveal_type(thing)  # reveal: snippet.Thing
        everywhere = await self.client.list(Thing, all_namespaces=True)
        reveal_type(everywhere)  # reveal: kubeforge._client.client.ObjectList[snippet.Thing]
        raw = await self.client.get("v1/ConfigMap", "x", namespace="default")
        reveal_type(raw)  # reveal: dict[str, Any]
        meta = await self.client.get_metadata(Thing, "x")
        reveal_type(meta)  # reveal: kubeforge._api.meta.PartialObjectMetadata
        stored = await self.client.update_status(thing)
        reveal_type(stored)  # reveal: snippet.Thing
        patched = await self.client.patch(Thing, "x", {"spec": {"size": 2}})
        reveal_type(patched)  # reveal: snippet.Thing
        options: PatchOptions = {"field_manager": "x", "force": True, "patch_type": "apply"}
        applied = await self.client.patch(Thing, "x", {}, **options)
        reveal_type(applied)  # reveal: snippet.Thing
        await self.client.patch(Thing, "x", {}, patch_type="yaml")  # error: arg-type
        await self.client.delete(Thing, "x", propagation_policy="Background", dry_run=True)
        await self.client.delete_object(thing, grace_period_seconds="0")  # error: arg-type
        done = await kubeforge.create_or_update(self.client, ConfigMap(), lambda c: None)
        reveal_type(done[0])  # reveal: kubeforge.models.core_v1.ConfigMap
        reveal_type(done[1])  # reveal: kubeforge._runtime.upsert.OperationResult
        result = await kubeforge.with_finalizer(
            self.client, thing, "example.com/f", apply=self.apply, cleanup=self.apply
        )
        reveal_type(result)  # reveal: kubeforge._runtime.reconcile.Result | None
        size: str = thing.spec.size  # error: assignment
        return None

    async def apply(self, thing: Thing) -> kubeforge.Result | None:
        return None


class Blocking(kubeforge.SyncReconciler):
    def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        thing = self.client.get(Thing, request.name)
        reveal_type(thing)  # reveal: snippet.Thing
        raw = self.client.get("v1/ConfigMap", "x", namespace="default")
        reveal_type(raw)  # reveal: dict[str, Any]
        listed = self.client.list(Thing)
        reveal_type(listed)  # reveal: kubeforge._client.client.ObjectList[snippet.Thing]
        patched = self.client.patch(Thing, "x", {}, field_manager="x", force=True)
        reveal_type(patched)  # reveal: snippet.Thing
        status = self.client.patch_status("v1/ConfigMap", "x", {}, field_validation="Strict")
        reveal_type(status)  # reveal: dict[str, Any]
        reveal_type(self.client.update_status(thing))  # reveal: snippet.Thing
        self.client.patch(Thing, "x", {}, forse=True)  # error: call-arg
        self.client.patch(Thing, "x")  # error: call-arg
        self.client.delete_all_of(Thing, grace_period_seconds=0)  # error: call-arg
        done = kubeforge.create_or_patch(self.client, thing, lambda t: None)
        reveal_type(done[0])  # reveal: snippet.Thing
        return None


class Objects(kubeforge.ObjectReconciler[Thing]):
    async def reconcile(self, obj: Thing) -> kubeforge.Result | None:
        reveal_type(obj.spec)  # reveal: snippet.ThingSpec
        return None


def clients(
    live: kubeforge.Client,
    cached: kubeforge.cache.CachedClient,
    blocking: kubeforge.cache.SyncClient,
) -> None:
    readers: list[kubeforge.client.Reader] = [live, cached]
    writers: list[kubeforge.client.Writer] = [live, cached]
    status: list[kubeforge.client.StatusWriter] = [live, cached]
    both: list[kubeforge.ObjectClient] = [live, cached]
    sync: kubeforge.SyncObjectClient = blocking
    wrong: kubeforge.ObjectClient = blocking  # error: assignment
    unawaited: kubeforge.SyncObjectClient = cached  # error: assignment
    readers_by_hand: kubeforge.client.SyncReader = FakeReader()
    hooks = kubeforge.testing.Interceptors()
    intercepted: kubeforge.ObjectClient = kubeforge.testing.InterceptedClient(cached, hooks)
    reveal_type(kubeforge.testing.intercept(live, hooks))  # reveal: kubeforge._client.client.Client


class FakeReader:
    """A blocking reader written by hand satisfies the protocol made from `Reader`."""

    def get(self, kind: KindOf[Obj], name: str, **options: Unpack[GetOptions]) -> Obj:
        raise NotImplementedError

    def list(
        self, kind: KindOf[Obj], **options: Unpack[ListOptions]
    ) -> kubeforge.client.ObjectList[Obj]:
        raise NotImplementedError

    def get_metadata(
        self, kind: KindLike, name: str, **options: Unpack[GetOptions]
    ) -> kubeforge.meta.PartialObjectMetadata:
        raise NotImplementedError

    def list_metadata(
        self, kind: KindLike, **options: Unpack[ListOptions]
    ) -> kubeforge.client.ObjectList[kubeforge.meta.PartialObjectMetadata]:
        raise NotImplementedError


def wiring(manager: kubeforge.Manager, config: dict[str, Any]) -> None:
    reveal_type(manager.event_recorder("x"))  # reveal: kubeforge._runtime.events.EventRecorder
    builder = manager.controller().for_(Thing)
    builder.with_options(max_concurrent_reconciles=2, rate_limiter=kubeforge.workqueue.MaxOf())
    builder.with_options(max_concurrent_reconciles="2")  # error: arg-type
    builder.with_options(workers=2)  # error: call-arg
    kubeforge.set_controller_reference(config, config)
    kubeforge.set_controller_reference(3, config)  # error: arg-type
'''


def test_reconcilers_and_clients_are_typed(tmp_path: Path) -> None:
    source = textwrap.dedent(SNIPPET)
    path = tmp_path / "snippet.py"
    path.write_text(source)
    expected: dict[int, tuple[str, str]] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        found = re.search(r"# (reveal|error): (.+)$", line)
        if found:
            expected[number] = (found.group(1), found.group(2).strip())
    # The project's settings (strict, the pydantic plugin), and its cache when warm.
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seen: dict[int, tuple[str, str]] = {}
    unexpected: list[str] = []
    for line in run.stdout.splitlines():
        found = re.match(r".*snippet\.py:(\d+): (note|error): (.*)$", line)
        if not found:
            continue
        number, level, text = int(found.group(1)), found.group(2), found.group(3)
        if level == "note" and text.startswith("Revealed type is "):
            seen[number] = ("reveal", text.removeprefix("Revealed type is ").strip('"'))
        elif level == "error":
            code = re.search(r"\[([a-z-]+)\]$", text)
            seen[number] = ("error", code.group(1) if code else text)
            if number not in expected:
                unexpected.append(line)
    assert unexpected == [], run.stdout
    assert seen == expected, run.stdout


USER_SNIPPET = """
import kubeforge
from kubeforge.models import Container, CronJobSpec, JobTemplateSpec


class CronTabSpec(kubeforge.Model):
    schedule: str
    starting_deadline_seconds: int | None = None


spec = CronTabSpec(schedule="* * * * *", startng_deadline_seconds=10)  # error: call-arg
wrong = CronTabSpec(schedule=5)  # error: arg-type
cron = CronJobSpec(schedule="@daily", job_template=JobTemplateSpec(), suspnd=1)  # error: call-arg
container = Container(name="c", imagePullPolicy="Always")  # error: call-arg
good = Container(name="c", image_pull_policy="Always")
"""


def test_a_misspelt_field_is_a_type_error_in_a_scaffolded_project(tmp_path: Path) -> None:
    """A project's mypy settings, as `kubeforge init` writes them, report a constructor's
    unknown or mistyped keyword (the Python field names are the constructor's)."""
    from kubeforge._scaffold.render import render

    values = {"project_name": "crontab", "kubeforge_version": "0.1.0", "license_field": ""}
    (tmp_path / "pyproject.toml").write_text(render("init/pyproject.toml", values))
    source = textwrap.dedent(USER_SNIPPET)
    (tmp_path / "snippet.py").write_text(source)
    cache = ROOT / ".mypy_cache" / "scaffolded"
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "snippet.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    expected = {
        number: found.group(1)
        for number, line in enumerate(source.splitlines(), start=1)
        if (found := re.search(r"# error: (.+)$", line))
    }
    seen = {
        int(found.group(1)): found.group(2)
        for line in run.stdout.splitlines()
        if (found := re.match(r"snippet\.py:(\d+): error: .*\[([a-z-]+)\]$", line))
    }
    assert seen == expected, run.stdout
