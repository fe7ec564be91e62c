"""The team estimator's answer from quotas, node pools and window caps."""

from __future__ import annotations

from datetime import time

import pytest

from tidal.domain.team_capacity import (
    CANNOT_TELL,
    CapacityWindow,
    Estimate,
    Limit,
    NodeTerm,
    NodeView,
    QuotaView,
    ReplicaCap,
    ReplicaClaim,
    Taint,
    TeamFacts,
    Toleration,
    combined,
    team_estimate,
)

GPU = "nvidia.com/gpu"
ONE_GPU = ReplicaClaim({"cpu": 2.0, "memory": 8 * 2.0**30, GPU: 1.0})


def node(
    name: str,
    gpus: float,
    used_gpus: float = 0,
    cpu: float = 32,
    pods: int = 0,
    *,
    labels: dict[str, str] | None = None,
    schedulable: bool = True,
    taints: tuple[Taint, ...] = (),
) -> NodeView:
    return NodeView(
        name,
        labels or {},
        {"cpu": cpu, "memory": 256 * 2.0**30, GPU: gpus, "pods": 110},
        {GPU: used_gpus},
        pods,
        schedulable,
        taints,
    )


QUOTA_CASES = [
    # (hard, used, claim request, expected, why)
    ({"requests.nvidia.com/gpu": 8}, {"requests.nvidia.com/gpu": 3}, {GPU: 1.0}, 5, "gpu left"),
    ({"requests.nvidia.com/gpu": 8}, {"requests.nvidia.com/gpu": 3}, {GPU: 2.0}, 2, "two each"),
    ({"cpu": 10, "pods": 4}, {"cpu": 0, "pods": 1}, {"cpu": 1.0}, 3, "pods bind first"),
    ({"requests.cpu": 10}, {"requests.cpu": 9.5}, {"cpu": 0.25}, 2, "fractions"),
    ({"requests.memory": 2.0**30}, {}, {"memory": 2.0**28}, 4, "memory"),
    ({"limits.cpu": 4}, {}, {"cpu": 1.0}, CANNOT_TELL, "limits unknown: no answer"),
    ({"requests.cpu": 10}, {}, {GPU: 1.0}, CANNOT_TELL, "quota lacks the resource"),
    ({"requests.cpu": 4}, {"requests.cpu": 7}, {"cpu": 1.0}, -3, "over quota"),
    ({"pods": 0}, {"pods": 0}, {}, 0, "best effort still counts pods"),
]


@pytest.mark.parametrize(("hard", "used", "request_", "expected", "why"), QUOTA_CASES)
def test_quota_table(
    hard: dict[str, float],
    used: dict[str, float],
    request_: dict[str, float],
    expected: int,
    why: str,
) -> None:
    """A quota answers floor((hard - used) / request) over the resources it names."""
    facts = TeamFacts(quotas=[QuotaView("q", hard, used)], own=5)
    assert team_estimate(ReplicaClaim(request_), facts).replicas == expected, why


def test_every_quota_of_the_namespace_holds() -> None:
    """Two quotas: the tighter one answers."""
    facts = TeamFacts(
        quotas=[
            QuotaView("gpu", {"requests.nvidia.com/gpu": 10}, {}),
            QuotaView("pods", {"pods": 3}, {"pods": 0}),
        ]
    )
    assert team_estimate(ONE_GPU, facts) == Estimate(3, Limit.QUOTA)


def test_pool_packs_per_node_not_summed() -> None:
    """Three nodes with 1 free GPU each hold no 2-GPU replica, though 3 GPUs are free in sum."""
    pool = [node("a", 8, 7), node("b", 8, 7), node("c", 8, 7)]
    two = ReplicaClaim({GPU: 2.0})
    assert team_estimate(two, TeamFacts(pool=pool)) == Estimate(0, Limit.POOL)
    assert team_estimate(ReplicaClaim({GPU: 1.0}), TeamFacts(pool=pool)).replicas == 3


