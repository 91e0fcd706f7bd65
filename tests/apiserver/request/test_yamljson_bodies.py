"""YAML bodies are converted to JSON values the way Kubernetes converts them (sigs.k8s.io/yaml
over go-yaml v2): what JSON cannot hold, and runaway alias expansion, is a 400, never a 500."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support import HTTPClient, Reply
from tests.support.crds import CRDS, WIDGETS, widget_crd

CMS = "/api/v1/namespaces/default/configmaps"


async def post_yaml(http: HTTPClient, path: str, text: str) -> Reply:
    return await http.request("POST", path, raw=text.encode(), content_type="application/yaml")


def laughs(levels: int, fanout: int, indent: str = "  ") -> str:
    """Nested aliases: level N holds `fanout` copies of level N-1 (fanout**levels strings)."""
    lines = [f'{indent}l0: &l0 "lol"']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * fanout)
        lines.append(f"{indent}l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


async def install_widgets(http: HTTPClient) -> None:
    assert (await http.post(CRDS, widget_crd())).status == 201


async def test_timestamps_stay_the_strings_they_were_written_as(http: HTTPClient) -> None:
    body = (
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata:\n  name: dates\n  annotations:\n    since: 2001-12-14\n"
        "data:\n  day: 2001-12-14\n  at: 2001-12-14t21:59:43.10-05:00\n"
        "  spaced: 2001-12-14 21:59:43.10 -5\n"
    )
    reply = await post_yaml(http, CMS, body)
    assert reply.status == 201, reply.body
    stored = (await http.get(f"{CMS}/dates")).json()
    assert stored["data"] == {
        "day": "2001-12-14",
        "at": "2001-12-14t21:59:43.10-05:00",
        "spaced": "2001-12-14 21:59:43.10 -5",
    }
    assert stored["metadata"]["annotations"] == {"since": "2001-12-14"}


async def test_scalars_and_keys_resolve_as_go_yaml_resolves_them(http: HTTPClient) -> None:
    await install_widgets(http)
    body = (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: scalars\n"
        "spec:\n  size: 3.0\n  extra:\n"
        "    octal: 0755\n    hex: 0x1F\n    flag: y\n    off: off\n    clock: 1:30\n"
        "    huge: 123456789012345678901234567890\n    beyond: 1e400\n"
        "    binary: !!binary aGVsbG8=\n    set: !!set {a}\n    custom: !thing 12\n"
        "    1: one\n    2.5: two and a half\n    true: yes\n"
    )
    reply = await post_yaml(http, WIDGETS, body)
    assert reply.status == 201, reply.body
    spec = (await http.get(f"{WIDGETS}/scalars")).json()["spec"]
    assert spec["size"] == 3
    assert spec["extra"] == {
        "octal": 493,
        "hex": 31,
        "flag": True,
        "false": False,
        "clock": "1:30",
        "huge": 1.2345678901234568e29,
        "beyond": "1e400",
        "binary": "hello",
        "set": {"a": None},
        "custom": "12",
        "1": "one",
        "2.5": "two and a half",
        "true": True,
    }


async def test_y_is_a_boolean_so_a_name_y_is_rejected(http: HTTPClient) -> None:
    reply = await post_yaml(http, CMS, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n")
    assert reply.status == 400
    assert "cannot unmarshal bool" in reply.json()["message"]


async def test_only_the_first_document_counts(http: HTTPClient) -> None:
    body = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n---\n: : [\n"
    assert (await post_yaml(http, CMS, body)).status == 201
    assert (await http.get(f"{CMS}/first")).status == 200


async def test_merge_keys_and_aliases_within_the_limit_expand(http: HTTPClient) -> None:
    await install_widgets(http)
    body = (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: merged\n"
        "spec:\n  size: 1\n  extra:\n    base: &base {a: 1, b: 2}\n"
        "    copy:\n      <<: *base\n      b: 3\n" + laughs(3, 10, indent="    ")
    )
    reply = await post_yaml(http, WIDGETS, body)
    assert reply.status == 201, reply.body
    extra = (await http.get(f"{WIDGETS}/merged")).json()["spec"]["extra"]
    assert extra["copy"] == {"a": 1, "b": 3}
    assert len(extra["l3"]) == 10 and extra["l3"][9][9] == ["lol"] * 10


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("data:\n  a: &x {b: *x}\n", "anchor 'x' value contains itself"),
        ("data:\n  a: *nowhere\n", "unknown anchor 'nowhere' referenced"),
        ("data:\n  a: .nan\n", "json: unsupported value: NaN"),
        ("data:\n  a: -.inf\n", "json: unsupported value: -Inf"),
        ("data:\n  ? [a, b]\n  : c\n", "invalid map key"),
        ("data:\n  ~: c\n", "unsupported map key"),
        ("data:\n  18446744073709551615: c\n", "unsupported map key of type uint64"),
        ("data:\n  a: !!binary '***'\n", "!!binary value contains invalid base64 data"),
        ("data:\n  a: !!int twelve\n", "cannot decode !!str `twelve` as a !!int"),
        ("data:\n  <<: 5\n", "map merge requires map or sequence of maps"),
    ],
)
async def test_what_json_cannot_hold_is_a_400(http: HTTPClient, text: str, reason: str) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nope\n" + text
    reply = await post_yaml(http, CMS, body)
    assert reply.status == 400, reply.body
    status = reply.json()
    assert status["reason"] == "BadRequest"
    assert "cannot be converted from YAML to JSON" in status["message"]
    assert reason in status["message"]
    assert (await http.get(f"{CMS}/nope")).status == 404


DEEP_BLOCK = "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 1500))


@pytest.mark.parametrize("text", ["[" * 1500, "{a: " * 1500, DEEP_BLOCK])
async def test_nesting_beyond_the_parser_limit_is_a_400(http: HTTPClient, text: str) -> None:
    reply = await post_yaml(http, CMS, text)
    assert reply.status == 400
    assert "not valid YAML" in reply.json()["message"]


async def test_a_billion_laughs_is_a_fast_400_and_the_server_keeps_serving(
    http: HTTPClient,
) -> None:
    # Nine levels of nine: 387 million strings if expanded, from about 500 bytes.
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n" + laughs(9, 9)
    assert len(body) < 600

    async def bomb() -> tuple[Reply, float]:
        started = time.monotonic()
        reply = await post_yaml(http, CMS, body)
        return reply, time.monotonic() - started

    (reply, elapsed), *others = await asyncio.gather(
        bomb(), *(http.get(CMS) for _ in range(5)), bomb()
    )
    assert reply.status == 400
    assert "document contains excessive aliasing" in reply.json()["message"]
    assert elapsed < 2.0
    assert [r.status for r in others[:-1]] == [200] * 5
    assert others[-1][0].status == 400
    assert (await http.get(f"{CMS}/laughs")).status == 404
    assert (await http.get("/readyz")).status == 200


async def test_apply_patches_in_yaml_are_converted_the_same_way(http: HTTPClient) -> None:
    body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"
        "data:\n  day: 2001-12-14\n  port: 0x50\n"
    )
    reply = await http.request(
        "PATCH",
        f"{CMS}/applied?fieldManager=test",
        raw=body.encode(),
        content_type="application/apply-patch+yaml",
    )
    # A ConfigMap's data holds strings: 0x50 reads as the number 80, which is rejected.
    assert reply.status == 400, reply.body
    assert "cannot unmarshal number" in reply.json()["message"]
    fixed = body.replace("0x50", '"0x50"')
    reply = await http.request(
        "PATCH",
        f"{CMS}/applied?fieldManager=test",
        raw=fixed.encode(),
        content_type="application/apply-patch+yaml",
    )
    assert reply.status == 201, reply.body
    assert reply.json()["data"] == {"day": "2001-12-14", "port": "0x50"}
