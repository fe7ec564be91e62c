"""Gate evaluation over binding objects: triggered, scheduled, converged, floors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from tidal.domain.floors import FloorRule
from tidal.domain.placement import Placement
from tidal.domain.waves import WorkloadKey
from tidal.engine import gates
from tidal.engine.resolve import Workload

PLACEMENT = {
    "clusterAffinity": {"clusterNames": ["b"]},
    "replicaScheduling": {"replicaSchedulingType": "Divided"},
}


def _workload(name: str = "w") -> Workload:
    return Workload(
        WorkloadKey("ns", name, "Deployment", "apps/v1"),
        {"metadata": {"uid": "u"}, "spec": {"replicas": 4}},
        None,
        "p",
    )


def _binding(
    *,
    placement: Any = PLACEMENT,
    generation: int = 2,
    observed: int = 2,
    clusters: dict[str, int] | None = None,
    ready: dict[str, int] | None = None,
    triggered_at: str | None = None,
    last: str | None = None,
    scheduled: tuple[str, str] = ("True", "Success"),
    claimed: bool = True,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "placement": placement,
        "replicas": 4,
        "clusters": [{"name": c, "replicas": n} for c, n in (clusters or {"b": 4}).items()],
    }
    if triggered_at:
        spec["rescheduleTriggeredAt"] = triggered_at
    labels = {"clusterpropagationpolicy.karmada.io/permanent-id": "x"} if claimed else {}
    return {
        "metadata": {
            "name": "w-deployment",
            "namespace": "ns",
            "generation": generation,
            "labels": labels,
        },
        "spec": spec,
        "status": {
            "schedulerObservedGeneration": observed,
            "lastScheduledTime": last,
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": scheduled[0],
                    "reason": scheduled[1],
                    "message": "msg",
                }
            ],
            "aggregatedStatus": [
                {"clusterName": c, "status": {"readyReplicas": n}} for c, n in (ready or {}).items()
            ],
        },
    }


def _eval(
    binding: dict[str, Any], target: gates.WaveTarget, floors: Sequence[FloorRule] = ()
) -> gates.GateReport:
    w = target.workload
    return gates.evaluate([target], [w], {w.binding_key: binding}, floors, {w.name: {"b": 1}})


def test_touch_wave_passes_every_gate_when_ready_matches() -> None:
    """New placement, observed generation and ready == assigned pass all four gates."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    report = _eval(_binding(ready={"b": 4}), target)
    assert report.passed == {"triggered", "scheduled", "converged", "floors"}


def test_old_placement_or_unclaimed_binding_is_not_triggered() -> None:
    """A binding still on the old placement, or not claimed by a policy, is not triggered."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    assert "triggered" not in _eval(_binding(placement={"x": 1}), target).passed
    assert "triggered" not in _eval(_binding(claimed=False), target).passed


def test_rebalance_needs_schedule_after_trigger() -> None:
    """For a rebalance, lastScheduledTime must be at or after rescheduleTriggeredAt."""
    created = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    target = gates.WaveTarget(_workload(), trigger_time=created)
    early = _binding(
        triggered_at="2026-01-01T00:00:05Z", last="2026-01-01T00:00:04Z", ready={"b": 4}
    )
    assert _eval(early, target).passed == {"triggered", "floors"}
    done = _binding(
        triggered_at="2026-01-01T00:00:05Z", last="2026-01-01T00:00:06Z", ready={"b": 4}
    )
    assert "converged" in _eval(done, target).passed


def test_rebalance_in_the_second_of_the_last_scheduling_is_not_scheduled() -> None:
    """The scheduling a trigger found in its own second never counts; a later one does."""
    created = datetime(2026, 1, 1, 0, 0, 5, 300000, tzinfo=UTC)
    found = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    target = gates.WaveTarget(_workload(), trigger_time=created, scheduled_before=found)
    dropped = _binding(
        triggered_at="2026-01-01T00:00:05Z", last="2026-01-01T00:00:05Z", ready={"b": 4}
    )
    assert _eval(dropped, target).passed == {"triggered", "floors"}
    later = _binding(
        triggered_at="2026-01-01T00:00:06Z", last="2026-01-01T00:00:06Z", ready={"b": 4}
    )
    assert "converged" in _eval(later, target).passed


def test_rebalance_scheduled_in_its_own_second_counts_after_an_older_scheduling() -> None:
    """A scheduling in the trigger's second counts when the one the trigger found is older."""
    created = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    target = gates.WaveTarget(
        _workload(),
        trigger_time=created,
        scheduled_before=datetime(2026, 1, 1, 0, 0, 4, tzinfo=UTC),
    )
    done = _binding(
        triggered_at="2026-01-01T00:00:05Z", last="2026-01-01T00:00:05Z", ready={"b": 4}
    )
    assert "converged" in _eval(done, target).passed


def test_unschedulable_fails_with_the_schedulers_message() -> None:
    """Scheduled=False with NoClusterFit fails the wave as unschedulable."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    report = _eval(_binding(scheduled=("False", "NoClusterFit")), target)
    assert report.failure == "unschedulable" and "NoClusterFit" in report.reason


def test_failed_rebalance_with_generation_behind_fails_at_once_naming_every_workload() -> None:
    """Upstream pkg/scheduler/scheduler.go patchBindingStatusCondition sets
    schedulerObservedGeneration only when Scheduled=True: a failed Fresh reschedule leaves it
    behind, and the wave still fails as unschedulable with each workload and message named."""
    created = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    one, two = _workload("w1"), _workload("w2")
    failed = _binding(
        generation=3,
        observed=2,
        triggered_at="2026-01-01T00:00:05Z",
        last="2026-01-01T00:00:01Z",
        scheduled=("False", "Unschedulable"),
    )
    report = gates.evaluate(
        [gates.WaveTarget(one, trigger_time=created), gates.WaveTarget(two, trigger_time=created)],
        [one, two],
        {one.binding_key: failed, two.binding_key: failed},
        [],
        {},
    )
    assert report.failure == "unschedulable"
    assert report.reason == f"{one.name}: Unschedulable: msg; {two.name}: Unschedulable: msg"


def test_failed_touch_with_generation_behind_fails_at_once() -> None:
    """A touched binding whose new placement cannot be scheduled (observed generation behind)
    fails the wave as unschedulable instead of waiting for waveTimeout."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    report = _eval(_binding(generation=5, observed=4, scheduled=("False", "NoClusterFit")), target)
    assert report.failure == "unschedulable" and "NoClusterFit: msg" in report.reason


