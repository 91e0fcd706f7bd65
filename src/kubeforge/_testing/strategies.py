"""Hypothesis strategies for typed objects (needs `hypothesis`, in kubeforge's test extras).

    from hypothesis import given, strategies as st

    specs = st.builds(AtSpec, schedule=st.datetimes(timezones=st.just(UTC)),
                      command=st.text(min_size=1))

    @given(kubeforge._testing.objects(At, spec=specs))
    def test_round_trips(at: At) -> None:
        kubeforge._testing.assert_round_trips(at)

`objects` gives the metadata a stored object has (name, namespace, uid, labels,
annotations, ...); the spec and status come from the strategies given, or from the models'
types (`st.builds`, which fills required fields only and knows nothing of kubeforge's
markers: give a strategy for any field whose values are constrained).
"""

from __future__ import annotations

import string
from datetime import UTC, datetime
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

from hypothesis import strategies as st
from pydantic import BaseModel

from kubeforge._api.meta import ObjectMeta

__all__ = ["object_metas", "objects"]

T = TypeVar("T")

_DNS_LABEL = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?\Z")
_LABEL_VALUE = st.from_regex(r"\A([A-Za-z0-9]([A-Za-z0-9_.-]{0,14}[A-Za-z0-9])?)?\Z")
_PREFIX = st.one_of(st.just(""), _DNS_LABEL.map(lambda label: f"{label}.example.com/"))
_QUALIFIED = st.tuples(_PREFIX, _DNS_LABEL).map("".join)
_TIMES = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0))


def object_metas(
    *,
    namespace: str | None = "default",
    annotations: st.SearchStrategy[dict[str, str] | None] | None = None,
) -> st.SearchStrategy[ObjectMeta]:
    """ObjectMeta as the API server returns it: a DNS-1123 name, `namespace` (None for
    cluster-scoped kinds), a uid, a resourceVersion, a generation, a creation time in whole
    seconds, and sometimes labels and annotations (`annotations` replaces the default
    strategy for those, e.g. to include the keys a conversion stashes data in)."""
    texts = st.text(alphabet=string.printable, max_size=20)
    return st.builds(
        ObjectMeta,
        name=_DNS_LABEL,
        namespace=st.just(namespace),
        uid=st.uuids().map(str),
        resource_version=st.integers(min_value=1, max_value=10**9).map(str),
        generation=st.integers(min_value=1, max_value=1000),
        creation_timestamp=_TIMES,
        labels=st.none() | st.dictionaries(_QUALIFIED, _LABEL_VALUE, min_size=1, max_size=3),
        annotations=annotations
        if annotations is not None
        else st.none() | st.dictionaries(_QUALIFIED, texts, min_size=1, max_size=3),
    )


def _model_strategy(cls: type, name: str) -> st.SearchStrategy[Any]:
    """`st.builds` of the model a field holds (None too when the field is optional); the
    field's own type for anything else."""
    annotation = cls.model_fields[name].annotation  # type: ignore[attr-defined]
    members = (
        get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    )
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(models) != 1:
        return st.from_type(annotation)
    built = st.builds(models[0])
    return st.none() | built if type(None) in members else built


def objects(
    cls: type[T],
    *,
    spec: st.SearchStrategy[Any] | None = None,
    status: st.SearchStrategy[Any] | None = None,
    metadata: st.SearchStrategy[ObjectMeta] | None = None,
) -> st.SearchStrategy[T]:
    """Objects of the resource class `cls`: `metadata` (default: `object_metas()`, without a
    namespace for cluster-scoped kinds), `spec` (default: `st.builds` of the spec's model) and
    `status` (default: None or `st.builds` of the status model)."""
    info = cls.__kubeforge__  # type: ignore[attr-defined]
    if metadata is None:
        metadata = object_metas(namespace="default" if info.namespaced else None)
    if spec is None:
        spec = _model_strategy(cls, "spec")
    if status is None:
        status = _model_strategy(cls, "status")
    return st.builds(cls, metadata=metadata, spec=spec, status=status)
