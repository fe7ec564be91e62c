"""The answer table of tidal.estimator.answer, from snapshots (no servers)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from tidal.domain.team_capacity import CapacityWindow, Limit, QuotaView, ReplicaCap, ReplicaClaim
from tidal.domain.teams import ClusterRule, TeamRule, Teams
from tidal.estimator.answer import Reason, answer
from tidal.estimator.cache import MemberState, Snapshot
from tidal.estimator.wire import Workload
from tidal.karmada.members import MemberView

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
NIGHT = datetime(2026, 12, 4, 23, 0, tzinfo=UTC)
BOUND = timedelta(seconds=60)
GPU = ReplicaClaim({"nvidia.com/gpu": 1.0})
CAP = ReplicaCap(40, (CapacityWindow(time(22), time(6), 0),))
TEAMS = Teams(
    (
        TeamRule(
            "t",
            frozenset({"t-a", "t-b"}),
            {
                "cluster-a": ClusterRule(cap=CAP),
                "cluster-b": ClusterRule(quota=True),
                "cluster-c": ClusterRule(),
            },
        ),
    )
)
QUOTA = MemberView(
    quotas={
        "t-a": (QuotaView("q", {"requests.nvidia.com/gpu": 10}, {"requests.nvidia.com/gpu": 4}),)
    }
)
SNAP = Snapshot(
    NOW,
    frozenset({"cluster-a", "cluster-b", "cluster-c", "cluster-d"}),
    {"cluster-b": MemberState(QUOTA, NOW)},
    held={("cluster-a", "t"): 15, ("cluster-a", "other-team"): 99},
    bindings={("t-a", "scorer-deployment"): {"cluster-a": 10}},
)
SCORER = Workload("Deployment", "t-a", "scorer")


def test_day_cap_minus_what_the_team_holds() -> None:
    """By day: 40 - the 15 the team holds there; other teams' replicas do not count."""
    got = answer(SNAP, TEAMS, "cluster-a", GPU, "t-a", SCORER, NOW, BOUND)
    assert (got.replicas, got.reason, got.limit) == (25, Reason.ANSWERED, Limit.CAP)


def test_night_cap_empties_the_cluster_down_to_the_own_replicas() -> None:
    """At night the cap is 0: -15 held, floored at minus the binding's own 10."""
    night = Snapshot(NIGHT, SNAP.clusters, SNAP.members, SNAP.held, SNAP.bindings)
    assert answer(night, TEAMS, "cluster-a", GPU, "t-a", SCORER, NIGHT, BOUND).replicas == -10


def test_quota_in_the_request_namespace() -> None:
    """cluster-b's answer is the quota of the asking namespace: 10 - 4."""
    assert answer(SNAP, TEAMS, "cluster-b", GPU, "t-a", None, NOW, BOUND).replicas == 6


@pytest.mark.parametrize(
    ("snap", "cluster", "claim", "namespace", "now", "reason"),
    [
        (Snapshot(), "cluster-a", GPU, "t-a", NOW, Reason.NOT_READY),
        (SNAP, "cluster-x", GPU, "t-a", NOW, Reason.UNKNOWN_CLUSTER),
        (SNAP, "cluster-a", GPU, "", NOW, Reason.NO_NAMESPACE),
        (SNAP, "cluster-a", GPU, "nobody", NOW, Reason.NO_TEAM),
        (SNAP, "cluster-d", GPU, "t-a", NOW, Reason.NO_RULE),
        (SNAP, "cluster-a", None, "t-a", NOW, Reason.BAD_REQUEST),
        (SNAP, "cluster-c", GPU, "t-a", NOW, Reason.NO_LIMIT),
        (SNAP, "cluster-b", ReplicaClaim({"cpu": 1.0}), "t-a", NOW, Reason.NO_LIMIT),
        (SNAP, "cluster-a", GPU, "t-a", NOW + timedelta(minutes=5), Reason.STALE),
        (SNAP, "cluster-b", GPU, "t-a", NOW + timedelta(minutes=5), Reason.STALE),
        (
            Snapshot(NOW, frozenset({"cluster-b"})),
            "cluster-b",
            GPU,
            "t-a",
            NOW,
            Reason.MEMBER_UNREADABLE,
        ),
    ],
)
def test_cannot_tell_table(
    snap: Snapshot,
    cluster: str,
    claim: ReplicaClaim | None,
    namespace: str,
    now: datetime,
    reason: Reason,
) -> None:
    """Each case of the documented table answers -1 with its reason."""
    got = answer(snap, TEAMS, cluster, claim, namespace, None, now, BOUND)
    assert (got.replicas, got.reason) == (-1, reason)


def test_teams_told_apart_by_template_labels() -> None:
    """Two teams in one namespace, told apart by their templates' labels: each answer is its
    own team's cap minus its own team's holdings; a workload of neither team cannot tell."""
    teams = Teams(
        (
            TeamRule(
                "t1",
                frozenset({"ai"}),
                {"cluster-a": ClusterRule(cap=ReplicaCap(10))},
                {"matchLabels": {"team": "1"}},
            ),
            TeamRule(
                "t2",
                frozenset({"ai"}),
                {"cluster-a": ClusterRule(cap=ReplicaCap(20))},
                {"matchLabels": {"team": "2"}},
            ),
        )
    )
    snap = Snapshot(
        NOW,
        frozenset({"cluster-a"}),
        {},
        held={("cluster-a", "t1"): 4, ("cluster-a", "t2"): 7},
        labels={
            ("ai", "Deployment", "one"): {"team": "1"},
            ("ai", "Deployment", "two"): {"team": "2"},
            ("ai", "Deployment", "three"): {"team": "3"},
        },
    )

    def ask(name: str) -> int:
        return answer(
            snap, teams, "cluster-a", GPU, "ai", Workload("Deployment", "ai", name), NOW, BOUND
        ).replicas

    assert (ask("one"), ask("two"), ask("three")) == (6, 13, -1)
