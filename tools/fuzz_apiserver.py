"""Fuzz the embedded API server for a while and print what it answered.

    .venv/bin/python tools/fuzz_apiserver.py --minutes 10

Sends the property-based examples of tests/fuzz/ (hostile JSON and YAML bodies, every patch
type, query strings; built-in kinds and a custom resource) with fresh random seeds until the
time is up, checks the same invariants as the suite's bounded run (no 5xx, nothing
half-written, lists, gets and watches agree, the server stays healthy), and prints the
requests sent, a histogram of status codes and every violation (as soon as it is found).
Exits 1 if there was any. With `--numbers`, every example puts odd number literals (beyond
int64, negative zero, 1e400, NaN text, ...) anywhere in an object.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings
from tests.fuzz.checks import Fuzzer
from tests.fuzz.kinds import KINDS
from tests.fuzz.operations import Example, examples, number_examples
from tests.fuzz.target import ServerThread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run")
    parser.add_argument("--seed", type=int, default=None, help="first random seed")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"comma-separated, of: {', '.join(KINDS)}"
    )
    parser.add_argument("--batch", type=int, default=100, help="examples per Hypothesis run")
    parser.add_argument(
        "--numbers",
        action="store_true",
        help="send only odd number literals, anywhere in an object, by every kind of write",
    )
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    first_seed = args.seed if args.seed is not None else random.randrange(2**32)
    deadline = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    batches = 0
    reported = 0
    with ServerThread() as target:
        fuzzer = Fuzzer(target, strict=False)

        @settings(
            max_examples=args.batch,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(number_examples(kinds) if args.numbers else examples(kinds))
        def fuzz(example: Example) -> None:
            if time.monotonic() < deadline:
                fuzzer.run(example)

        while time.monotonic() < deadline:
            try:
                seed(first_seed + batches)(fuzz)()
            except Exception as exc:  # a broken example must not end the run
                fuzzer.stats.violations.append(f"seed {first_seed + batches}: {exc!r}")
            batches += 1
            for violation in fuzzer.stats.violations[reported:]:
                print(f"\n--- violation\n{violation}\n", flush=True)
            reported = len(fuzzer.stats.violations)
            print(
                f"[{time.monotonic() - started:6.0f}s] seed {first_seed + batches - 1}: "
                f"{fuzzer.stats.examples} examples, {fuzzer.stats.requests} requests, "
                f"{len(fuzzer.stats.violations)} violations",
                flush=True,
            )
        fuzzer.close()
    print()
    print(f"seeds {first_seed}..{first_seed + batches - 1}, kinds: {', '.join(kinds)}")
    print(fuzzer.summary())
    print("requests by method and status:")
    for key, count in sorted(fuzzer.stats.by_request.items()):
        print(f"  {key}: {count}")
    return 1 if fuzzer.stats.violations else 0


if __name__ == "__main__":
    sys.exit(main())
