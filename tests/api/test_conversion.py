"""Hub and spokes: which classes convert into which, convert() routing and checks, stashing in
annotations, the CRD's conversion stanza, and the round-trip helper."""

from __future__ import annotations

from typing import Any, Self

import pytest
from hypothesis import given, settings, strategies as st

import kubeforge
import kubeforge.conversion
from kubeforge._api.conversion import conversion_versions, hub_of
from kubeforge._api.crd import crd_for
from kubeforge._api.meta import WebhookConversion
from kubeforge._testing.roundtrip import first_difference
from kubeforge.testing import assert_round_trips, object_metas, objects

GROUP = "units.kubeforge.dev"
NOTE = f"{GROUP}/note"


class Spec(kubeforge.Model):
    size: int = 1
    note: str | None = None


class SmallSpec(kubeforge.Model):
    size: int = 1


class Status(kubeforge.Model):
    ready: bool = False


@kubeforge.resource(group=GROUP, version="v2", kind="Box")
class Box(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
    pass


calls: list[str] = []


@kubeforge.resource(group=GROUP, version="v1", kind="Box", storage=False)
class BoxV1(kubeforge.Resource[SmallSpec, Status], kubeforge.conversion.Convertible[Box]):
    """Has no note: keeps it in an annotation."""

    def to_hub(self) -> Box:
        calls.append("v1.to_hub")
        hub = Box(metadata=self.metadata, spec=Spec(size=self.spec.size), status=self.status)
        hub.spec.note = kubeforge.conversion.unstash(hub, NOTE)
        return hub

    @classmethod
    def from_hub(cls, hub: Box) -> Self:
        calls.append("v1.from_hub")
        spoke = cls(metadata=hub.metadata, spec=SmallSpec(size=hub.spec.size), status=hub.status)
        if hub.spec.note is not None:
            kubeforge.conversion.stash(spoke, NOTE, hub.spec.note)
        return spoke


@kubeforge.resource(group=GROUP, version="v1beta1", kind="Box", storage=False)
class BoxV1beta1(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Box]):
    """The same fields as the hub."""

    def to_hub(self) -> Box:
        calls.append("v1beta1.to_hub")
        return Box(metadata=self.metadata, spec=self.spec, status=self.status)

    @classmethod
    def from_hub(cls, hub: Box) -> Self:
        calls.append("v1beta1.from_hub")
        return cls(metadata=hub.metadata, spec=hub.spec, status=hub.status)


def box(**spec: Any) -> Box:
    meta = kubeforge.ObjectMeta(name="b", namespace="default", uid="u", labels={"a": "b"})
    return Box(metadata=meta, spec=Spec(**spec))


# Which classes convert ---------------------------------------------------------------------


def test_a_spoke_names_its_hub_and_the_kind_is_found_from_any_version() -> None:
    assert hub_of(BoxV1) is Box
    assert hub_of(Box) is None
    for cls in (Box, BoxV1, BoxV1beta1):
        versions = kubeforge.conversion.kind_versions(cls)
        assert versions is not None
        assert (versions.group, versions.kind, versions.hub) == (GROUP, "Box", Box)
        assert dict(versions.spokes) == {"v1": BoxV1, "v1beta1": BoxV1beta1}
        assert versions.classes == {"v2": Box, "v1": BoxV1, "v1beta1": BoxV1beta1}
        assert versions.class_for("v3") is None


