"""The simulated shell: what `sh -c` scripts and the everyday utilities print and return."""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Sequence

from kubeforge._cluster.shell import Output, run_command


async def program(argv: Sequence[str], out: Output) -> int:
    """What the interpreter does not know: noted in the output, succeeding."""
    out(f"(program) {shlex.join(argv)}\n".encode())
    return 0


async def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    out: list[bytes] = []
    code = await asyncio.wait_for(
        run_command(argv, env or {}, out.append, program, sleep_seconds=0.01), 10
    )
    return code, b"".join(out).decode()


async def sh(script: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    return await run(["sh", "-c", script, *args], env)


async def test_echo_prints_and_false_fails() -> None:
    assert await run(["echo", "hello", "world"]) == (0, "hello world\n")
    assert await run(["/bin/echo", "-n", "x"]) == (0, "x")
    assert await run(["false"]) == (1, "")
    assert await run(["true"]) == (0, "")


async def test_sleep_takes_the_run_seconds_override() -> None:
    assert await run(["sleep", "3600"]) == (0, "")
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


async def test_scripts_beyond_the_interpreter_go_to_the_program_runner() -> None:
    code, out = await sh("cat <<EOF\nhi\nEOF")
    assert code == 0
    assert out == "(program) sh -c 'cat <<EOF\nhi\nEOF'\n"


async def test_unknown_programs_go_to_the_program_runner_with_their_output() -> None:
    assert await sh("echo before; memcached -m 64 -o modern -v | cat; echo after $?") == (
        0,
        "before\n(program) memcached -m 64 -o modern -v\nafter 0\n",
    )
    assert await run(["nginx", "-g", "daemon off;"]) == (0, "(program) nginx -g 'daemon off;'\n")


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
