"""A placement compares by its normalized content and gives its raw form back untouched."""

from __future__ import annotations

from typing import Any

import pytest

from tidal.domain.placement import Placement, normalized

DYNAMIC: dict[str, Any] = {
    "clusterAffinity": {"clusterNames": ["a", "b"]},
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    },
}


def test_normalize_adds_the_crd_default_and_drops_empties() -> None:
    """replicaSchedulingType defaults to Divided; empty values vanish."""
    assert normalized({"replicaScheduling": {"x": 1}, "spreadConstraints": []}) == {
        "replicaScheduling": {"x": 1, "replicaSchedulingType": "Divided"}
    }


@pytest.mark.parametrize(
    ("raw", "content"),
    [
        ({"a": None, "b": {}, "c": [], "d": "", "e": 0, "f": False}, {"e": 0, "f": False}),
        ({"a": {"b": {"c": None}}}, {}),  # empty once its own empties are gone
        ({"replicaScheduling": {}}, {}),  # no default where nothing is left
        ({"replicaScheduling": {"replicaSchedulingType": ""}}, {}),
        (
            {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
            {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
        ),
        (
            {"x": {"replicaScheduling": {"y": 1}}},  # the default at any depth
            {"x": {"replicaScheduling": {"y": 1, "replicaSchedulingType": "Divided"}}},
        ),
        ({"l": [None, {}, {"a": None}, 1]}, {"l": [None, {}, {}, 1]}),  # list items kept
        (None, None),
        ("text", "text"),
        ([{"a": ""}], [{}]),
    ],
)
def test_normalized_content(raw: Any, content: Any) -> None:
    """Empties go from mappings (after their own normalization), never from lists."""
    assert normalized(raw) == content


def test_equal_placements_differ_only_in_what_karmada_treats_alike() -> None:
    """A binding's empty lists and the filled-in default do not make a placement differ."""
    binding_side = {**DYNAMIC, "spreadConstraints": [], "clusterTolerations": None}
    policy_side = {**DYNAMIC, "replicaScheduling": {**DYNAMIC["replicaScheduling"]}}
    del policy_side["replicaScheduling"]["replicaSchedulingType"]
    assert Placement(binding_side) == Placement(policy_side)
    assert hash(Placement(binding_side)) == hash(Placement(policy_side))
    assert len({Placement(binding_side), Placement(policy_side)}) == 1


def test_different_placements_differ() -> None:
    """Another cluster, another order of clusters or another type make another placement."""
    other = {**DYNAMIC, "clusterAffinity": {"clusterNames": ["b", "a"]}}
    duplicated: dict[str, Any] = {"clusterAffinity": DYNAMIC["clusterAffinity"]}
    duplicated["replicaScheduling"] = {"replicaSchedulingType": "Duplicated"}
    assert Placement(DYNAMIC) != Placement(other)
    assert Placement(DYNAMIC) != Placement(duplicated)
    assert Placement({}) != Placement([])


def test_raw_is_what_was_read_and_copies_stay_apart() -> None:
    """raw() is the placement untouched; neither the source nor a copy changes the value."""
    source: dict[str, Any] = {"replicaScheduling": {"x": 1}, "spreadConstraints": []}
    placement = Placement(source)
    source["replicaScheduling"]["x"] = 2
    raw = placement.raw()
    assert raw == {"replicaScheduling": {"x": 1}, "spreadConstraints": []}
    raw["replicaScheduling"]["x"] = 3
    placement.content()["replicaScheduling"]["x"] = 4
    assert placement == Placement({"replicaScheduling": {"x": 1}})


def test_of_gives_none_for_no_placement_and_an_empty_one_otherwise() -> None:
    """None (a binding without a placement) is no placement; {} is the empty placement."""
    assert Placement.of(None) is None
    assert Placement.of({}) == Placement({"a": None})
    assert Placement.of({}) != Placement.of(None)


def test_a_placement_is_immutable_and_never_equals_a_dict() -> None:
    """No attribute can be set; a raw dict is not a placement."""
    placement = Placement(DYNAMIC)
    with pytest.raises(AttributeError):
        placement._raw = {}
    assert placement != DYNAMIC
    assert "Divided" in repr(placement)