def test_kinds_that_do_not_convert() -> None:
    @kubeforge.resource(group=GROUP, version="v1", kind="Plain")
    class Plain(kubeforge.Resource[Spec, Status]):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Alone")
    class Alone(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    assert kubeforge.conversion.kind_versions(Plain) is None
    assert kubeforge.conversion.kind_versions(Alone) is None  # a hub without spokes is one version


def test_badly_declared_spokes_are_refused_with_what_to_do() -> None:
    # Each case has its own hub: the registry of resource classes is the whole process's.
    @kubeforge.resource(group=GROUP, version="v2", kind="Tin")
    class Tin(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Crate", storage=False)
    class Elsewhere(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Tin]):
        def to_hub(self) -> Tin:
            raise NotImplementedError

        @classmethod
        def from_hub(cls, hub: Tin) -> Self:
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"Elsewhere \(units.kubeforge.dev/v1/Crate\) names a hub"):
        kubeforge.conversion.kind_versions(Elsewhere)
    with pytest.raises(TypeError, match="names a hub of another kind"):
        kubeforge.conversion.kind_versions(Tin)  # found from the hub as well

    @kubeforge.resource(group=GROUP, version="v2", kind="Can")
    class Can(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Can", storage=False)
    class Lazy(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Can]):
        pass

    with pytest.raises(TypeError, match="Lazy is Convertible but does not implement from_hub"):
        kubeforge.conversion.kind_versions(Can)
    with pytest.raises(TypeError, match="Can't instantiate abstract class"):
        Lazy(spec=Spec())

    @kubeforge.resource(group=GROUP, version="v2", kind="Pot")
    class Pot(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    def pot_v1() -> type:
        @kubeforge.resource(group=GROUP, version="v1", kind="Pot", storage=False)
        class PotV1(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Pot]):
            def to_hub(self) -> Pot:
                return Pot(metadata=self.metadata, spec=self.spec)

            @classmethod
            def from_hub(cls, hub: Pot) -> Self:
                return cls(metadata=hub.metadata, spec=hub.spec)

        return PotV1

    pot_v1()
    assert kubeforge.conversion.kind_versions(Pot) is not None
    pot_v1()  # a second class for v1, converting to the same hub: which one is meant?
    with pytest.raises(ValueError, match=r"PotV1 and .*PotV1 are both version v1 of Pot"):
        kubeforge.conversion.kind_versions(Pot)

    @kubeforge.resource(group=GROUP, version="v1", kind="Thing")
    class NotAHub(kubeforge.Resource[Spec, Status]):
        pass

    @kubeforge.resource(group=GROUP, version="v2", kind="Thing", storage=False)
    class Spoke(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[NotAHub]):
        def to_hub(self) -> NotAHub:
            raise NotImplementedError

        @classmethod
        def from_hub(cls, hub: NotAHub) -> Self:
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"not marked as the hub: add kubeforge\.Hub"):
        kubeforge.conversion.kind_versions(Spoke)

    class Unnamed(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible):  # type: ignore[type-arg]
        pass

    with pytest.raises(TypeError, match="name the hub class as Convertible's parameter"):
        hub_of(Unnamed)


