"""URL paths to resource requests."""

from __future__ import annotations

import pytest

from kubeforge._apiserver.request.info import RequestInfo, parse_request_path


@pytest.mark.parametrize(
    ("method", "path", "watch", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", False, ("", "v1", "ns", "pods", None, None, "list")),
        ("GET", "/api/v1/pods", False, ("", "v1", None, "pods", None, None, "list")),
        ("GET", "/api/v1/pods", True, ("", "v1", None, "pods", None, None, "watch")),
        (
            "GET",
            "/api/v1/watch/namespaces/ns/pods",
            False,
            ("", "v1", "ns", "pods", None, None, "watch"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/pods/p/log",
            False,
            ("", "v1", "ns", "pods", "p", "log", "get"),
        ),
        (
            "POST",
            "/apis/apps/v1/namespaces/ns/deployments",
            False,
            ("apps", "v1", "ns", "deployments", None, None, "create"),
        ),
        (
            "PUT",
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            False,
            ("apps", "v1", "ns", "deployments", "d", "scale", "update"),
        ),
        (
            "PATCH",
            "/api/v1/nodes/n/status",
            False,
            ("", "v1", None, "nodes", "n", "status", "patch"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/ns/configmaps",
            False,
            ("", "v1", "ns", "configmaps", None, None, "deletecollection"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/ns",
            False,
            ("", "v1", None, "namespaces", "ns", None, "delete"),
        ),
        ("GET", "/api/v1/namespaces", False, ("", "v1", None, "namespaces", None, None, "list")),
        (
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            False,
            ("", "v1", None, "namespaces", "ns", "finalize", "update"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/status",
            False,
            ("", "v1", None, "namespaces", "ns", "status", "get"),
        ),
    ],
)
def test_paths(method: str, path: str, watch: bool, expected: tuple[object, ...]) -> None:
    assert parse_request_path(method, path, watch) == RequestInfo(*expected)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path", ["/", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version"]
)
def test_non_resource_paths(path: str) -> None:
    assert parse_request_path("GET", path, False) is None
