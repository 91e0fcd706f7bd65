"""Run the examples' test suites, several at once, and report each one whole.

    .venv/bin/python tools/run_examples.py cnat useless kvstore [--jobs 3] [-- PYTEST_ARGS]

Each example is its own project (decision 11): its suite runs in its own directory with the
repository's pytest, as `cd examples/NAME && pytest` would. Their tests spend most of their
time waiting on a cluster, so running a few at once shortens the whole; each suite's output is
kept and printed in one piece when it ends, so interleaved lines never hide a failure. Suites
that share one cluster (`make test-existing`) run with `--jobs 1`. The exit status is 1 when
any suite failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = ROOT / ".venv" / "bin" / "pytest"


async def run_one(name: str, pytest_args: list[str], limit: asyncio.Semaphore) -> bool:
    """Run one example's suite; print its output once it ends; whether it passed."""
    async with limit:
        started = time.monotonic()
        child = await asyncio.create_subprocess_exec(
            str(PYTEST),
            *pytest_args,
            cwd=ROOT / "examples" / name,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await child.communicate()
        took = time.monotonic() - started
    passed = child.returncode == 0
    verdict = "passed" if passed else f"FAILED (exit {child.returncode})"
    sys.stdout.write(f"\n=== examples/{name}: {verdict} in {took:.0f} s\n")
    sys.stdout.write(output.decode(errors="replace"))
    sys.stdout.flush()
    return passed


async def run_all(names: list[str], jobs: int, pytest_args: list[str]) -> int:
    limit = asyncio.Semaphore(max(1, jobs))
    results = await asyncio.gather(*(run_one(n, pytest_args, limit) for n in names))
    failed = [n for n, ok in zip(names, results, strict=True) if not ok]
    if failed:
        print(f"\nexamples whose suites failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_args = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="+", help="example directories under examples/")
    parser.add_argument("--jobs", type=int, default=3, help="suites running at once")
    options = parser.parse_args(argv)
    missing = [n for n in options.examples if not (ROOT / "examples" / n).is_dir()]
    if missing:
        parser.error(f"no such example: {', '.join(missing)}")
    return asyncio.run(run_all(options.examples, options.jobs, pytest_args))


if __name__ == "__main__":
    raise SystemExit(main())