def test_untriggered_binding_with_an_old_failure_does_not_fail_the_wave() -> None:
    """A rebalance not yet written to the binding does not fail on an older condition."""
    created = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    old = _binding(generation=3, observed=2, scheduled=("False", "Unschedulable"))
    assert _eval(old, gates.WaveTarget(_workload(), trigger_time=created)).failure is None


def test_floor_breach_fails_at_once() -> None:
    """Ready below a floor in a named cluster fails the wave as floor_breach."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    report = _eval(_binding(ready={"b": 0}), target, [FloorRule(("b",), 1)])
    assert report.failure == "floor_breach"
    assert report.violations[0].cluster == "b"


def test_a_status_being_collected_is_not_a_breach_but_a_member_at_zero_is() -> None:
    """Scheduled with no member status yet (rebuilt after a reschedule) is unknown, not 0
    ready: no breach; a member that reports 0 ready still breaches; a breach already seen
    stands while the status is rebuilt."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    floors = [FloorRule(("b",), 1)]
    assert _eval(_binding(ready={}), target, floors).failure != "floor_breach"
    assert _eval(_binding(ready={"b": 0}), target, floors).failure == "floor_breach"
    w = target.workload
    tracker = gates.GateTracker([target], [w], floors, {w.name: {"b": 1}})
    tracker.update(w.binding_key, _binding(ready={"b": 0}))
    tracker.update(w.binding_key, _binding(ready={}))
    assert tracker.report().failure == "floor_breach"


def test_a_recovering_binding_counts_again_once_it_met_its_floors() -> None:
    """A binding below its floors as the rollback began does not fail a gate; once it met them
    it leaves the run's shared set, and a later breach fails every gate built after, too."""
    target = gates.WaveTarget(_workload(), placement=Placement(PLACEMENT))
    floors = [FloorRule(("b",), 1)]
    w = target.workload
    recovering = {w.binding_key}

    def tracker() -> gates.GateTracker:
        return gates.GateTracker([target], [w], floors, {w.name: {"b": 1}}, recovering=recovering)

    first = tracker()
    first.update(w.binding_key, _binding(ready={"b": 0}))
    assert first.report().failure is None
    first.update(w.binding_key, _binding(ready={"b": 4}))
    assert recovering == set()
    first.update(w.binding_key, _binding(ready={"b": 0}))
    assert first.report().failure == "floor_breach"
    later = tracker()
    later.update(w.binding_key, _binding(ready={"b": 0}))
    assert later.report().failure == "floor_breach"


def test_missing_binding_is_reported() -> None:
    """A binding that vanished is listed as missing, not converged."""
    w = _workload()
    report = gates.evaluate([gates.WaveTarget(w)], [w], {}, [], {})
    assert report.missing == [w.name]


def test_ready_field_path_is_honoured() -> None:
    """readyReplicasField status.availableReplicas reads that field of the member status."""
    binding = {
        "status": {
            "aggregatedStatus": [
                {"clusterName": "a", "status": {"availableReplicas": 3, "readyReplicas": 1}}
            ]
        }
    }
    assert gates.ready_by_cluster(binding, "status.availableReplicas") == {"a": 3}
    assert gates.ready_by_cluster(binding) == {"a": 1}


@pytest.mark.parametrize(
    ("assigned", "raised", "members", "old"),
    [
        # night move of 4: b raised to 4 by the override, a's Work not yet removed
        ({"cluster-b": 4}, {"cluster-b": 4}, {"cluster-a": 3, "cluster-b": 4}, ["cluster-a"]),
        # a's Work removed: the new split is what the members run
        ({"cluster-b": 4}, {"cluster-b": 4}, {"cluster-b": 4}, []),
        # day move: a raised to 4, b still at 5 of its new 1 (not re-rendered yet)
        (
            {"cluster-a": 4, "cluster-b": 1},
            {"cluster-a": 4},
            {"cluster-a": 4, "cluster-b": 5},
            ["cluster-b"],
        ),
        ({"cluster-a": 4, "cluster-b": 1}, {"cluster-a": 4}, {"cluster-a": 4, "cluster-b": 1}, []),
        # dynamic weights: the override keeps b above its assignment, which is not "old"
        ({"cluster-b": 3}, {"cluster-b": 5}, {"cluster-b": 5}, []),
        # a kind that reports no replica count: only the cluster set can tell
        ({"cluster-b": 2}, {"cluster-b": 2}, {"cluster-b": None}, []),
    ],
)
def test_old_split_members_are_those_not_yet_rendered_from_the_new_split(
    assigned: dict[str, int], raised: dict[str, int], members: dict[str, int | None], old: list[str]
) -> None:
    """Before a surge's overrides go, no member may still run the old split: a cluster no
    longer assigned that still reports, or an unraised one above its assignment."""
    assert gates.old_split_members(assigned, raised, members) == old
