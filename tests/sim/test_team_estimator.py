"""The team-level estimator: minimum over estimators, time of day, admin override."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.sim.karmada_harness import TWO, Harness, dynamic_weights
from tidal_sim.controllers.team_estimator import TeamEstimatorError, parse_team_estimator
from tidal_sim.topology import TopologyError, load_topology

TEAM = {"matchLabels": {"team": "t1"}}
NIGHT = datetime(2026, 3, 2, 23, 0, tzinfo=UTC).timestamp()
DAY = datetime(2026, 3, 2, 12, 0, tzinfo=UTC).timestamp()


def _team_harness(start: float) -> Harness:
    h = Harness()
    h.advance(start - h.clock.now())
    h.mgr.team_estimator = parse_team_estimator(
        {
            "timeZone": "UTC",
            "teams": [
                {
                    "name": "t1@a",
                    "cluster": "a",
                    "teamSelector": TEAM,
                    "replicas": 4,
                    "schedule": [{"from": "22:00", "to": "06:00", "replicas": 0}],
                }
            ],
        }
    )
    h.cluster("a", cpu="100")
    h.cluster("b", cpu="6")
    h.cpp("dyn", {**TWO, "replicaScheduling": dynamic_weights()})
    return h


def test_scheduler_takes_the_minimum_over_estimators_by_day() -> None:
    """pkg/scheduler/core/util.go calAvailableReplicas: min per cluster over the estimators.
    a: general 1000, team 4 -> 4; b: general 6 -> weights 4:6 over 5 -> 2:3."""
    h = _team_harness(DAY)
    h.deployment("web", 5, cpu="1", labels={"team": "t1"})
    h.settle()
    assert h.clusters_of("web") == {"a": 2, "b": 3}


def test_night_capacity_consolidates_a_fresh_reschedule_elsewhere() -> None:
    """At night the team has 0 in a: a Fresh reschedule (WorkloadRebalancer) puts every
    replica in b; an unmatched workload is not limited (the estimator answers -1)."""
    h = _team_harness(DAY)
    h.deployment("web", 5, cpu="1", labels={"team": "t1"})
    h.deployment("free", 2, cpu="1", labels={"team": "other"})
    h.settle()
    assert h.clusters_of("web").get("a")
    h.advance(NIGHT - h.clock.now())
    h.trigger_reschedule("web", h.clock.rfc3339())
    h.settle()
    assert h.clusters_of("web") == {"b": 5}
    assert sum(h.clusters_of("free").values()) == 2


def test_team_usage_counts_the_teams_other_workloads() -> None:
    """The team's capacity in a cluster is shared: a second workload sees what is left."""
    h = _team_harness(DAY)
    h.deployment("one", 4, cpu="1", labels={"team": "t1"})
    h.settle()
    one_in_a = h.clusters_of("one").get("a", 0)
    h.deployment("two", 2, cpu="1", labels={"team": "t1"})
    h.settle()
    assert h.clusters_of("two").get("a", 0) <= 4 - one_in_a


def test_admin_override_wins_over_the_schedule() -> None:
    """set_override pins a capacity; None returns to the time-of-day schedule."""
    estimator = parse_team_estimator(
        {"teams": [{"name": "x", "cluster": "a", "teamSelector": TEAM, "replicas": 3}]}
    )
    estimator.set_override("x", 0)
    assert estimator.state(DAY)[0] == {
        "name": "x",
        "cluster": "a",
        "replicas": 0,
        "overridden": True,
    }
    estimator.set_override("x", None)
    assert estimator.state(DAY)[0]["replicas"] == 3
    with pytest.raises(KeyError, match="no team capacity named 'y'"):
        estimator.set_override("y", 1)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"timeZone": "Mars/Base"}, "unknown time zone"),
        ({"teams": [{"cluster": "a", "replicas": -1}]}, r"teams\[0\].replicas"),
        (
            {
                "teams": [
                    {
                        "cluster": "a",
                        "replicas": 1,
                        "schedule": [{"from": "25", "to": "06:00", "replicas": 0}],
                    }
                ]
            },
            "HH:MM",
        ),
        ({"nope": 1}, "unknown field"),
    ],
)
def test_bad_settings_name_the_field(spec: dict[str, object], message: str) -> None:
    """A bad teamEstimator setting fails the topology load with the field named."""
    with pytest.raises(TeamEstimatorError, match=message):
        parse_team_estimator(spec)
    doc = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"teamEstimator": spec},
    }
    with pytest.raises(TopologyError, match=r"teamEstimator"):
        load_topology([doc])


def test_an_answer_of_minus_one_is_not_mistaken_for_cannot_tell() -> None:
    """pkg/scheduler/core/util.go mergeReplicaResults ignores -1 (UnauthenticReplica): a team
    over capacity by one replica that it holds itself is answered -2, not -1."""
    estimator = parse_team_estimator(
        {"teams": [{"name": "x", "cluster": "a", "teamSelector": TEAM, "replicas": 0}]}
    )
    labels = {"team": "t1"}

    def one(cluster: str) -> list[tuple[dict[str, str], int]]:
        return [(labels, 1)]

    def three(cluster: str) -> list[tuple[dict[str, str], int]]:
        return [(labels, 3)]

    assert estimator.estimate("a", labels, DAY, one, own=1) == -2
    assert estimator.estimate("a", labels, DAY, three, own=3) == -3  # Fresh adds 3 back: 0
    assert estimator.estimate("b", labels, DAY, one, own=1) is None
