"""One operator written with kubeforge and with Kopf, on the same API server: wall time to
converge, requests counted at the server, CPU and peak RSS of the operator's process.

    python benchmarks/operators.py                   # N = 1,000 and 5,000
    python benchmarks/operators.py --quick           # N = 200
    python benchmarks/operators.py -n 20 --operators kubeforge --json out.json
    python benchmarks/operators.py --operators kubeforge kubeforge-recording   # console cost
    python benchmarks/operators.py --operators kubeforge-baseline kubeforge kubeforge-recording \
        --baseline-src /path/to/other/checkout/src --rounds 5 --cases running

The job (benchmarks/widgets/): for each Widget, create an owned ConfigMap holding its
spec.size and set its status (the ConfigMap's name and the generation it reflects). Cases:
N Widgets created before the operator starts, then a spec change to every tenth; and, on a
fresh server, N Widgets created while the operator runs. The API server (`kubeforge
apiserver`), each operator and this driver run in their own processes; the operator's CPU
and peak RSS are read from /proc, its requests from the server's `apiserver_request_total`
(the driver's own creates and patches taken out).

`kubeforge-recording` is the kubeforge operator with the console's recording on: a timeline
(kubeforge._runtime.timeline, what `kubeforge run`'s console keeps) observes its manager, so
the table's ratio line between it and `kubeforge` is what recording costs.
`kubeforge-baseline` is the same operator importing kubeforge from `--baseline-src` (another
checkout's src/, e.g. one without the runtime's reporting points), compared with `kubeforge`.

`--rounds R` runs each case R times, every operator once a round, in an order rotated from
round to round, so that a change in the machine's load falls on all of them alike; the table
then shows each column's median, each ratio is the median of the rounds' own ratios, and
the CPU of every round follows. The load average is printed before and after.

`--callgrind` runs the kubeforge operators under valgrind's callgrind and adds the
instructions each executed over the same span as its CPU time (counted from zero where the
CPU count starts, read once the server has been quiet): a count other people's work on the
machine does not change, unlike CPU time. Under valgrind an operator runs some fifty times
slower, so its wall and CPU times say nothing then; keep N to a few hundred.
"""

# ruff: noqa: E402
from __future__ import annotations

import os
import sys

# Run as a script, this file's folder comes first on the path, and its name would hide the
# standard library's `operator` module from everything imported after this line.
HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.join(HERE, "widgets"))

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from widget import GROUP, PLURAL, VERSION, config_map_name, widget_crd

import kubeforge
from kubeforge import Client
from kubeforge.client import load_kubeconfig

BIN = Path(sys.executable).parent
WIDGETS = Path(HERE) / "widgets"
OPERATORS = {
    "kubeforge": [sys.executable, str(WIDGETS / "kubeforge_operator.py")],
    "kubeforge-recording": [sys.executable, str(WIDGETS / "kubeforge_operator.py")],
    "kubeforge-baseline": [sys.executable, str(WIDGETS / "kubeforge_operator.py")],
    "kopf": [
        str(BIN / "kopf"),
        "run",
        "--standalone",
        "--all-namespaces",
        str(WIDGETS / "kopf_operator.py"),
    ],
}
LABELS = {
    "kubeforge": "kubeforge",
    "kubeforge-recording": "recording",
    "kubeforge-baseline": "baseline",
    "kopf": "Kopf",
}
# Pairs shown as a ratio line: (operator, compared with, label).
RATIOS = (
    ("kubeforge", "kopf", "ratio"),
    ("kubeforge", "kubeforge-baseline", "off/base"),
    ("kubeforge-recording", "kubeforge", "rec./off"),
)
NAMESPACE = "default"
API_VERSION = f"{GROUP}/{VERSION}"
WRITES = {"POST", "PUT", "PATCH", "DELETE", "APPLY"}
READS = {"GET", "LIST"}
CREATE_CONCURRENCY = 32
TICK = os.sysconf("SC_CLK_TCK")

Key = tuple[str, str, str]  # verb, resource (with /subresource), code


