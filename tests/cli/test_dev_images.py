"""`kubeforge dev --image IMAGE=DIR` from the command line: pods of a mapped image run as
local processes in DIR, pods of other images stay simulated, and a malformed mapping is one
line on stderr before anything starts."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from kubeforge.testing import DevProcess, Kubectl, eventually
from tests.support import free_port, kubeforge

MARKER = "read from the mapped directory"


async def phase(kubectl: Kubectl, pod: str) -> str:
    got = await kubectl.run("get", "pod", pod, "-o", "jsonpath={.status.phase}", check=False)
    return got.out.strip() if got.code == 0 else ""


@pytest.mark.kubectl
async def test_dev_image_flag_runs_the_mapped_images_pods_from_the_directory(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "marker.txt").write_text(MARKER + "\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig, cache_dir=tmp_path / "cache")
    dev = await DevProcess(
        "--image", f"demo:v1={project}", kubeconfig=kubeconfig, cwd=tmp_path
    ).start()
    try:
        # The container's command runs in the directory, so it reads the file there.
        read = "import pathlib; print(pathlib.Path('marker.txt').read_text().strip())"
        for pod, image in (("mapped", "demo:v1"), ("other", "other:v1")):
            await kubectl.run(
                "run",
                pod,
                f"--image={image}",
                "--restart=Never",
                "--command",
                "--",
                "python",
                "-c",
                read,
            )

        async def finished() -> bool:
            return [await phase(kubectl, pod) for pod in ("mapped", "other")] == ["Succeeded"] * 2

        await eventually(finished, timeout=60)
        assert (await kubectl.run("logs", "mapped")).out.strip() == MARKER
        # An image not mapped is simulated, as without the flag: nothing ran.
        assert (await kubectl.run("logs", "other")).out.startswith("(simulated) python -c")
    finally:
        await dev.stop(signal.SIGINT)  # as Ctrl-C
    assert dev.returncode == 0, dev.output
    assert f"  image demo:v1: runs from {project} as local processes\n" in dev.output


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("demo:v1", "--image 'demo:v1': expected IMAGE=DIRECTORY, e.g. controller:latest=./"),
        ("=.", "--image '=.': expected IMAGE=DIRECTORY, e.g. controller:latest=./"),
        ("demo:v1={missing}", "--image 'demo:v1={missing}': {missing} is not a directory"),
    ],
)
async def test_dev_refuses_a_malformed_image_mapping_in_one_line(
    value: str, message: str, tmp_path: Path
) -> None:
    missing = tmp_path / "missing"
    kubeconfig = tmp_path / "kubeconfig"
    done = await kubeforge(
        "dev", "--port", str(free_port()), "--kubeconfig", str(kubeconfig),
        "--image", value.format(missing=missing),
        cwd=tmp_path,
    )  # fmt: skip
    # Status 1 and `error: ...`, as every other refused value of the CLI.
    assert done.code == 1, done.out + done.err
    assert done.err.splitlines() == [f"error: {message.format(missing=missing)}"]
    assert not kubeconfig.exists()
