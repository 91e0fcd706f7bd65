"""What containers do: command lines, the simulated shell, and local execution."""

from __future__ import annotations

import asyncio
import re

import pytest

from kubeforge.cluster.commands import (
    ContainerProcess,
    StartError,
    Timing,
    container_argv,
    expand_references,
    is_server,
    simulate,
)
from tests.support import eventually

QUICK = Timing(run_seconds=0.01, sleep_seconds=0.01)


async def run(
    argv: list[str] | None, env: dict[str, str] | None = None, timing: Timing = QUICK
) -> tuple[int, str]:
    out: list[bytes] = []
    code = await asyncio.wait_for(simulate(argv, env or {}, timing, out.append), 10)
    return code, b"".join(out).decode()


async def sh(script: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    return await run(["sh", "-c", script, *args], env)


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


def test_servers_are_told_from_finite_commands() -> None:
    assert is_server(None)
    assert is_server(["nginx", "-g", "daemon off;"])
    assert not is_server(["nginx", "-v"])
    assert is_server(["sleep", "infinity"])
    assert not is_server(["sleep", "5"])
    assert is_server(["tail", "-f", "/dev/null"])
    assert is_server(["python3", "-m", "http.server", "8080"])
    assert not is_server(["python3", "app.py"])


# -- simulation ------------------------------------------------------------------------------


async def test_echo_prints_and_false_fails() -> None:
    assert await run(["echo", "hello", "world"]) == (0, "hello world\n")
    assert await run(["/bin/echo", "-n", "x"]) == (0, "x")
    assert await run(["false"]) == (1, "")
    assert await run(["true"]) == (0, "")


async def test_unknown_programs_run_briefly_and_succeed() -> None:
    assert await run(["python", "app.py", "--port", "80"]) == (
        0,
        "(simulated) python app.py --port 80\n",
    )


async def test_servers_keep_running_until_stopped() -> None:
    for argv in (None, ["sleep", "infinity"], ["sh", "-c", "echo up; exec nginx"]):
        out: list[bytes] = []
        task = asyncio.ensure_future(simulate(argv, {}, QUICK, out.append))
        done, _ = await asyncio.wait({task}, timeout=0.05)
        assert not done, argv
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_sleep_takes_the_run_seconds_override() -> None:
    assert await run(["sleep", "3600"], timing=Timing(sleep_seconds=0.01)) == (0, "")
    assert await sh("sleep 1000; echo woke") == (0, "woke\n")
    assert (await run(["sleep", "x"]))[0] == 1


async def test_shell_sequences_and_exit_codes() -> None:
    assert await sh("exit 3") == (3, "")
    assert await sh("echo a; false && echo b || echo c") == (0, "a\nc\n")
    assert await sh("false; echo $?") == (0, "1\n")
    assert await sh("true && exit 4; echo no") == (4, "")
    assert await sh("! false && echo negated") == (0, "negated\n")


async def test_shell_errexit() -> None:
    assert await run(["sh", "-ec", "true; false; echo never"]) == (1, "")
    assert await sh("set -e; false || echo rescued; echo on") == (0, "rescued\non\n")
    assert await run(["bash", "-ec", "false && true; echo kept"]) == (0, "kept\n")


async def test_shell_variables_quotes_and_substitutions() -> None:
    env = {"NAME": "world", "EMPTY": ""}
    assert await sh("echo \"hello $NAME\" '$NAME' ${NAME}s", env=env) == (
        0,
        "hello world $NAME worlds\n",
    )
    assert await sh("echo ${UNSET:-fallback} ${EMPTY:-x} ${#NAME}", env=env) == (
        0,
        "fallback x 5\n",
    )
    assert await sh("x=$(echo inner); echo [$x] `echo tick`") == (0, "[inner] tick\n")
    assert await sh("echo $((7 * 6)) $((7 / 2)) $((-7 / 2)) $((7 % 3))") == (0, "42 3 -3 1\n")
    assert await sh("A=1 env | grep ^A=") == (0, "A=1\n")
    assert await sh("echo $0 $1 $2 $#", "name", "x", "y") == (0, "name x y 2\n")
    assert await sh('for a in "$@"; do echo "<$a>"; done', "sh", "a b", "c") == (
        0,
        "<a b>\n<c>\n",
    )


async def test_shell_prefix_and_suffix_removal() -> None:
    script = "f=a/b/c.txt; echo ${f#*/} ${f##*/} ${f%/*} ${f%%/*} ${f%.txt}"
    assert await sh(script) == (0, "b/c.txt c.txt a/b a a/b/c\n")
    assert await sh("echo ${f/a/b}; echo never") == (2, "sh: bad substitution: ${f/a/b}\n")


async def test_shell_control_flow() -> None:
    script = "i=0; while true; do i=$((i+1)); if [ $i -ge 3 ]; then break; fi; done; echo $i"
    assert await sh(script) == (0, "3\n")
    assert await sh("for x in a b 'c d'; do echo \"<$x>\"; done") == (0, "<a>\n<b>\n<c d>\n")
    script = 'if [ -z "$NOPE" ]; then echo empty; elif true; then echo no; else echo no; fi'
    assert await sh(script) == (0, "empty\n")
    assert await sh("n=0; until [ $n = 2 ]; do n=$((n+1)); done; echo $n") == (0, "2\n")
    assert await sh("{ echo g1; echo g2; }; (echo sub; exit 4); echo status=$?") == (
        0,
        "g1\ng2\nsub\nstatus=4\n",
    )


async def test_shell_pipes_redirections_and_files() -> None:
    assert await sh("echo hi > /tmp/f; cat /tmp/f; echo more >> /tmp/f; wc -l < /tmp/f") == (
        0,
        "hi\n2\n",
    )
    assert await sh("echo hidden > /dev/null; echo shown >&2; echo too 2>&1") == (
        0,
        "shown\ntoo\n",
    )
    assert await sh("printf 'b\\na\\nb\\n' | grep -c b") == (0, "2\n")
    assert await sh("seq 5 | head -n 2; seq 5 | tail -n 1") == (0, "1\n2\n5\n")
    assert await sh("printf '%s=%d\\n' a 1 b 2") == (0, "a=1\nb=2\n")
    assert await sh("echo -e 'a\\tb'; echo -n x; echo") == (0, "a\tb\nx\n")


async def test_date_prints_the_time() -> None:
    code, out = await sh("date; date -u +%Y")
    assert code == 0
    first, year = out.splitlines()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}", first)
    assert re.fullmatch(r"\d{4}", year)