POOL_FILTER_CASES = [
    (node("a", 8, schedulable=False), ONE_GPU, 0, "cordoned or NotReady"),
    (node("a", 8, taints=(Taint("gpu", "yes", "NoSchedule"),)), ONE_GPU, 0, "taint"),
    (
        node("a", 8, taints=(Taint("gpu", "yes", "NoSchedule"),)),
        ReplicaClaim({GPU: 1.0}, tolerations=(Toleration("gpu", "Equal", "yes"),)),
        8,
        "tolerated",
    ),
    (node("a", 8, taints=(Taint("gpu", "", "PreferNoSchedule"),)), ONE_GPU, 8, "soft taint"),
    (node("a", 8, labels={"zone": "x"}), ReplicaClaim({GPU: 1.0}, {"zone": "y"}), 0, "selector"),
    (
        node("a", 8, labels={"zone": "x"}),
        ReplicaClaim({GPU: 1.0}, affinity=(NodeTerm((("zone", "In", ("x", "z")),)),)),
        8,
        "affinity",
    ),
    (
        node("a", 8, labels={"zone": "x"}),
        ReplicaClaim({GPU: 1.0}, affinity=(NodeTerm((("zone", "NotIn", ("x",)),)),)),
        0,
        "not in",
    ),
    (node("a", 8, cpu=5), ONE_GPU, 2, "cpu binds before gpu"),
    (node("a", 8, pods=108), ONE_GPU, 2, "pod slots"),
]


@pytest.mark.parametrize(("the_node", "claim", "expected", "why"), POOL_FILTER_CASES)
def test_pool_node_filters(
    the_node: NodeView, claim: ReplicaClaim, expected: int, why: str
) -> None:
    """A pool node counts only when the replica may land there, for what fits on it."""
    assert team_estimate(claim, TeamFacts(pool=[the_node])).replicas == expected, why


def test_cap_is_cap_minus_held_and_floors_at_minus_own() -> None:
    """A window cap of 0 with 6 held (4 of them the binding's own) answers -4: a Fresh
    reschedule adds the own 4 back, leaving 0 there."""
    assert team_estimate(ONE_GPU, TeamFacts(cap=0, held=6, own=4)) == Estimate(-4, Limit.CAP)
    assert team_estimate(ONE_GPU, TeamFacts(cap=40, held=6)) == Estimate(34, Limit.CAP)


def test_minus_one_is_never_answered_as_a_number() -> None:
    """A true -1 would mean "cannot tell" to the scheduler, so it is answered -2."""
    assert team_estimate(ONE_GPU, TeamFacts(cap=2, held=3, own=3)).replicas == -2


def test_no_source_cannot_tell() -> None:
    """A team without quota, pool or cap on the cluster answers -1."""
    assert team_estimate(ONE_GPU, TeamFacts()) == Estimate(CANNOT_TELL, Limit.NONE)
    assert team_estimate(ONE_GPU, TeamFacts(quotas=[])).limit is Limit.NONE


def test_minimum_over_sources() -> None:
    """Quota, pool and cap together: the smallest wins and is named."""
    facts = TeamFacts(
        quotas=[QuotaView("q", {"requests.nvidia.com/gpu": 10}, {})],
        pool=[node("a", 8, 2)],
        cap=20,
        held=0,
    )
    assert team_estimate(ONE_GPU, facts) == Estimate(6, Limit.POOL)


def test_windows_move_the_cap() -> None:
    """A night window spanning midnight caps to 0; by day the default applies."""
    cap = ReplicaCap(40, (CapacityWindow(time(22), time(6), 0),))
    assert [cap.at(time(h)) for h in (21, 22, 3, 6)] == [40, 0, 0, 40]
    assert ReplicaCap().at(time(12)) is None


def test_combined_with_general() -> None:
    """The scheduler keeps the minimum of the answers that tell."""
    assert combined(10, CANNOT_TELL) == 10
    assert combined(10, 4) == 4
    assert combined(3, 4) == 3
