"""The merge patch builder: annotations, labels, spec fields, activation and placement as the
bodies tidal's writes always sent, key order included, and the typed placements of the views."""

from __future__ import annotations

import json

from tidal.domain.placement import Placement
from tidal.karmada.names import SWITCH_RUN, SWITCHED_AT
from tidal.karmada.patches import MergePatch, touch
from tidal.karmada.views import BindingView, PolicyView

WEIGHTED = {
    "clusterAffinity": {"clusterNames": ["a", "b"]},
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["b"]}}]},
    },
}
DUPLICATED = {
    "clusterAffinity": {"clusterNames": ["a", "b"]},
    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
}


def test_annotations_set_and_removed() -> None:
    """A None value removes the annotation; later calls add to the same annotations."""
    body = MergePatch().annotate({"x": "1"}).annotate({"y": None}).body()
    assert body == {"metadata": {"annotations": {"x": "1", "y": None}}}


def test_labels_beside_annotations() -> None:
    """Labels and annotations share the patch's metadata."""
    body = MergePatch().label({"l": "v"}).annotate({"a": None}).body()
    assert body == {"metadata": {"labels": {"l": "v"}, "annotations": {"a": None}}}


def test_a_schedule_patch_with_marks_and_lazy_keeps_its_key_order() -> None:
    """A window's own patch, then the run's marks, then the Lazy: the body (as JSON, in order)
    is the one the policy write sent before the builder."""
    patch = {"spec": {"placement": DUPLICATED}}
    body = (
        MergePatch(patch)
        .annotate({"tidal.io/window": "night", "tidal.io/run": "r1"})
        .activation("Lazy")
        .annotate({"tidal.io/lazy-added-by": "r1"})
        .body("42")
    )
    before = {
        "spec": {"placement": DUPLICATED, "activationPreference": "Lazy"},
        "metadata": {
            "annotations": {
                "tidal.io/window": "night",
                "tidal.io/run": "r1",
                "tidal.io/lazy-added-by": "r1",
            },
            "resourceVersion": "42",
        },
    }
    assert json.dumps(body) == json.dumps(before)
    assert patch == {"spec": {"placement": DUPLICATED}}  # the schedule's own is not touched


def test_activation_none_removes_it() -> None:
    """Putting back an unset activationPreference writes null (the merge patch removes it)."""
    assert MergePatch().activation(None).body() == {"spec": {"activationPreference": None}}


def test_placement_patches_only_what_differs() -> None:
    """From Weighted to Duplicated: the fields that go are null, the new type set, the rest
    (clusterAffinity, other spec fields) not sent."""
    spec = {"placement": WEIGHTED, "priority": 3}
    body = MergePatch().placement(spec, Placement(DUPLICATED)).body()
    assert body == {
        "spec": {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Duplicated",
                    "replicaDivisionPreference": None,
                    "weightPreference": None,
                }
            }
        }
    }


def test_an_equal_placement_patches_nothing() -> None:
    """The same placement: no spec in the patch, and an empty patch is false."""
    patch = MergePatch().placement({"placement": WEIGHTED}, Placement(WEIGHTED))
    assert not patch and patch.body() == {}


def test_the_resource_version_goes_on_a_copy() -> None:
    """Each body is a copy: a retry after a Conflict sends the next version, not both."""
    patch = MergePatch().annotate({"x": "1"})
    assert patch.body("1")["metadata"]["resourceVersion"] == "1"
    assert "resourceVersion" not in patch.body()["metadata"]


def test_the_template_touch() -> None:
    """The touch sets tidal's switched-at and run annotations, in that order."""
    body = touch("2026-12-06T23:00:00Z", "r1").body()
    assert json.dumps(body) == json.dumps(
        {"metadata": {"annotations": {SWITCHED_AT: "2026-12-06T23:00:00Z", SWITCH_RUN: "r1"}}}
    )


def test_views_give_typed_placements() -> None:
    """A policy's and a binding's placement as a Placement (equal when Karmada treats them
    alike); None where the object has none."""
    policy = PolicyView({"spec": {"placement": DUPLICATED}})
    binding = BindingView.of({"spec": {"placement": {**DUPLICATED, "spreadConstraints": []}}})
    assert policy.placement == binding.placement == Placement(DUPLICATED)
    assert PolicyView({"spec": {}}).placement is None and BindingView.of(None).placement is None