async def test_scripts_beyond_the_interpreter_run_like_unknown_programs() -> None:
    code, out = await sh("cat <<EOF\nhi\nEOF")
    assert code == 0
    assert out.startswith("(simulated) sh -c ")


async def test_busy_loops_yield_to_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    side = asyncio.ensure_future(ticker())
    try:
        code, out = await sh("i=0; while [ $i -lt 300 ]; do i=$((i+1)); done; echo $i")
    finally:
        side.cancel()
    assert (code, out) == (0, "300\n")
    assert ticks > 100


# -- containers ------------------------------------------------------------------------------


async def _true(value: bool) -> bool:
    return value


async def test_simulated_container_stops_on_request() -> None:
    out: list[bytes] = []
    container = ContainerProcess(["sh", "-c", "echo up; sleep infinity"], {}, QUICK, out.append)
    waiting = asyncio.ensure_future(container.wait())
    await eventually(lambda: _true(out == [b"up\n"]))
    assert await container.stop() == 0
    assert await asyncio.wait_for(waiting, 5) == 0


async def test_local_container_runs_with_its_environment() -> None:
    out: list[bytes] = []
    container = ContainerProcess(
        ["sh", "-c", 'echo "$GREETING from $HOME" >&2; exit 5'],
        {"GREETING": "hello"},
        QUICK,
        out.append,
        local=True,
    )
    assert await asyncio.wait_for(container.wait(), 10) == 5
    text = b"".join(out).decode()
    assert re.fullmatch(r"hello from /\S+kubeforge-\S+\n", text)


async def test_local_container_is_killed_when_stopped() -> None:
    out: list[bytes] = []
    argv = ["sh", "-c", "echo up; exec sleep 60"]
    container = ContainerProcess(argv, {}, QUICK, out.append, local=True)
    waiting = asyncio.ensure_future(container.wait())
    await eventually(lambda: _true(out == [b"up\n"]))
    code = await asyncio.wait_for(container.stop(grace=5), 10)
    assert code == 143  # ended by SIGTERM
    assert await asyncio.wait_for(waiting, 5) == 143


async def test_local_container_that_cannot_start() -> None:
    container = ContainerProcess(
        ["no-such-program-anywhere"], {}, QUICK, lambda _: None, local=True
    )
    with pytest.raises(StartError, match="executable file not found"):
        await container.wait()