@dataclass
class Phase:
    """One case measured for one operator."""

    case: str
    operator: str
    objects: int
    wall: float
    cpu: float
    peak_rss: int
    requests: dict[str, int] = field(default_factory=dict)
    minimum_writes: int = 0
    driver: float = 0.0  # seconds this driver spent creating or changing the Widgets
    round: int = 0
    instructions: int = 0  # --callgrind: instructions the operator executed

    def count(self, verbs: set[str], *, code: str | None = None) -> int:
        total = 0
        for key, value in self.requests.items():
            verb, _, status = key.split(" ")
            if verb in verbs and (code is None or status == code):
                total += value
        return total

    @property
    def writes(self) -> int:
        return self.count(WRITES)

    @property
    def conflicts(self) -> int:
        return self.count(WRITES, code="409")

    @property
    def failed(self) -> int:
        return (
            sum(v for k, v in self.requests.items() if int(k.split(" ")[2]) >= 400) - self.conflicts
        )

    @property
    def reads(self) -> int:
        return self.count(READS)


# processes ------------------------------------------------------------------------------------


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    """`kubeforge apiserver` on a free port; returns it and its kubeconfig."""
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [str(BIN / "kubeforge"), "apiserver", "--port", "0", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("kubeconfig written"):
            break
    else:
        raise RuntimeError("the API server did not start")
    return proc, kubeconfig


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """CPU time the process's threads have run so far, in nanoseconds' precision (the
    scheduler's own count; /proc/<pid>/stat only counts 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            continue  # the thread ended meanwhile
    return total / 1e9


def tick_seconds(pid: int) -> float:
    """User + system CPU of the process, ended threads included, in 10 ms ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def check_cpu(operator: str, pid: int) -> None:
    """Threads that ended take their CPU time out of the per-thread count: say so."""
    precise, ticks = cpu_seconds(pid), tick_seconds(pid)
    if ticks > precise * 1.05 + 0.05:
        print(
            f"warning: {operator}'s ended threads used CPU not counted ({ticks:.2f} s > "
            f"{precise:.2f} s)",
            file=sys.stderr,
        )


CALLGRIND = False  # --callgrind: run the kubeforge operators under valgrind's callgrind


def callgrind(proc: subprocess.Popen[Any], command: str) -> None:
    """Tell the callgrind running `proc` to `zero` its counts or `dump` them."""
    subprocess.run(
        ["callgrind_control", f"--{command}", str(proc.pid)], capture_output=True, check=True
    )


def counted(proc: subprocess.Popen[Any], log: Path) -> int:
    """The instructions `proc` executed since its counts were last zeroed (or since it
    started): its counts dumped, the newest dump's total."""
    if not CALLGRIND:
        return 0
    callgrind(proc, "dump")
    dumps = sorted(log.parent.glob(f"{log.stem}.callgrind.*"), key=lambda f: f.stat().st_mtime)
    for line in dumps[-1].read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no summary in {dumps[-1]}")


def peak_rss(pid: int) -> int:
    """The process's peak resident set size, bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


# the server's view ------------------------------------------------------------------------------


class Server:
    """Reads the server's request counters and drives Widgets through one client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.own: Counter[tuple[str, str]] = Counter()  # this driver's writes: (verb, code)

    async def metrics(self) -> tuple[Counter[Key], float]:
        """Requests served so far by (verb, resource, code), and watches open on Widgets."""
        reply = await self.client.transport.request("GET", "/metrics", accept="text/plain")
        counts: Counter[Key] = Counter()
        watching = 0.0
        for family in text_string_to_metric_families(reply.body.decode()):
            for sample in family.samples:
                labels = sample.labels
                if sample.name == "apiserver_request_total" and labels["verb"] != "WATCH":
                    resource = labels["resource"]
                    if labels.get("subresource"):
                        resource += "/" + labels["subresource"]
                    counts[labels["verb"], resource, labels["code"]] += int(sample.value)
                elif (
                    sample.name == "apiserver_longrunning_requests"
                    and labels.get("verb") == "WATCH"
                    and labels.get("resource") == PLURAL
                ):
                    watching += sample.value
        return counts, watching

    async def settle(
        self, seconds: float, pid: int | None = None, timeout: float = 120
    ) -> tuple[Counter[Key], float]:
        """Wait until no request has been served for `seconds`. The counts then, and the CPU
        time process `pid` had used when its last request was seen (so that waiting here
        counts for neither operator; Kopf alone uses about 20 ms a second when idle)."""
        counts, _ = await self.metrics()
        used = cpu_seconds(pid) if pid is not None else 0.0
        quiet_since = time.monotonic()
        deadline = quiet_since + timeout
        while time.monotonic() - quiet_since < seconds:
            if time.monotonic() > deadline:
                raise TimeoutError("the operator kept sending requests")
            await asyncio.sleep(0.1)
            latest, _ = await self.metrics()
            if latest != counts:
                counts, quiet_since = latest, time.monotonic()
                used = cpu_seconds(pid) if pid is not None else 0.0
        return counts, used

    async def create_widgets(self, names: list[str]) -> dict[str, int]:
        """Create the Widgets; their generations as created."""
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)
        generations: dict[str, int] = {}

        async def create(i: int, name: str) -> None:
            body = {
                "apiVersion": API_VERSION,
                "kind": "Widget",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"size": i % 7},
            }
            async with gate:
                created = await self.client.create(body)
            self.own["POST", "201"] += 1
            generations[name] = created["metadata"]["generation"]

        await asyncio.gather(*(create(i, name) for i, name in enumerate(names)))
        return generations

    async def change_sizes(self, names: list[str]) -> dict[str, int]:
        """Change the Widgets' spec; their new generations."""
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)
        generations: dict[str, int] = {}

        async def change(name: str) -> None:
            async with gate:
                changed = await self.client.patch(
                    f"{API_VERSION}/Widget",
                    name,
                    {"spec": {"size": 100}},
                    namespace=NAMESPACE,
                )
            self.own["PATCH", "200"] += 1
            generations[name] = changed["metadata"]["generation"]

        await asyncio.gather(*(change(name) for name in names))
        return generations

    def operator_requests(
        self, before: Counter[Key], after: Counter[Key], own_before: Counter[tuple[str, str]]
    ) -> dict[str, int]:
        """The requests served between two readings, less this driver's own writes."""
        delta = after - before
        for (verb, code), n in (self.own - own_before).items():
            delta[verb, PLURAL, code] -= n
        return {" ".join(k): v for k, v in sorted(delta.items()) if v > 0}

    async def verify(self, expected: int) -> None:
        """Every Widget has its ConfigMap, holding its size and owned by it."""
        widgets = await self.client.list(f"{API_VERSION}/Widget", namespace=NAMESPACE)
        configs = {
            c["metadata"]["name"]: c
            for c in await self.client.list("v1/ConfigMap", namespace=NAMESPACE)
        }
        assert len(widgets) == expected, (len(widgets), expected)
        for w in widgets:
            name = w["metadata"]["name"]
            config = configs[config_map_name(name)]
            assert config["data"] == {"size": str(w["spec"]["size"])}, (name, config["data"])
            owners = [r["uid"] for r in config["metadata"].get("ownerReferences", [])]
            assert owners == [w["metadata"]["uid"]], (name, owners)
            status = w.get("status") or {}
            assert status.get("configMap") == config_map_name(name), (name, status)
            assert status.get("observedGeneration") == w["metadata"]["generation"], (name, status)


