"""The rules of simulated containers: command lines, which containers keep running, and what
a pod's annotations make its containers do."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeforge._cluster.commandline import container_argv, expand_references, full_image
from kubeforge._cluster.options import ClusterOptions
from kubeforge._cluster.simulation import Behaviour, container_behaviour, pod_finishes, simulate

FINISHING = Behaviour(finishes=True, run_seconds=0.01, sleep_seconds=0.01)
RUNNING = Behaviour(finishes=False, run_seconds=0.01)


async def run(
    argv: list[str] | None, behaviour: Behaviour = FINISHING, image: str = ""
) -> tuple[int, str]:
    out: list[bytes] = []
    code = await asyncio.wait_for(simulate(argv, {}, behaviour, out.append, image), 10)
    return code, b"".join(out).decode()


async def keeps_running(argv: list[str] | None, behaviour: Behaviour = RUNNING) -> str:
    """Start the container, check it is still running a moment later, stop it; its output."""
    out: list[bytes] = []
    task = asyncio.ensure_future(simulate(argv, {}, behaviour, out.append, "nginx:1.27"))
    done, _ = await asyncio.wait({task}, timeout=0.1)
    assert not done, (argv, b"".join(out))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return b"".join(out).decode()


def pod(
    restart: str = "Always",
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "annotations": annotations or {},
            "ownerReferences": owners or [],
        },
        "spec": {"restartPolicy": restart, "containers": [{"name": "main"}]},
    }


# -- command lines ---------------------------------------------------------------------------


def test_references_expand_like_kubernetes() -> None:
    env = {"A": "1", "B_C": "two"}
    assert expand_references("$(A)-$(B_C)", env) == "1-two"
    assert expand_references("$$(A) $(MISSING) $A", env) == "$(A) $(MISSING) $A"
    assert expand_references("plain", env) == "plain"


def test_container_argv_joins_command_and_args() -> None:
    spec = {"image": "x", "command": ["echo", "$(WHO)"], "args": ["there"]}
    assert container_argv(spec, {"WHO": "hi"}) == ["echo", "hi", "there"]
    # Without a command, arguments go to a shell image's (empty) entrypoint...
    spec = {"image": "docker.io/library/busybox:1.36", "args": ["sh", "-c", "date"]}
    assert container_argv(spec, {}) == ["sh", "-c", "date"]
    # ...while other images run their own entrypoint.
    assert container_argv({"image": "nginx:1.27", "args": ["-g", "daemon off;"]}, {}) is None
    assert container_argv({"image": "busybox"}, {}) is None


def test_image_references_are_completed_as_a_runtime_does() -> None:
    assert full_image("controller") == "docker.io/library/controller:latest"
    assert full_image("controller:latest") == "docker.io/library/controller:latest"
    assert full_image("me/op:v1") == "docker.io/me/op:v1"
    assert full_image("localhost:5000/op") == "localhost:5000/op:latest"
    assert full_image("ghcr.io/me/op@sha256:ab") == "ghcr.io/me/op@sha256:ab"


# -- which containers keep running -----------------------------------------------------------


async def test_programs_keep_running_whatever_their_arguments() -> None:
    # The Memcached tutorial's command: -v is "verbose", not "print the version".
    out = await keeps_running(["memcached", "-m", "64", "-o", "modern", "-v"])
    assert out == "(simulated) memcached -m 64 -o modern -v: running\n"
    for argv in (["gunicorn", "-t", "30", "app:app"], ["postgres", "-h", "0.0.0.0"], ["./app"]):
        await keeps_running(argv)
    assert await keeps_running(None) == "(simulated) nginx:1.27: entrypoint running\n"
    # Inside a script, the same rule: the script goes on running the program.
    assert await keeps_running(["sh", "-c", "echo up; exec nginx -v"]) == (
        "up\n(simulated) nginx -v: running\n"
    )


async def test_programs_of_pods_meant_to_finish_run_for_the_run_time() -> None:
    assert await run(["python", "app.py", "--port", "80"]) == (
        0,
        "(simulated) python app.py --port 80\n",
    )
    assert await run(None, image="perl:5.34") == (0, "(simulated) perl:5.34: entrypoint\n")
    assert await run(["sh", "-c", "echo start; migrate --all && echo done"]) == (
        0,
        "start\n(simulated) migrate --all\ndone\n",
    )


async def test_scripts_and_utilities_end_as_they_say_in_any_pod() -> None:
    for behaviour in (RUNNING, FINISHING):
        assert await run(["echo", "hello", "world"], behaviour) == (0, "hello world\n")
        assert await run(["sh", "-c", "echo bye; exit 3"], behaviour) == (3, "bye\n")
        assert await run(["false"], behaviour) == (1, "")
    await keeps_running(["sleep", "infinity"])
    await keeps_running(["tail", "-f", "/dev/null"])


def test_pods_meant_to_finish() -> None:
    assert not pod_finishes(pod("Always"))
    assert pod_finishes(pod("Never"))
    assert pod_finishes(pod("OnFailure"))
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}
    assert pod_finishes(pod("Always", owners=[job]))
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}
    assert not pod_finishes(pod("Always", owners=[replica_set]))


def test_init_containers_finish_and_sidecars_keep_running() -> None:
    options = ClusterOptions(command_run_seconds=0.5)
    assert container_behaviour(pod("Always"), "init", "init", options).finishes
    assert not container_behaviour(pod("Never"), "proxy", "sidecar", options).finishes
    assert container_behaviour(pod("Never"), "main", "main", options).run_seconds == 0.5


# -- what annotations make containers do -----------------------------------------------------


async def test_annotations_script_a_container() -> None:
    options = ClusterOptions()
    annotations = {
        "kubeforge.dev/exit-code": "3",
        "kubeforge.dev/run-seconds": "0.01",
        "kubeforge.dev/output": "boom",
        "kubeforge.dev/ready": "false",
        "side.container.kubeforge.dev/exit-code": "0",
        "side.container.kubeforge.dev/ready": "true",
        "side.container.kubeforge.dev/ready-seconds": "2",
    }
    main = container_behaviour(pod("Always", annotations), "main", "main", options)
    assert (main.exit_code, main.output, main.ready, main.run_seconds) == (3, "boom", False, 0.01)
    # A container's own annotation wins over the pod's.
    side = container_behaviour(pod("Always", annotations), "side", "main", options)
    assert (side.exit_code, side.ready, side.ready_seconds) == (0, True, 2.0)
    # A scripted container does not run its command, even in a pod that keeps running.
    assert await run(["sh", "-c", "echo never"], main) == (3, "boom\n")
    # Output alone: written, then the container goes on as its pod says.
    out = await keeps_running(["sleep", "1"], Behaviour(output="listening on :11211"))
    assert out == "listening on :11211\n"


def test_unreadable_annotations_are_ignored() -> None:
    annotations = {
        "kubeforge.dev/exit-code": "three",
        "kubeforge.dev/run-seconds": "-1",
        "kubeforge.dev/ready": "maybe",
        "kubeforge.dev/ready-seconds": "nan",
    }
    behaviour = container_behaviour(pod("Never", annotations), "main", "main", ClusterOptions())
    assert behaviour == Behaviour(finishes=True, run_seconds=0.1)
