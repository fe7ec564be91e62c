"""Planning warnings that need no control plane."""

from __future__ import annotations

from typing import Any

from tidal.domain.placement import Placement
from tidal.engine.planning import _swap_warnings
from tidal.engine.resolve import PolicyTarget


def _placement(a: int, b: int) -> dict[str, Any]:
    return {
        "replicaScheduling": {
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": a},
                    {"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": b},
                ]
            },
        }
    }


def _swap(before: dict[str, Any], after: dict[str, Any]) -> PolicyTarget:
    return PolicyTarget(
        change=None,  # type: ignore[arg-type]
        kind="ClusterPropagationPolicy",
        name="night",
        namespace=None,
        current=None,
        target_spec={"placement": after},
        swap_from="day",
        from_obj={"spec": {"placement": before}},
    )


def test_a_swap_that_changes_the_placement_is_warned_about() -> None:
    """Swapping to a policy with other weights warns that waves cannot pace it."""
    target = _swap(_placement(80, 20), _placement(1, 99))
    warnings = _swap_warnings([target], {target.key: Placement(target.target_placement)})
    assert len(warnings) == 1 and "patch" in warnings[0]


def test_a_swap_between_identical_placements_is_not() -> None:
    """The DynamicWeight day/night pattern (same placement, rebalanced) gets no warning."""
    target = _swap(_placement(80, 20), _placement(80, 20))
    placements = {target.key: Placement(target.target_placement)}
    assert _swap_warnings([target], placements) == []