class Convergence:
    """Follows Widgets through one watch; `wait(names)` returns when each of them has a
    status reflecting its current generation."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.state: dict[str, tuple[int, int | None]] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        client = self.server.client
        listed = await client.list(f"{API_VERSION}/Widget", namespace=NAMESPACE)
        for obj in listed:
            self._see(obj)
        self.task = asyncio.create_task(self._follow(listed.resource_version))

    async def _follow(self, resource_version: str) -> None:
        async for event in self.server.client.watch(
            f"{API_VERSION}/Widget",
            namespace=NAMESPACE,
            resource_version=resource_version,
            timeout_seconds=3600,
        ):
            if event.type in ("ADDED", "MODIFIED"):
                self._see(event.object)

    def _see(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        observed = (obj.get("status") or {}).get("observedGeneration")
        self.state[meta["name"]] = (meta["generation"], observed)
        self.changed.set()

    def done(self, name: str, generation: int) -> bool:
        _, observed = self.state.get(name, (0, None))
        return observed is not None and observed >= generation

    async def wait(
        self, generations: dict[str, int], proc: subprocess.Popen[Any], timeout: float
    ) -> float:
        """When the last of the Widgets had a status reflecting at least the generation
        given (time.monotonic())."""
        pending = dict(generations)
        deadline = time.monotonic() + timeout
        while True:
            pending = {n: g for n, g in pending.items() if not self.done(n, g)}
            if not pending:
                return time.monotonic()
            if proc.poll() is not None:
                raise RuntimeError(f"the operator exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} widgets did not converge")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1.0)
            except TimeoutError:
                pass

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass


# cases ----------------------------------------------------------------------------------------


async def prepare(kubeconfig: Path) -> tuple[Server, Convergence]:
    client = Client(load_kubeconfig(kubeconfig))
    await client.create(widget_crd())
    await client.wait_established([f"{PLURAL}.{GROUP}"])
    server = Server(client)
    watch = Convergence(server)
    await watch.start()
    return server, watch


WORKERS = 0  # --workers: kubeforge's max_concurrent_reconciles (0: its default)
BASELINE_SRC: Path | None = None  # --baseline-src: where kubeforge-baseline imports kubeforge


def operator_env(operator: str) -> dict[str, str]:
    env = dict(os.environ, WIDGET_WORKERS=str(WORKERS))
    env["WIDGET_TIMELINE"] = "1" if operator == "kubeforge-recording" else ""
    if operator == "kubeforge-baseline":
        if BASELINE_SRC is None:
            raise SystemExit("kubeforge-baseline needs --baseline-src")
        env["PYTHONPATH"] = str(BASELINE_SRC)
    return env


def compile_sources() -> None:
    """Write the bytecode of kubeforge's modules (this checkout's, and the baseline's) now:
    where none is written on import (PYTHONDONTWRITEBYTECODE) an operator would compile
    them again at every start, which the first case, whose CPU includes the start, counts."""
    sources = [Path(kubeforge.__file__).parent]
    if BASELINE_SRC is not None:
        sources.append(BASELINE_SRC)
    for source in sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(source)], check=True)


def check_baseline() -> None:
    """The baseline operator imports kubeforge from --baseline-src, not this checkout."""
    assert BASELINE_SRC is not None
    found = subprocess.run(
        [sys.executable, "-c", "import kubeforge; print(kubeforge.__file__)"],
        env=operator_env("kubeforge-baseline"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(BASELINE_SRC.resolve()):
        raise SystemExit(f"--baseline-src: kubeforge was imported from {found}")


def launch(operator: str, kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(operator_env(operator), KUBECONFIG=str(kubeconfig))
    command = OPERATORS[operator]
    if CALLGRIND and operator.startswith("kubeforge"):
        out_file = f"--callgrind-out-file={log.parent / log.stem}.callgrind.%p"
        command = ["valgrind", "--tool=callgrind", out_file, *command]
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=out)


async def existing_then_update(
    operator: str, count: int, tmp: Path, settle: float, timeout: float
) -> list[Phase]:
    """`count` Widgets exist before the operator starts; then every tenth one changes."""
    server_proc, kubeconfig = start_server(tmp)
    proc = None
    try:
        server, watch = await prepare(kubeconfig)
        names = [f"w-{i:05}" for i in range(count)]
        generations = await server.create_widgets(names)
        before, _ = await server.settle(0.2)
        own = Counter(server.own)
        started = time.monotonic()
        log = tmp / f"{operator}-existing-{count}.log"
        proc = launch(operator, kubeconfig, log)
        converged = await watch.wait(generations, proc, timeout)
        after, used = await server.settle(settle, proc.pid)
        check_cpu(operator, proc.pid)
        instructions = counted(proc, log)
        first = Phase(
            f"{count:,} existing before start",
            operator,
            count,
            converged - started,
            used,
            peak_rss(proc.pid),
            server.operator_requests(before, after, own),
            minimum_writes=2 * count,
            instructions=instructions,
        )
        await server.verify(count)

        changed = names[::10]
        (before, _), own = await server.settle(0.2), Counter(server.own)
        if CALLGRIND:
            callgrind(proc, "zero")
        cpu_before = cpu_seconds(proc.pid)
        started = time.monotonic()
        generations = await server.change_sizes(changed)
        driven = time.monotonic() - started
        converged = await watch.wait(generations, proc, timeout)
        after, used = await server.settle(settle, proc.pid)
        second = Phase(
            f"spec change of {len(changed):,} of them",
            operator,
            len(changed),
            converged - started,
            used - cpu_before,
            peak_rss(proc.pid),
            server.operator_requests(before, after, own),
            minimum_writes=2 * len(changed),
            driver=driven,
            instructions=counted(proc, log),
        )
        await server.verify(count)
        await watch.stop()
        await server.client.close()
        return [first, second]
    finally:
        if proc is not None:
            stop(proc)
        stop(server_proc)


async def created_while_running(
    operator: str, count: int, tmp: Path, settle: float, timeout: float
) -> Phase:
    """The operator runs (its caches synced, idle) when `count` Widgets are created."""
    server_proc, kubeconfig = start_server(tmp)
    proc = None
    try:
        server, watch = await prepare(kubeconfig)
        _, watching = await server.metrics()
        log = tmp / f"{operator}-running-{count}.log"
        proc = launch(operator, kubeconfig, log)
        # Ready: it watches Widgets, and its CPU use has stopped growing (startup is over).
        deadline = time.monotonic() + 60
        while (await server.metrics())[1] <= watching:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{operator} did not start watching Widgets")
            await asyncio.sleep(0.05)
        seen = -1.0
        while (now := tick_seconds(proc.pid)) != seen:
            seen = now
            await asyncio.sleep(0.3)
        before, _ = await server.settle(0.2)
        own = Counter(server.own)
        if CALLGRIND:
            callgrind(proc, "zero")
        cpu_before = cpu_seconds(proc.pid)
        names = [f"w-{i:05}" for i in range(count)]
        started = time.monotonic()
        generations = await server.create_widgets(names)
        driven = time.monotonic() - started
        converged = await watch.wait(generations, proc, timeout)
        after, used = await server.settle(settle, proc.pid)
        phase = Phase(
            f"{count:,} created while running",
            operator,
            count,
            converged - started,
            used - cpu_before,
            peak_rss(proc.pid),
            server.operator_requests(before, after, own),
            minimum_writes=2 * count,
            driver=driven,
            instructions=counted(proc, log),
        )
        await server.verify(count)
        await watch.stop()
        await server.client.close()
        return phase
    finally:
        if proc is not None:
            stop(proc)
        stop(server_proc)


# report ---------------------------------------------------------------------------------------


def median_phase(runs: list[Phase]) -> Phase:
    """One operator's runs of one case as one row: each measure's median (the requests of
    the first run; they are the same every round when the operator is correct)."""
    first = runs[0]
    return Phase(
        first.case,
        first.operator,
        first.objects,
        statistics.median(p.wall for p in runs),
        statistics.median(p.cpu for p in runs),
        int(statistics.median(p.peak_rss for p in runs)),
        first.requests,
        first.minimum_writes,
        statistics.median(p.driver for p in runs),
        instructions=int(statistics.median(p.instructions for p in runs)),
    )


def paired(ours: list[Phase], theirs: list[Phase], measure: str) -> float:
    """The median over the rounds of `measure`'s ratio between two operators' runs of the
    same round (run one after the other, under much the same load)."""
    by_round = {p.round: p for p in theirs}
    ratios: list[float] = [
        getattr(p, measure) / max(getattr(by_round[p.round], measure), 0.01)
        for p in ours
        if p.round in by_round
    ]
    return statistics.median(ratios)


def table(phases: list[Phase]) -> str:
    header = (
        f"{'case':<32} {'operator':<10} {'wall s':>7} {'CPU s':>7} {'RSS MB':>7} "
        f"{'writes':>7} {'min':>6} {'409':>4} {'4xx':>5} {'reads':>6} {'driver s':>8}"
    )
    counting = any(p.instructions for p in phases)
    if counting:
        header += f" {'Minstr':>8}"
    lines = [header, "-" * len(header)]
    by_case: dict[str, dict[str, list[Phase]]] = {}
    for p in phases:
        by_case.setdefault(p.case, {}).setdefault(p.operator, []).append(p)
    rounds = max((p.round for p in phases), default=0) + 1
    for case, ops in by_case.items():
        for runs in ops.values():
            p = median_phase(runs)
            lines.append(
                f"{case:<32} {LABELS[p.operator]:<10} {p.wall:>7.2f} {p.cpu:>7.2f} "
                f"{p.peak_rss / 2**20:>7.0f} {p.writes:>7,} {p.minimum_writes:>6,} "
                f"{p.conflicts:>4} {p.failed:>5} {p.reads:>6} "
                + (f"{p.driver:>8.2f}" if p.driver else f"{'':>8}")
                + (f" {p.instructions / 1e6:>8,.0f}" if counting else "")
            )
            case = ""
        for ours_name, theirs_name, label in RATIOS:
            if ours_name in ops and theirs_name in ops:
                ours, theirs = ops[ours_name], ops[theirs_name]
                lines.append(
                    f"{'':<32} {label:<10} {paired(ours, theirs, 'wall'):>6.2f}x "
                    f"{paired(ours, theirs, 'cpu'):>6.2f}x "
                    f"{paired(ours, theirs, 'peak_rss'):>6.2f}x "
                    f"{paired(ours, theirs, 'writes'):>6.2f}x"
                    + (
                        f" {'':>6} {'':>4} {'':>5} {'':>6} {'':>8} "
                        f"{paired(ours, theirs, 'instructions'):>7.3f}x"
                        if counting
                        else ""
                    )
                )
    if rounds > 1:
        lines.append("")
        lines.append(f"medians of {rounds} rounds; CPU s of each round, in the order run:")
        for case, ops in by_case.items():
            for operator, runs in ops.items():
                in_order = sorted(runs, key=lambda p: p.round)
                cpu = " ".join(f"{p.cpu:.3f}" for p in in_order)
                lines.append(f"  {case} / {LABELS[operator]}: {cpu}")
                if counting:
                    counts = " ".join(f"{p.instructions / 1e6:,.1f}" for p in in_order)
                    lines.append(f"  {case} / {LABELS[operator]} Minstr: {counts}")
            for ours_name, theirs_name, label in RATIOS:
                if ours_name in ops and theirs_name in ops:
                    by_round = {p.round: p for p in ops[theirs_name]}
                    ratios = " ".join(
                        f"{p.cpu / max(by_round[p.round].cpu, 0.01):.3f}"
                        for p in sorted(ops[ours_name], key=lambda p: p.round)
                    )
                    lines.append(f"  {case} / {label} CPU: {ratios}")
    lines.append("")
    lines.append("requests by verb, resource and code:")
    for p in phases:
        if p.round:
            continue
        detail = ", ".join(f"{k} x{v:,}" for k, v in p.requests.items())
        lines.append(f"  {p.case} / {LABELS[p.operator]}: {detail}")
    return "\n".join(lines)


def in_turn(operators: list[str], round: int) -> list[str]:
    """The operators in the order of `round`: rotated by one each round."""
    shift = round % len(operators)
    return operators[shift:] + operators[:shift]


async def run(args: argparse.Namespace) -> list[Phase]:
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for count in args.objects:
            if "existing" in args.cases:
                for round in range(args.rounds):
                    for operator in in_turn(args.operators, round):
                        done = await existing_then_update(
                            operator, count, tmp, args.settle, args.timeout
                        )
                        for phase in done:
                            phase.round = round
                        phases += done
            if "running" in args.cases:
                for round in range(args.rounds):
                    for operator in in_turn(args.operators, round):
                        phase = await created_while_running(
                            operator, count, tmp, args.settle, args.timeout
                        )
                        phase.round = round
                        phases.append(phase)
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-n", "--objects", type=int, nargs="+", default=[1_000, 5_000], help="Widgets per case"
    )
    parser.add_argument("--quick", action="store_true", help="N = 200 only, for a smoke run")
    parser.add_argument(
        "--operators", nargs="+", choices=sorted(OPERATORS), default=["kubeforge", "kopf"]
    )
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=["existing", "running"],
        default=["existing", "running"],
        help="existing: created before the operator starts, then a spec change to every "
        "tenth; running: created while it runs",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=2.0,
        help="seconds without a request after which an operator counts as done",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to converge")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="kubeforge's max_concurrent_reconciles (default 0: the controller's default)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run each case this many times, the operators in turn (medians shown)",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="kubeforge-baseline imports kubeforge from this directory (another checkout's src/)",
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="run the kubeforge operators under valgrind's callgrind and count instructions",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.quick:
        args.objects = [200]
    global WORKERS, BASELINE_SRC, CALLGRIND
    WORKERS = args.workers
    BASELINE_SRC = args.baseline_src
    CALLGRIND = args.callgrind
    if "kubeforge-baseline" in args.operators:
        check_baseline()
    compile_sources()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    phases = asyncio.run(run(args))
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(table(phases))
    if args.json is not None:
        rows = [
            asdict(p)
            | {"writes": p.writes, "conflicts": p.conflicts, "failed": p.failed, "reads": p.reads}
            for p in phases
        ]
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