def test_partial_sets_of_versions_are_refused_as_controller_runtime_refuses_them() -> None:
    assert conversion_versions([Box, BoxV1]) is not None
    assert conversion_versions([Box]) is None

    @kubeforge.resource(group=GROUP, version="v3", kind="Box", storage=False)
    class Other(kubeforge.Resource[Spec, Status]):
        pass

    with pytest.raises(ValueError, match="Other neither is the hub nor converts to it"):
        conversion_versions([Box, BoxV1, Other])
    with pytest.raises(ValueError, match=r"BoxV1 converts to Box, which is not one of these"):
        conversion_versions([BoxV1, Other])

    @kubeforge.resource(group=GROUP, version="v3", kind="Box", storage=False)
    class SecondHub(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    with pytest.raises(ValueError, match="a kind has one hub, not 2"):
        conversion_versions([Box, SecondHub, BoxV1])


# convert() ------------------------------------------------------------------------------------


def test_convert_routes_through_the_hub_and_leaves_its_input_alone() -> None:
    hub = box(size=3, note="fragile")
    calls.clear()
    spoke = kubeforge.conversion.convert(hub, BoxV1)
    assert calls == ["v1.from_hub"]
    assert spoke.api_version == f"{GROUP}/v1" and spoke.kind == "Box"
    assert spoke.metadata.annotations == {NOTE: '"fragile"'}
    assert hub.metadata.annotations is None  # the input is untouched

    calls.clear()
    beta = kubeforge.conversion.convert(spoke, BoxV1beta1)
    assert calls == ["v1.to_hub", "v1beta1.from_hub"]
    assert beta.spec == Spec(size=3, note="fragile")
    assert beta.metadata.annotations is None  # unstashed on the way through the hub
    assert spoke.metadata.annotations == {NOTE: '"fragile"'}

    calls.clear()
    assert kubeforge.conversion.convert(beta, Box).to_dict() == hub.to_dict()
    assert calls == ["v1beta1.to_hub"]

    same = kubeforge.conversion.convert(hub, Box)
    assert same == hub and same is not hub


def test_convert_checks_what_conversions_return() -> None:
    @kubeforge.resource(group=GROUP, version="v2", kind="Jar")
    class Jar(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Jar", storage=False)
    class Renames(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Jar]):
        def to_hub(self) -> Jar:
            return Jar(metadata={"name": "other"}, spec=self.spec)  # type: ignore[arg-type]

        @classmethod
        def from_hub(cls, hub: Jar) -> Self:
            return hub  # type: ignore[return-value]

    spoke = Renames(metadata=kubeforge.ObjectMeta(name="j", uid="1"), spec=Spec())
    with pytest.raises(ValueError, match=r"Renames.to_hub\(\) changed metadata.name from 'j'"):
        kubeforge.conversion.convert(spoke, Jar)
    with pytest.raises(TypeError, match=r"Renames.from_hub\(\) returned Jar, not .*Renames"):
        kubeforge.conversion.convert(Jar(spec=Spec()), Renames)
    with pytest.raises(TypeError, match="does not convert to"):
        kubeforge.conversion.convert(spoke, Box)


# stash / unstash ------------------------------------------------------------------------------


def test_stash_keeps_json_and_unstash_takes_it_back() -> None:
    obj = box()
    kubeforge.conversion.stash(obj, NOTE, {"b": [1, "two"], "a": None})
    assert obj.metadata.annotations == {NOTE: '{"a":null,"b":[1,"two"]}'}
    assert kubeforge.conversion.unstash(obj, NOTE) == {"a": None, "b": [1, "two"]}
    assert obj.metadata.annotations is None
    assert kubeforge.conversion.unstash(obj, NOTE) is None

    obj.metadata.annotations = {"keep": "me", NOTE: "not json"}
    with pytest.raises(
        kubeforge.conversion.ConversionError, match=f"the annotation {NOTE} does not hold"
    ):
        kubeforge.conversion.unstash(obj, NOTE)
    with pytest.raises(ValueError, match="is not an annotation key"):
        kubeforge.conversion.stash(obj, "no spaces allowed", 1)


# The CRD ----------------------------------------------------------------------------------------


def test_a_hub_with_spokes_makes_a_crd_that_converts_through_the_webhook() -> None:
    crd = crd_for([BoxV1, Box, BoxV1beta1])
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "webhook-service",
                    "namespace": "system",
                    "path": "/convert",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v2", "v1", "v1beta1"]
    assert "conversion" not in crd_for([Box])["spec"]


def test_conversion_options_and_partial_sets_in_the_crd() -> None:
    @kubeforge.resource(
        group=GROUP,
        version="v2",
        kind="Bin",
        conversion=WebhookConversion(service_name="bins", path="/bins/convert"),
    )
    class Bin(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Bin", storage=False)
    class BinV1(kubeforge.Resource[Spec, Status], kubeforge.conversion.Convertible[Bin]):
        def to_hub(self) -> Bin:
            return Bin(metadata=self.metadata, spec=self.spec)

        @classmethod
        def from_hub(cls, hub: Bin) -> Self:
            return cls(metadata=hub.metadata, spec=hub.spec)

    service = crd_for([Bin, BinV1])["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert (service["name"], service["path"]) == ("bins", "/bins/convert")

    @kubeforge.resource(group=GROUP, version="v1", kind="Bin", storage=False)
    class Stray(kubeforge.Resource[Spec, Status]):
        pass

    with pytest.raises(ValueError, match="Stray neither is the hub nor converts to it"):
        crd_for([Bin, Stray])


# The round-trip helper --------------------------------------------------------------------------


def test_round_trips_pass_when_nothing_is_lost() -> None:
    assert_round_trips(box(size=2, note="n"))  # v2 -> v1 -> v2, v2 -> v1beta1 -> v2
    spoke = kubeforge.conversion.convert(box(size=2, note="n"), BoxV1)
    assert_round_trips(spoke)  # v1 -> v2 -> v1, v1 -> v1beta1 -> v1
    assert_round_trips(box(), through=[BoxV1beta1])


def test_a_lossy_conversion_fails_the_round_trip_naming_route_and_field() -> None:
    @kubeforge.resource(group=GROUP, version="v2", kind="Bag")
    class Bag(kubeforge.Resource[Spec, Status], kubeforge.conversion.Hub):
        pass

    @kubeforge.resource(group=GROUP, version="v1", kind="Bag", storage=False)
    class Forgetful(kubeforge.Resource[SmallSpec, Status], kubeforge.conversion.Convertible[Bag]):
        def to_hub(self) -> Bag:
            return Bag(metadata=self.metadata, spec=Spec(size=self.spec.size))

        @classmethod
        def from_hub(cls, hub: Bag) -> Self:
            return cls(metadata=hub.metadata, spec=SmallSpec(size=hub.spec.size))

    with pytest.raises(AssertionError, match=r"v2 -> v1 -> v2 changed the object: spec.note: "):
        assert_round_trips(Bag(spec=Spec(note="gone")))
    assert_round_trips(Bag(spec=Spec()))
    with pytest.raises(TypeError, match="has no other versions"):
        assert_round_trips(Spec())


def test_first_difference() -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "a[1]: 2 != 3"
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "a: [1] != [1, 2]"
    assert first_difference({"a": 1}, {}) == "a: missing after the round trip (was 1)"
    assert first_difference({}, {"b": 1}) == "b: appeared after the round trip (1)"
    assert first_difference(1, 1.0) == "the object: 1 != 1.0"


@settings(deadline=None)  # timing is not what this tests; the suite may share the machine
@given(objects(Box, spec=st.builds(Spec, size=st.integers(), note=st.none() | st.text())))
def test_any_box_round_trips(obj: Box) -> None:
    assert obj.metadata.namespace == "default" and obj.metadata.name
    assert_round_trips(obj)


@settings(deadline=None)
@given(object_metas(namespace=None))
def test_object_metas_look_like_stored_metadata(meta: kubeforge.ObjectMeta) -> None:
    assert meta.namespace is None
    assert meta.uid and meta.resource_version and meta.creation_timestamp is not None
    assert meta.creation_timestamp.microsecond == 0
