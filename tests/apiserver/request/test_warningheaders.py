"""Warning headers: quoted, without repeats, bounded, and unable to end the header early."""

from __future__ import annotations

from kubeforge._apiserver.request.warningheaders import warning_headers


def test_warnings_are_quoted_once_each() -> None:
    assert warning_headers(['unknown field "a"', 'unknown field "a"', "", "b\\c"]) == [
        ("Warning", '299 - "unknown field \\"a\\""'),
        ("Warning", '299 - "b\\\\c"'),
    ]


def test_control_characters_become_spaces() -> None:
    [(_, value)] = warning_headers(['unknown field "a\r\nSet-Cookie: x\x00"'])
    assert value == '299 - "unknown field \\"a  Set-Cookie: x \\""'
    assert warning_headers(["tab\there"]) == [("Warning", '299 - "tab\there"')]


def test_the_total_is_bounded_as_kube_apiserver_bounds_it() -> None:
    many = [f"unknown field {i:04d} " + "x" * 300 for i in range(40)]
    headers = warning_headers(many)
    texts = [value[len('299 - "') : -1] for _, value in headers]
    assert all(len(t) == 256 for t in texts)
    assert sum(len(t) for t in texts) <= 4096 + 256
    assert len(headers) < len(many)
    assert warning_headers(["short", "x" * 4000]) == [
        ("Warning", '299 - "short"'),
        ("Warning", f'299 - "{"x" * 4000}"'),
    ]
