"""Paths a pod names inside its volumes (item files, subPaths, the projected token's file)
are refused when absolute or climbing out with `..`, with kube-apiserver's field paths and
messages (validateLocalDescendingPath, ValidateLocalNonReservedPath), for pods and for every
pod template."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeforge._testing.kubectl import Kubectl
from tests.support import HTTPClient

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PROJECTED = "spec.volumes[0].projected"
MOUNTS = "spec.containers[0].volumeMounts"
NO_BACKSTEPS = "must not contain '..'"
NOT_START = "must not start with '..'"


def pod(
    volumes: list[dict[str, Any]] | None = None, mounts: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def invalid(field: str, value: str, why: str) -> str:
    """One cause of a 422 as its message shows it."""
    return f'{field}: Invalid value: "{value}": {why}'


def items(*paths: str) -> list[dict[str, str]]:
    return [{"key": "k", "path": p} for p in paths]


CASES = [
    (
        pod([{"name": "v", "configMap": {"name": "cm", "items": items("../x")}}]),
        [invalid("spec.volumes[0].configMap.items[0].path", "../x", NO_BACKSTEPS)],
    ),
    (
        pod([{"name": "v", "secret": {"secretName": "s", "items": items("ok", "/etc/passwd")}}]),
        [invalid("spec.volumes[0].secret.items[1].path", "/etc/passwd", "must be a relative path")],
    ),
    (
        pod([{"name": "v", "configMap": {"name": "cm", "items": items("..data")}}]),
        [invalid("spec.volumes[0].configMap.items[0].path", "..data", "must not start with '..'")],
    ),
    (
        pod([{"name": "v", "configMap": {"name": "cm", "items": items("a/../../b")}}]),
        [invalid("spec.volumes[0].configMap.items[0].path", "a/../../b", NO_BACKSTEPS)],
    ),
    (
        pod([{"name": "v", "configMap": {"name": "cm", "items": [{"key": "k"}]}}]),
        ["spec.volumes[0].configMap.items[0].path: Required value"],
    ),
    (
        # The downward API's files are reported at the volume source's path.
        pod(
            [
                {
                    "name": "v",
                    "downwardAPI": {
                        "items": [{"path": "/abs", "fieldRef": {"fieldPath": "metadata.name"}}]
                    },
                }
            ]
        ),
        [invalid("spec.volumes[0].downwardAPI.path", "/abs", "must be a relative path")],
    ),
    (
        # ... and the projected token's at the projected volume's.
        pod(
            [
                {
                    "name": "v",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "../../token"}}]},
                }
            ]
        ),
        [invalid("spec.volumes[0].projected.path", "../../token", NO_BACKSTEPS)],
    ),
    (
        pod(
            [
                {
                    "name": "v",
                    "projected": {
                        "sources": [
                            {"secret": {"name": "s", "items": items("ok")}},
                            {
                                "downwardAPI": {
                                    "items": [
                                        {"path": "/x", "fieldRef": {"fieldPath": "metadata.name"}}
                                    ]
                                }
                            },
                            {"configMap": {"name": "cm", "items": items("ok", "..x")}},
                        ]
                    },
                }
            ]
        ),
        [
            invalid(f"{PROJECTED}.sources[1].downwardAPI.path", "/x", "must be a relative path"),
            invalid(PROJECTED, "cm", "conflicting duplicate paths"),
            invalid(f"{PROJECTED}.sources[2].configMap.items[1].path", "..x", NOT_START),
        ],
    ),
    (
        pod([{"name": "v", "emptyDir": {}}], [{"name": "v", "mountPath": "/d", "subPath": "../x"}]),
        # Upstream names the list, not the mount, for these two.
        [invalid("spec.containers[0].volumeMounts.subPath", "../x", NO_BACKSTEPS)],
    ),
    (
        pod([{"name": "v", "emptyDir": {}}], [{"name": "v", "mountPath": "/d", "subPath": "/etc"}]),
        [invalid("spec.containers[0].volumeMounts.subPath", "/etc", "must be a relative path")],
    ),
    (
        pod(
            [{"name": "v", "emptyDir": {}}],
            [{"name": "v", "mountPath": "/d", "subPathExpr": "/$(POD_NAME)/.."}],
        ),
        [
            invalid(f"{MOUNTS}.subPathExpr", "/$(POD_NAME)/..", "must be a relative path"),
            invalid(f"{MOUNTS}.subPathExpr", "/$(POD_NAME)/..", NO_BACKSTEPS),
        ],
    ),
    (
        pod(
            [{"name": "v", "emptyDir": {}}],
            [{"name": "v", "mountPath": "/d", "subPath": "a", "subPathExpr": "$(POD_NAME)"}],
        ),
        [
            invalid(
                f"{MOUNTS}[0].subPathExpr",
                "$(POD_NAME)",
                "subPathExpr and subPath are mutually exclusive",
            )
        ],
    ),
    (
        # A volume that is itself invalid is one no mount can name.
        pod(
            [{"name": "v", "configMap": {"name": "cm", "items": items("../x")}}],
            [{"name": "v", "mountPath": "/d"}],
        ),
        [
            invalid("spec.volumes[0].configMap.items[0].path", "../x", NO_BACKSTEPS),
            'spec.containers[0].volumeMounts[0].name: Not found: "v"',
        ],
    ),
    (
        pod([{"name": "v", "hostPath": {"path": "/var/../etc"}}]),
        [invalid("spec.volumes[0].hostPath.path", "/var/../etc", NO_BACKSTEPS)],
    ),
]


def expected_message(kind: str, name: str, causes: list[str]) -> str:
    if len(causes) == 1:
        return f'{kind} "{name}" is invalid: {causes[0]}'
    return f'{kind} "{name}" is invalid: [{", ".join(causes)}]'


@pytest.mark.parametrize(("body", "causes"), CASES)
async def test_a_pod_path_out_of_its_volume_is_refused(
    http: HTTPClient, body: dict[str, Any], causes: list[str]
) -> None:
    reply = await http.post(PODS, body)
    assert reply.status == 422, reply.body
    assert reply.json()["message"] == expected_message("Pod", "p", causes)
    assert (await http.get(f"{PODS}/p")).status == 404


async def test_paths_below_the_volume_are_accepted(http: HTTPClient) -> None:
    body = pod(
        [
            {"name": "cm", "configMap": {"name": "cm", "items": items("a/b", "c..d", ".hidden")}},
            {
                "name": "proj",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "dir/token"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}
                                ]
                            }
                        },
                    ]
                },
            },
            {"name": "scratch", "emptyDir": {}},
        ],
        [
            {"name": "cm", "mountPath": "/etc/cm"},
            {"name": "scratch", "mountPath": "/a", "subPath": "x/..y"},
            {"name": "scratch", "mountPath": "/b", "subPathExpr": "$(POD_NAME)"},
        ],
    )
    reply = await http.post(PODS, body)
    assert reply.status == 201, reply.body


async def test_every_pod_template_is_held_to_it(http: HTTPClient) -> None:
    template = pod(
        [{"name": "v", "emptyDir": {}}], [{"name": "v", "mountPath": "/d", "subPath": "../../x"}]
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": template["spec"]},
        },
    }
    reply = await http.post(DEPLOYMENTS, deployment)
    assert reply.status == 422, reply.body
    assert reply.json()["message"] == expected_message(
        "Deployment.apps",
        "d",
        [invalid("spec.template.spec.containers[0].volumeMounts.subPath", "../../x", NO_BACKSTEPS)],
    )


async def test_kubectl_shows_the_refusal(kubectl: Kubectl) -> None:
    body = pod(
        [{"name": "v", "configMap": {"name": "cm", "items": items("../../../etc/cron.d/x")}}]
    )
    result = await kubectl.run("create", "-f", "-", stdin=orjson.dumps(body).decode(), check=False)
    assert result.code == 1
    assert result.err.strip() == (
        'The Pod "p" is invalid: spec.volumes[0].configMap.items[0].path: Invalid value: '
        "\"../../../etc/cron.d/x\": must not contain '..'"
    )
    missing = await kubectl.run("get", "pod", "p", check=False)
    assert missing.code == 1
