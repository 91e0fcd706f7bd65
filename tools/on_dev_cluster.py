"""Run a command against one `kubeforge dev` started for it, then stop the cluster.

    .venv/bin/python tools/on_dev_cluster.py -- sh -c 'cd examples/cnat && pytest'
    .venv/bin/python tools/on_dev_cluster.py --nodes 3 -- sh -c 'cd examples/kvstore && pytest'

The cluster listens on a free port of 127.0.0.1 and writes its kubeconfig into a private
temporary directory. Once its API server answers `/readyz`, the command runs with KUBECONFIG
set to that kubeconfig and KUBEFORGE_USE_EXISTING_CLUSTER=1, so test suites use the cluster
as they would use kind or a real one (`make test-existing` runs every example's suite this
way). Whatever the command does, the cluster is stopped afterwards (SIGTERM, as `kubeforge
dev` expects; killed if it has not stopped within 20 s), also when this script is interrupted
or the cluster does not come up, and the temporary directory is removed. The exit status is
the command's, or 1 when the cluster did not start (its output is then shown). Options before
`--` other than `--port` are `kubeforge dev`'s (`--nodes 3`, `--image IMAGE=DIR`), for suites
that need more than one node or an image run from a directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from kubeforge.testing import USE_EXISTING_CLUSTER, DevProcess, DevProcessError

START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
# How long an interrupted command has to end on its own Ctrl-C before it is killed.
INTERRUPT_GRACE = 0.25


async def run(command: list[str], port: int, flags: list[str] | None = None) -> int:
    """Run `command` against a cluster started for it (`kubeforge dev FLAGS`); the command's
    exit status, or 1 when the cluster did not become ready (its output is then shown)."""
    with tempfile.TemporaryDirectory(prefix="kubeforge-dev-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        try:
            dev = await DevProcess(
                *(flags or ()), kubeconfig=kubeconfig, port=port, timeout=START_TIMEOUT
            ).start()
        except DevProcessError as exc:
            sys.stderr.write(exc.output)
            print(exc, file=sys.stderr)
            return 1
        try:
            env = {**os.environ, "KUBECONFIG": str(kubeconfig), USE_EXISTING_CLUSTER: "1"}
            child = await asyncio.create_subprocess_exec(*command, env=env)
            try:
                return await child.wait()
            finally:
                if child.returncode is None:  # interrupted
                    try:
                        await asyncio.wait_for(child.wait(), INTERRUPT_GRACE)
                    except TimeoutError:
                        child.kill()
                        await child.wait()
        finally:
            await dev.stop(timeout=STOP_TIMEOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        usage="%(prog)s [--port PORT] [KUBEFORGE_DEV_OPTIONS ...] -- COMMAND ...",
    )
    parser.add_argument("--port", type=int, default=0, help="the API server's (default: free)")
    given = sys.argv[1:] if argv is None else argv
    split = given.index("--") if "--" in given else len(given)
    args, flags = parser.parse_known_args(given[:split])
    command = given[split + 1 :]
    if not command:
        parser.error("no command given (after --)")
    try:
        return asyncio.run(run(command, args.port, flags))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
