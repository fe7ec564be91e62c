"""Trigger choice (auto), placement normalisation, rebalancer names and policy markers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tidal.domain.waves import WorkloadKey
from tidal.engine import policy_change, triggers
from tidal.engine.resolve import PolicyTarget, Workload

STATIC = {
    "replicaScheduling": {
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [{"targetCluster": {"clusterNames": ["b"]}, "weight": 1}]
        },
    }
}
DYNAMIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}


def _target(spec: dict[str, Any], swap: bool = False) -> PolicyTarget:
    change = SimpleNamespace(patch={}, swap=None)
    return PolicyTarget(
        change,  # type: ignore[arg-type]
        "ClusterPropagationPolicy",
        "p",
        None,
        {},
        spec,
        swap_from="old" if swap else None,
    )


def _workload(placement: dict[str, Any]) -> Workload:
    return Workload(
        WorkloadKey("ns", "w", "Deployment", "apps/v1"),
        {},
        {"spec": {"placement": placement}},
        "ClusterPropagationPolicy/p",
    )


def test_auto_picks_touch_for_a_static_placement_change() -> None:
    """A new static placement is activated by touching."""
    assert triggers.choose("auto", [_target({"placement": STATIC})], [_workload({})]) == "touch"


def test_auto_picks_both_for_a_dynamic_placement_change() -> None:
    """A changed dynamic placement needs touch then rebalance."""
    assert triggers.choose("auto", [_target({"placement": DYNAMIC})], [_workload({})]) == "both"


def test_auto_picks_rebalance_when_placement_stays() -> None:
    """Identical placements (after normalisation) only need a rebalance."""
    same = dict(DYNAMIC)
    binding_side = {"replicaScheduling": {**DYNAMIC["replicaScheduling"]}, "spreadConstraints": []}
    assert (
        triggers.choose(
            "auto", [_target({"placement": same}, swap=True)], [_workload(binding_side)]
        )
        == "rebalance"
    )


def test_swap_to_a_lazy_policy_needs_the_touch_too() -> None:
    """A Lazy swap target claims templates only at their next edit: both."""
    target = _target({"placement": DYNAMIC, "activationPreference": "Lazy"}, swap=True)
    assert triggers.choose("auto", [target], [_workload(DYNAMIC)]) == "both"
    assert triggers.choose("rebalance", [target], [_workload(DYNAMIC)]) == "both"


def test_rebalancer_names_are_dns_and_distinct() -> None:
    """Names are DNS-1123 and differ per wave, attempt and rollback."""
    names = {
        triggers.rebalancer_name("Team_1", "20260101-000000-ab", w, a, r)
        for w in (1, 2)
        for a in range(2)
        for r in (False, True)
    }
    assert len(names) == 8
    assert all(n == n.lower() and "_" not in n for n in names)
    assert {triggers.is_rollback_rebalancer(n) for n in names} == {True, False}
    assert triggers.is_rollback_rebalancer(triggers.rebalancer_name("s-w9", "r", 1, 2, True))
    assert not triggers.is_rollback_rebalancer(triggers.rebalancer_name("s-back", "r", 1, 2))


# names an earlier release (wave counted from 0 by the caller) journalled for wave 2 of a run
JOURNALLED_BEFORE = {
    (2, 0, False): "tidal-team-r-night-w2",
    (2, 1, False): "tidal-team-r-night-w2-r1",
    (2, 0, True): "tidal-team-r-night-w2-back",
    (2, 2, True): "tidal-team-r-night-w2-back-r2",
}


@pytest.mark.parametrize(("args", "name"), sorted(JOURNALLED_BEFORE.items()))
def test_rebalancer_names_count_waves_from_1_and_match_those_in_flight(
    args: tuple[int, int, bool], name: str
) -> None:
    """Wave 2 (1-based, as the journal) names what an in-flight journal already holds for it,
    and whether it is a rollback's still reads off the name."""
    wave, attempt, rollback = args
    assert triggers.rebalancer_name("team-r", "night", wave, attempt, rollback) == name
    assert triggers.is_rollback_rebalancer(name) is rollback


def test_a_0_based_wave_is_refused_in_one_line() -> None:
    """Wave 0 does not exist: the error says waves count from 1."""
    with pytest.raises(ValueError, match="waves count from 1"):
        triggers.rebalancer_name("team-r", "night", 0)


def test_is_done_needs_window_completion_and_spec() -> None:
    """A policy is done for a window when marked completed by the same run and specs match."""
    target = _target({"placement": STATIC})
    obj: dict[str, Any] = {
        "metadata": {
            "annotations": {
                "tidal.io/window": "night",
                "tidal.io/run": "r1",
                policy_change.COMPLETED_RUN: "r1",
            }
        },
        "spec": {"placement": STATIC, "activationPreference": "Lazy"},
    }
    assert policy_change.is_done(obj, target, "night")
    assert not policy_change.is_done(obj, target, "day")
    obj["metadata"]["annotations"][policy_change.COMPLETED_RUN] = "r0"
    assert not policy_change.is_done(obj, target, "night")
