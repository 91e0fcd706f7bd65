"""Running examples against the server and holding it to its invariants:

- no answer is a 5xx (a 500 is always a bug);
- a refused or dry-run write changes nothing (every object the example works on keeps its
  resourceVersion and body);
- an accepted write stored what it answered;
- lists, gets and every watcher agree on each object;
- the server stays healthy: /readyz answers, and an ordinary write still succeeds.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests.fuzz.kinds import CRD, KINDS, Kind
from tests.fuzz.operations import NAMES, Example, Op
from tests.fuzz.shapes import definition_of, integer_problems
from tests.fuzz.target import Answer, Client, ServerThread, Watcher, wait_until
from tests.fuzz.values import to_json

__all__ = ["Fuzzer", "Violation"]

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class Violation(AssertionError):
    """The server broke an invariant."""


@dataclass
class Stats:
    requests: int = 0
    examples: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    by_request: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    too_new: int = 0  # 504s for a resourceVersion the server has not reached (by design)


class Fuzzer:
    """Sends examples to a server and checks the invariants after each request.

    With `strict`, the first violation raises (for Hypothesis to shrink); otherwise every
    violation is recorded in `stats` and the run goes on.
    """

    def __init__(self, target: ServerThread, strict: bool = True) -> None:
        self.target = target
        self.strict = strict
        self.client = Client(target)
        self.stats = Stats()
        self._counter = itertools.count()
        self._answer(self.client.request("POST", _CRDS, orjson.dumps(CRD), "application/json"))
        gadgets = KINDS["gadgets"].collection(None)
        if not wait_until(lambda: self.client.request("GET", gadgets).status == 200, 10):
            raise RuntimeError("the fuzzed CRD was not served")
        self.watchers = {
            plural: Watcher(target, kind.collection(None)) for plural, kind in KINDS.items()
        }

    def close(self) -> None:
        for watcher in self.watchers.values():
            watcher.close()
        self.client.close()

    # requests --------------------------------------------------------------------------

    def _answer(self, answer: Answer, what: str = "") -> Answer:
        self.stats.requests += 1
        self.stats.statuses[answer.status] += 1
        if answer.status >= 500 and _too_large_resource_version(answer):
            self.stats.too_new += 1
        elif answer.status >= 500:
            trace = self.target.failures.about(answer.audit_id)
            self._violate(
                f"{answer.status} for {what}\n  answer: {answer.body[:500]!r}\n  log: {trace}"
            )
        return answer

    def _send(
        self,
        method: str,
        target: str,
        body: str | bytes | None = None,
        content_type: str | None = None,
        *,
        what: str = "",
        watch: bool = False,
        accept: str = "application/json",
    ) -> Answer:
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        answer = self.client.request(
            method, target, data, content_type, read_body=not watch, accept=accept
        )
        return self._answer(answer, what or f"{method} {target}")

    def _violate(self, message: str) -> None:
        self.stats.violations.append(message)
        if self.strict:
            raise Violation(message)

    # examples --------------------------------------------------------------------------

    def run(self, example: Example) -> None:
        """Send one example's requests, checking the invariants after each."""
        n = next(self._counter)
        self.stats.examples += 1
        kind = example.kind
        namespace = f"fz-{n}"
        prefix = f"fz{n}-"
        self._send(
            "POST",
            "/api/v1/namespaces",
            orjson.dumps({"metadata": {"name": namespace}}),
            "application/json",
        )
        scope = _Scope(kind, namespace if kind.namespaced else None, prefix)
        if example.seed is not None:
            seed = dict(example.seed)
            seed["metadata"] = {"name": scope.name(NAMES[0])}
            self._send("POST", scope.collection, to_json(seed), "application/json", what="seed")
        for op in example.ops:
            self._run_op(scope, op)
        self._check_agreement(scope)
        self._check_health(namespace)

    def _run_op(self, scope: _Scope, op: Op) -> None:
        before = self._snapshot(scope)
        path = scope.collection + scope.expand(op.path)
        target = path + ("?" + scope.expand(op.query) if op.query else "")
        body = scope.expand(op.body) if isinstance(op.body, str) else op.body
        what = op.describe()
        answer = self._send(
            op.method, target, body, op.content_type, what=what, watch=op.watch, accept=op.accept
        )
        self.stats.by_request[f"{op.method} {answer.status}"] += 1
        if not op.write:
            return
        after = self._snapshot(scope)
        refused = answer.status >= 400
        if refused or op.dry_run:
            if after != before:
                self._violate(
                    f"a {'refused' if refused else 'dry-run'} write ({answer.status}) changed "
                    f"stored objects\n  request: {what}\n  answer: {answer.body[:300]!r}\n"
                    f"  before: {_short(before)}\n  after: {_short(after)}"
                )
            return
        written = answer.json()
        if (
            op.method in ("POST", "PUT", "PATCH")
            and not op.path.endswith("/scale")
            and isinstance(written, dict)
            and written.get("kind") == scope.kind.kind
        ):
            name = (written.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not scope.owns(name):
                return  # a cluster-scoped object named outside the example's prefix
            stored = after.get(name)
            meta = written.get("metadata") or {}
            if stored is None and meta.get("deletionTimestamp") and not meta.get("finalizers"):
                return  # the write removed the last finalizer: the object left with it
            if stored != written:
                self._violate(
                    f"an accepted write answered an object that is not the one stored\n"
                    f"  request: {what}\n  answer: {_short(written)}\n  stored: {_short(stored)}"
                )

    def _snapshot(self, scope: _Scope) -> dict[str, Any]:
        """The example's objects as a list shows them (name -> object)."""
        answer = self._send("GET", scope.collection, what="snapshot list")
        if answer.status != 200:
            self._violate(f"listing {scope.collection} answered {answer.status}")
            return {}
        items = orjson.loads(answer.body)["items"]
        return {
            item["metadata"]["name"]: item for item in items if scope.owns(item["metadata"]["name"])
        }

    def _check_shapes(self, scope: _Scope, objects: dict[str, Any]) -> None:
        """Stored objects hold integers where their kind has integer fields."""
        kind = scope.kind
        if kind.strategic:
            schema = definition_of(kind.api_version, kind.kind)
        else:
            schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for name, obj in objects.items():
            problems = integer_problems(obj, schema)
            if problems:
                self._violate(f"a stored {kind.kind} {name} is malformed: {problems}")

    def _check_round_trip(self, scope: _Scope, objects: dict[str, Any]) -> None:
        """A stored object is one the server accepts again: putting it back unchanged is a
        200 that writes nothing (the same resourceVersion)."""
        for name, obj in objects.items():
            answer = self._send(
                "PUT",
                f"{scope.collection}/{name}",
                orjson.dumps(obj),
                "application/json",
                what=f"putting back {name}",
            )
            back = answer.json()
            if answer.status != 200 or not isinstance(back, dict):
                self._violate(
                    f"putting back a stored {scope.kind.kind} answered {answer.status}: "
                    f"{answer.body[:500]!r}\n  object: {_short(obj)}"
                )
            elif back != obj:
                self._violate(
                    f"putting back a stored {scope.kind.kind} unchanged changed it\n"
                    f"  before: {_short(obj)}\n  after: {_short(back)}"
                )

    def _check_agreement(self, scope: _Scope) -> None:
        """Every object of the example: the list, a get and the watcher show the same."""
        self._check_round_trip(scope, self._snapshot(scope))
        listed = self._snapshot(scope)
        self._check_shapes(scope, listed)
        watcher = self.watchers[scope.kind.plural]
        names = set(listed) | {scope.name(n) for n in NAMES}
        for name in sorted(names):
            answer = self._send("GET", f"{scope.collection}/{name}", what="agreement get")
            got = orjson.loads(answer.body) if answer.status == 200 else None
            if answer.status not in (200, 404):
                self._violate(f"get {name} answered {answer.status}")
            if got != listed.get(name):
                self._violate(
                    f"list and get disagree on {name}: {_short(listed.get(name))} / {_short(got)}"
                )
            key = (scope.namespace or "", name)
            if not wait_until(lambda key=key, got=got: watcher.state(key) == got, 5):
                self._violate(
                    f"the watch of {scope.kind.plural} disagrees with get on {name}: "
                    f"{_short(watcher.state(key))} / {_short(got)}"
                )
        errors = watcher.errors()
        if errors:
            self._violate(f"a watch of {scope.kind.plural} failed: {errors}")

    def _check_health(self, namespace: str) -> None:
        ready = self._send("GET", "/readyz", what="readyz")
        if ready.status != 200:
            self._violate(f"/readyz answered {ready.status}")
        probe = {"metadata": {"name": "probe"}, "data": {"ok": "yes"}}
        written = self._send(
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            orjson.dumps(probe),
            "application/json",
            what="an ordinary write",
        )
        if written.status != 201:
            self._violate(f"an ordinary create answered {written.status}: {written.body[:300]!r}")

    def summary(self) -> str:
        s = self.stats
        codes = ", ".join(f"{code}: {count}" for code, count in sorted(s.statuses.items()))
        server_errors = sum(count for code, count in s.statuses.items() if code >= 500)
        return (
            f"examples: {s.examples}\nrequests: {s.requests}\nstatus codes: {codes}\n"
            f"5xx: {server_errors - s.too_new} (not counting {s.too_new} 504 Timeout for a "
            "resourceVersion the server has not reached, which kube-apiserver answers so)\n"
            f"invariant violations: {len(s.violations)}"
        )


@dataclass
class _Scope:
    """Where one example's objects live: its namespace, or its name prefix for
    cluster-scoped kinds."""

    kind: Kind
    namespace: str | None
    prefix: str

    @property
    def collection(self) -> str:
        return self.kind.collection(self.namespace)

    def name(self, short: str) -> str:
        return short if self.kind.namespaced else self.prefix + short

    def owns(self, name: str) -> bool:
        return self.kind.namespaced or name.startswith(self.prefix)

    def expand(self, text: str) -> str:
        out = text.replace("{ns}", self.namespace or "default")
        if not self.kind.namespaced:
            for short in NAMES:
                out = out.replace(short, self.prefix + short)
        return out


def _too_large_resource_version(answer: Answer) -> bool:
    """The one 5xx kube-apiserver answers by design: 504 for a list or get at a
    resourceVersion the server has not reached yet."""
    body = answer.json()
    return (
        answer.status == 504
        and isinstance(body, dict)
        and body.get("reason") == "Timeout"
        and "Too large resource version" in str(body.get("message"))
    )


def _short(value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() if value is not None else "-"
    return text if len(text) < 1500 else text[:1500] + "..."
