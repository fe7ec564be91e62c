"""What a schedule's merge patch may change: spec.placement, plus allowFields; never metadata;
never a null or a scalar where a whole object would go."""

from __future__ import annotations

from typing import Any

import pytest

from tidal.domain.patch_scope import added_selectors, allow_field_problem, scope_problems

PLACEMENT = {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["b"]}}}}
EVERY_DEPLOYMENT = [{"apiVersion": "apps/v1", "kind": "Deployment"}]


def test_a_placement_patch_is_in_scope() -> None:
    """Nested placement fields, nulls inside the placement included, are allowed."""
    assert scope_problems(PLACEMENT) == []
    assert scope_problems({"spec": {"placement": {"clusterAffinity": None}}}) == []


@pytest.mark.parametrize(
    ("patch", "loc", "words"),
    [
        (
            {"spec": {"resourceSelectors": EVERY_DEPLOYMENT}},
            ("spec", "resourceSelectors"),
            "allowFields",
        ),
        ({"metadata": {"labels": {"a": "b"}}}, ("metadata",), "never patched"),
        ({"spec": None}, ("spec",), "not null"),
        ({"spec": []}, ("spec",), "not list"),
        ({"spec": {"placement": None}}, ("spec", "placement"), "not null"),
        ({"spec": {"placement": "b"}}, ("spec", "placement"), "not str"),
        ({"status": {}}, ("status",), "only spec"),
        ({"spec": {"priority": 5, **PLACEMENT["spec"]}}, ("spec", "priority"), "allowFields"),
        (
            {"spec": {"activationPreference": "Lazy"}},
            ("spec", "activationPreference"),
            "allowFields",
        ),
    ],
)
def test_out_of_scope_patches_are_refused_where_they_reach_out(
    patch: object, loc: tuple[str, ...], words: str
) -> None:
    """Each reach beyond the placement is one problem, located at its key."""
    problems = scope_problems(patch)
    assert [p[0] for p in problems] == [loc], problems
    assert words in problems[0][1]


def test_allow_fields_widen_the_scope_to_the_fields_listed() -> None:
    """A field listed in allowFields may be patched, down to the path listed and no further."""
    patch: dict[str, Any] = {"spec": {"failover": {"application": {"decisionConditions": {}}}}}
    assert scope_problems(patch, ["spec.failover"]) == []
    assert scope_problems(patch, ["spec.failover.application"]) == []
    assert [
        p[0]
        for p in scope_problems({"spec": {"failover": {"x": 1}}}, ["spec.failover.application"])
    ] == [("spec", "failover", "x")]
    assert [
        p[0] for p in scope_problems({"spec": {"failover": None}}, ["spec.failover.application"])
    ] == [("spec", "failover")]


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ("spec.failover", False),
        ("spec.failover.application", False),
        ("metadata.labels", True),
        ("metadata", True),
        ("spec", True),
        ("placement", True),
        ("spec..x", True),
        ("spec.x y", True),
    ],
)
def test_allow_fields_entries_are_paths_under_spec(path: str, bad: bool) -> None:
    """allowFields names dotted paths under spec; metadata never."""
    assert (allow_field_problem(path) is not None) is bad


def test_added_selectors_are_those_the_old_policy_did_not_cover() -> None:
    """A selector is covered by an old one of its kind with no narrower constraint."""
    old = {
        "resourceSelectors": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "ai",
                "labelSelector": {"matchLabels": {"t": "1"}},
            }
        ]
    }
    same = {
        "resourceSelectors": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "ai",
                "labelSelector": {"matchLabels": {"t": "1"}},
            }
        ]
    }
    assert added_selectors(old, same) == []
    wider = {"resourceSelectors": EVERY_DEPLOYMENT}
    assert added_selectors(old, wider) == ["Deployment (apps/v1) any labels"]
    other_kind = {
        "resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "ai", "name": "db"}
        ]
    }
    assert added_selectors(old, other_kind) == ["StatefulSet (apps/v1) namespace ai name db"]
