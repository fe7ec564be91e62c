"""Every rule of the soak's checker on a small hand-built event log (no emulator, no daemon):
for each, one log with a real breach it must flag and one legitimate log it must accept."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.soak.checker import LEASE_SECONDS, Checker
from benchmarks.soak.promises import Promise
from benchmarks.soak.scenario import NS, STATE_NS, TEAMS
from tidal_sim.apiserver.accounting import RequestRecord
from tidal_sim.clock import ManualClock
from tidal_sim.kinds import KindRegistry
from tidal_sim.store import Store, WatchEvent

KINDS = KindRegistry()
TEAM = TEAMS[1]  # beta: rolls back
W = TEAM.workload_names()
T0 = 1_800_000_000.0  # a minute boundary (even: a night start)


def _rtype(api: str, kind: str) -> Any:
    rtype = KINDS.by_kind(api, kind)
    assert rtype is not None
    return rtype


CM = _rtype("v1", "ConfigMap")
LEASE = _rtype("coordination.k8s.io/v1", "Lease")
RB = _rtype("work.karmada.io/v1alpha2", "ResourceBinding")
DEPLOY = _rtype("apps/v1", "Deployment")
CLUSTER = _rtype("cluster.karmada.io/v1alpha1", "Cluster")


class Log:
    """A hand-built event log, fed to the checker in resourceVersion order at chosen times."""

    def __init__(self) -> None:
        self.checker = Checker(Store(KINDS, ManualClock()))
        self.rv = 0
        self.now = T0
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    def put(self, rtype: Any, name: str, obj: dict[str, Any], at: float | None = None) -> int:
        self.rv += 1
        self.now = at if at is not None else self.now + 0.1
        obj["metadata"] = {"name": name, **obj.get("metadata", {})}
        old = self.objects.get((rtype.plural, name))
        self.objects[(rtype.plural, name)] = obj
        self.checker.observe(
            WatchEvent("MODIFIED" if old else "ADDED", rtype, obj, old, self.rv), now=self.now
        )
        return self.rv

    def run(
        self,
        phase: str,
        waves: list[dict[str, Any]],
        result: str | None = None,
        run_id: str = "r1",
        applied: bool = True,
        at: float | None = None,
    ) -> None:
        state = {
            "schedule": TEAM.schedule,
            "window": "night",
            "runId": run_id,
            "phase": phase,
            "result": result,
            "policies": [{"applied": applied}],
            "waves": waves,
        }
        self.put(
            CM,
            f"tidal-run-{TEAM.schedule}",
            {"metadata": {"namespace": STATE_NS}, "data": {"run": json.dumps(state)}},
            at,
        )

    def handled(self, record: dict[str, Any], schedule: str = TEAM.schedule) -> None:
        self.put(
            CM,
            f"tidal-sched-{schedule}",
            {"metadata": {"namespace": STATE_NS}, "data": {"handled": json.dumps(record)}},
        )

    def lease(self, holder: str | None, at: float | None = None) -> int:
        return self.put(
            LEASE,
            "tidal-leader",
            {"metadata": {"namespace": STATE_NS}, "spec": {"holderIdentity": holder}},
            at,
        )

    def binding(
        self,
        index: int,
        clusters: dict[str, int],
        *,
        ready: bool = True,
        replicas: int = 5,
        at: float | None = None,
    ) -> None:
        status = [
            {"clusterName": c, "status": {"readyReplicas": n if ready else 0}}
            for c, n in clusters.items()
        ]
        self.put(
            RB,
            f"{W[index]}-deployment",
            {
                "metadata": {"namespace": NS},
                "spec": {
                    "resource": {"name": W[index]},
                    "replicas": replicas,
                    "clusters": [{"name": c, "replicas": n} for c, n in clusters.items()],
                },
                "status": {"aggregatedStatus": status},
            },
            at,
        )

    def touch(self, index: int, stamp: str, run_id: str = "r1") -> None:
        self.put(
            DEPLOY,
            W[index],
            {
                "metadata": {
                    "namespace": NS,
                    "annotations": {"tidal.io/switched-at": stamp, "tidal.io/switch-run": run_id},
                }
            },
        )

    def cluster(self, name: str, ready: bool) -> None:
        self.put(
            CLUSTER,
            name,
            {"status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}},
        )

    @property
    def violations(self) -> list[str]:
        return self.checker.violations


def wave(
    index: int,
    *,
    started: bool = True,
    result: str | None = None,
    triggered: bool = False,
    back: bool = False,
    reason: str = "",
) -> dict[str, Any]:
    """Wave `index` (from 1) of workload index-1 and index+1 (beta has six)."""
    names = [W[index - 1], W[index + 1]]
    return {
        "index": index,
        "workloads": [f"{NS}/Deployment/{n}" for n in names],
        "startedAt": "2026-01-01T00:00:00Z" if started else None,
        "result": result,
        "reason": reason,
        "triggered": names if triggered else [],
        "rebalancers": [],
        "rollbackTriggered": names if back else [],
    }


DAY = {"cluster-a": 4, "cluster-b": 1}
NIGHT = {"cluster-b": 5}


# -- promise 1: each window start ran exactly once, or was recorded not run with a reason ---


def _stamps(minute: float) -> tuple[str, str]:
    from time import gmtime, strftime

    return (
        strftime("%Y%m%d-%H%M%S", gmtime(minute)),
        strftime("%Y-%m-%dT%H:%M:%S+00:00", gmtime(minute)),
    )


def _other_team_refused(log: Log, minute: float) -> None:
    _id, iso = _stamps(minute)
    log.handled(
        {"window": "night", "at": iso, "outcome": "refused", "reason": "unsafe_plan"},
        schedule=TEAMS[0].schedule,
    )


def test_a_start_that_ran_nowhere_is_flagged_and_a_run_with_nothing_to_move_is_accepted() -> None:
    """A start with no run and no record is a violation; a no-op run (handled succeeded with
    its run id, no journal) is the start having run once."""
    log = Log()
    stamp, iso = _stamps(T0 + 60)
    log.run(
        "done",
        [wave(1, result="succeeded", triggered=True)],
        "succeeded",
        run_id=f"x-{_stamps(T0)[0]}",
    )  # a run that did something, before the checked start
    _other_team_refused(log, T0 + 60)
    assert log.checker.check_starts(T0 + 1, T0 + 61) == len(TEAMS)
    assert log.violations == [
        f"{TEAM.schedule} day start {stamp} neither ran nor was recorded as not run"
    ]
    log = Log()
    log.run(
        "done",
        [wave(1, result="succeeded", triggered=True)],
        "succeeded",
        run_id=f"x-{_stamps(T0)[0]}",
    )
    _other_team_refused(log, T0 + 60)
    log.handled({"window": "day", "at": iso, "outcome": "started", "runId": f"r-{stamp}"})
    log.handled({"window": "day", "at": iso, "outcome": "succeeded", "runId": f"r-{stamp}"})
    log.checker.check_starts(T0 + 1, T0 + 61)
    assert log.violations == []
    assert log.checker.starts == {"ran (nothing to move)": 1, "refused": 1}


def test_a_start_run_twice_is_flagged_and_a_journalled_run_with_its_record_counts_once() -> None:
    """Two run ids for one start is a violation; the journalled run and its own handled record
    are one run."""
    stamp, iso = _stamps(T0 + 60)
    for second in (f"again-{stamp}", f"r-{stamp}"):
        log = Log()
        log.run(
            "done", [wave(1, result="succeeded", triggered=True)], "succeeded", run_id=f"r-{stamp}"
        )
        log.handled({"window": "day", "at": iso, "outcome": "succeeded", "runId": second})
        _other_team_refused(log, T0 + 60)
        log.checker.check_starts(T0 + 1, T0 + 61)
        if second.startswith("again"):
            assert len(log.violations) == 1 and " ran 2 times" in log.violations[0]
        else:
            assert log.violations == [] and log.checker.starts["ran"] == 1


def test_a_start_recorded_not_run_needs_a_reason() -> None:
    """A refusal without a reason is a violation; with one it is accepted."""
    for reason in ("", "unsafe_plan: a floor would break"):
        log = Log()
        log.run(
            "done",
            [wave(1, result="succeeded", triggered=True)],
            "succeeded",
            run_id=f"x-{_stamps(T0)[0]}",
        )
        _other_team_refused(log, T0 + 60)
        record = {"window": "day", "at": _stamps(T0 + 60)[1], "outcome": "refused"}
        log.handled(record | ({"reason": reason} if reason else {}))
        log.checker.check_starts(T0 + 1, T0 + 61)
        assert (log.violations == []) == bool(reason), log.violations


def test_a_soak_whose_runs_never_moved_anything_fails() -> None:
    """Only no-op runs (or none) is a violation: the soak proved nothing."""
    log = Log()
    log.checker.check_starts(T0, T0)
    assert log.violations == ["the soak made no run at all"]
    assert log.checker.by_promise == {Promise.WINDOWS: 1}


# -- promise 2: runs end, nothing twice -------------------------------------------------


def test_a_new_run_over_an_unfinished_one_is_flagged_unless_it_never_acted() -> None:
    """A run claimed and left before its first step may be restarted; one that acted may not."""
    for acted in (True, False):
        log = Log()
        log.run("waves", [wave(1, started=acted)], applied=acted)
        log.run("waves", [wave(1)], run_id="r2")
        flagged = [v for v in log.violations if "started while run r1 was unfinished" in v]
        assert bool(flagged) == acted


def test_a_run_that_did_not_end_is_flagged_unless_it_never_acted() -> None:
    """A run left mid-wave is a violation; a claim that never acted is not."""
    for acted in (True, False):
        log = Log()
        log.run("waves", [wave(1, started=acted)], applied=acted)
        log.checker.check_runs(0, 0)
        assert bool(log.violations) == acted


def test_a_second_move_is_flagged_in_a_run_that_succeeded_not_in_one_rolled_back() -> None:
    """There and back is a rollback's right; a succeeded run moves a workload once."""
    for result in ("succeeded", "rolledBack"):
        log = Log()
        log.binding(0, DAY)
        log.run("waves", [wave(1, triggered=True)])
        log.binding(0, NIGHT)
        log.run("rollback", [wave(1, result="failed", triggered=True)])
        log.binding(0, DAY)
        log.run("done", [wave(1, result="failed", triggered=True)], result)
        log.checker.check_runs(0, 0)
        moved = [v for v in log.violations if "moved more than" in v]
        assert bool(moved) == (result == "succeeded"), log.violations


def test_a_touch_repeated_after_the_journal_recorded_it_is_flagged() -> None:
    """A writer stopped between its touch and the save re-touches on resume (accepted); a
    touch the journal already records, written again, is a repeated wave (flagged)."""
    log = Log()
    log.run("waves", [wave(1)])
    log.touch(0, "t1")  # the deposed writer's touch, never journalled
    log.touch(0, "t2")  # the resume touches it again
    assert log.violations == [] and log.checker.retouches == 1
    log.run("waves", [wave(1, triggered=True)])
    log.touch(0, "t3")
    assert log.violations == [
        f"{TEAM.schedule} run r1: {W[0]} touched again after wave 1 recorded its touch (triggered)"
    ]


def test_the_rollback_touch_of_a_triggered_wave_is_not_a_repeat() -> None:
    """In the rollback phase, moving a triggered wave back is its second, expected touch."""
    log = Log()
    log.run("waves", [wave(1)])
    log.touch(0, "t1")
    log.run("rollback", [wave(1, result="failed", triggered=True)])
    log.touch(0, "t2")
    assert log.violations == []


# -- promise 4: floors and waves ---------------------------------------------------------


def test_a_wave_started_while_the_previous_failed_is_flagged() -> None:
    """Wave 2 after a failed wave 1 is a violation; after a succeeded, converged one it is not."""
    for previous in ("failed", "succeeded"):
        log = Log()
        for i in (0, 2):
            log.binding(i, DAY)
        log.run("waves", [wave(1), wave(2, started=False)])
        log.run("waves", [wave(1, result=previous, triggered=True), wave(2)])
        assert bool(log.violations) == (previous == "failed"), log.violations


def test_a_wave_started_before_the_previous_converged_is_flagged() -> None:
    """Wave 1's workloads not ready when wave 2 starts is a violation."""
    for ready in (False, True):
        log = Log()
        log.binding(0, DAY, ready=ready)
        log.binding(2, DAY)
        log.run("waves", [wave(1), wave(2, started=False)])
        log.run("waves", [wave(1, result="succeeded", triggered=True), wave(2)])
        flagged = [v for v in log.violations if "had not converged" in v]
        assert bool(flagged) == (not ready), log.violations


def test_a_move_outside_its_wave_is_flagged_and_inside_it_accepted() -> None:
    """Wave 1 in flight: its workload moving is counted for it; wave 2's moving is flagged."""
    log = Log()
    log.binding(0, DAY)
    log.binding(1, DAY)  # W[1] is wave 0's (none) and wave 2's: (W[1], W[3])
    log.run("waves", [wave(1), wave(2, started=False)])
    log.binding(0, NIGHT)
    assert log.violations == [] and dict(log.checker.runs["r1"].moves_by_wave) == {1: 1}
    log.binding(1, NIGHT)
    assert len(log.violations) == 1 and "no wave listing it was in flight" in log.violations[0]


def test_a_rollback_moving_a_triggered_wave_back_before_journalling_it_is_accepted() -> None:
    """The rollback touches first and journals rollbackTriggered after: the move in between
    belongs to the wave it undoes; a wave never triggered moving in a rollback is flagged."""
    log = Log()
    log.binding(0, DAY)
    log.binding(1, DAY)
    log.run("waves", [wave(1, triggered=True)])
    log.binding(0, NIGHT)
    log.run("rollback", [wave(1, result="failed", triggered=True), wave(2, started=False)])
    log.binding(0, DAY)
    assert log.violations == [] and log.checker.moves_in_rollback == 1
    log.binding(1, NIGHT)
    assert (
        len(log.violations) == 1
        and "no wave listing it was in flight (phase rollback)" in log.violations[0]
    )


SCALED = 1000  # the chaos's scale_past_capacity


def test_karmadas_moves_after_a_scale_and_its_revert_are_not_the_runs() -> None:
    """The soak-30 pattern: W[3] (wave 2's) is scaled while its Lazy policy holds the other
    placement, so the scheduler re-places it at the scale and again at the revert (the second
    in the rollback, under the restored policy); neither is the run's move, nor a second one."""
    log = Log()
    log.binding(3, NIGHT)
    log.run("waves", [wave(1, triggered=True), wave(2, started=False)])
    log.binding(3, NIGHT, replicas=SCALED)  # the detector: new replicas, placement brought in
    log.binding(3, {"cluster-a": 800, "cluster-b": 200}, replicas=SCALED)  # the scheduler
    log.run("waves", [wave(1, result="succeeded", triggered=True), wave(2)])
    log.run(
        "rollback",
        [
            wave(1, result="succeeded", triggered=True),
            wave(2, result="failed", reason="floor breached"),
        ],
    )
    log.binding(3, {"cluster-a": 800, "cluster-b": 200})  # reverted: 5 replicas again
    log.binding(3, NIGHT)
    log.run(
        "done",
        [
            wave(1, result="succeeded", triggered=True),
            wave(2, result="failed", reason="floor breached"),
        ],
        "failed",
    )
    log.checker.check_runs(0, 0)
    assert [v for v in log.violations if W[3] in v] == [], log.violations
    assert log.checker.moves_by_scale == 2 and dict(log.checker.runs["r1"].moves) == {}


def test_a_move_of_a_scaled_workload_outside_its_wave_is_still_flagged() -> None:
    """Scaled and already re-placed for it, W[3] then moves again with its replica count
    unchanged: that is a trigger's move, and no wave listing it is in flight."""
    log = Log()
    log.binding(3, NIGHT)
    log.run("waves", [wave(1), wave(2, started=False)])
    log.binding(3, NIGHT, replicas=SCALED)
    log.binding(3, {"cluster-b": SCALED}, replicas=SCALED)  # same clusters: no move
    log.binding(3, {"cluster-a": 800, "cluster-b": 200}, replicas=SCALED)
    assert log.checker.moves_by_scale == 0
    assert (
        len(log.violations) == 1
        and f"{W[3]} moved while no wave listing it was in flight (phase waves)"
        in log.violations[0]
    )


def test_a_rollback_moving_back_a_template_karmada_moved_after_its_own_touch_is_accepted() -> None:
    """W[3]'s wave was never triggered, but Karmada placed it at night after a scale: the
    rollback touches it and it moves back before rollbackTriggered is journalled (accepted);
    the same move with no touch before it (a lifted Lazy) is flagged."""
    for touched in (True, False):
        log = Log()
        log.binding(3, DAY)
        log.run("waves", [wave(1, triggered=True), wave(2, started=False)])
        log.binding(3, DAY, replicas=SCALED)
        log.binding(3, {"cluster-b": SCALED}, replicas=SCALED)  # Karmada's, for the scale
        log.binding(3, {"cluster-b": SCALED})
        log.binding(3, NIGHT)  # reverted
        log.run("rollback", [wave(1, result="failed", triggered=True), wave(2, started=False)])
        if touched:
            log.touch(3, "t-back")
        log.binding(3, DAY)
        flagged = [v for v in log.violations if "no wave listing it" in v]
        assert bool(flagged) == (not touched), log.violations


def test_a_move_into_a_not_ready_cluster_is_flagged() -> None:
    """A wave's workload moving into a NotReady cluster is a violation; into a Ready one not."""
    for ready in (True, False):
        log = Log()
        log.binding(0, {"cluster-a": 5})
        log.cluster("cluster-b", ready)
        log.run("waves", [wave(1)])
        log.binding(0, NIGHT)
        assert bool(log.violations) == (not ready), log.violations


def _breach_run(log: Log, *, led: bool, result: str, reason: str = "") -> None:
    """A run whose wave 1 sees W[0] fall below the percentage floor for ten seconds."""
    log.binding(0, DAY, at=T0)
    log.run("waves", [wave(1)], at=T0 + 1)
    if led:  # renewed just before the breach: the Lease is live while it lasts
        log.lease("soak-a", at=T0 + 1 + LEASE_SECONDS)
    log.binding(0, DAY, replicas=1000, at=T0 + 2 + LEASE_SECONDS)  # 5 of 1000 ready
    log.binding(0, DAY, at=T0 + 12 + LEASE_SECONDS)
    if not led:  # the next leader comes after the floor held again
        log.lease("soak-b", at=T0 + 14 + LEASE_SECONDS)
    log.run(
        "done",
        [
            wave(
                1,
                result="succeeded" if result == "succeeded" else "failed",
                triggered=True,
                reason=reason,
            )
        ],
        result,
        at=T0 + 15 + LEASE_SECONDS,
    )


def test_a_breach_while_a_replica_led_must_fail_the_run() -> None:
    """A breach while the Lease was live and the run succeeded is a silent breach; the same
    breach in a leaderless gap (no replica could see it) is accepted, and counted."""
    for led in (True, False):
        log = Log()
        log.lease("soak-a", at=T0 - 1)
        _breach_run(log, led=led, result="succeeded")
        log.checker.check_runs(0, 0)
        silent = [v for v in log.violations if "silent breach" in v]
        assert bool(silent) == led, log.violations
        assert log.checker.breaches_unled == (0 if led else 1)


@pytest.mark.parametrize(
    ("floor_metric", "scraped", "flagged"),
    [(0.0, True, True), (1.0, True, False), (0.0, False, False)],
)
def test_a_breach_that_failed_a_wave_needs_its_metric_if_it_could_be_scraped(
    floor_metric: float, scraped: bool, flagged: bool
) -> None:
    """The floor metric must have risen, unless the replica that failed the wave died before
    any scrape (then the count is unverifiable, and counted as such)."""
    log = Log()
    _breach_run(log, led=True, result="failed", reason="floor breached: x")
    log.checker.check_runs(floor_metric, 0, scraped_after=lambda t, version: scraped)
    assert bool(log.violations) == flagged, log.violations
    assert log.checker.metrics_unverified == (0 if scraped else 1)


# -- promise 3: only the Lease holder acts -----------------------------------------------


def _write(
    seq: int,
    who: str,
    version: int | None,
    name: str = W[0],
    resource: str = "deployments",
    verb: str = "patch",
    at: float = T0,
) -> RequestRecord:
    return RequestRecord(seq, at, verb, resource, "apps", NS, name, 200, "", who, version)


def _deposed() -> Log:
    """soak-a led from version 1, soak-b from version 10."""
    log = Log()
    log.rv = 0
    log.lease("soak-a", at=T0)
    log.rv = 9
    log.lease("soak-b", at=T0 + 5)
    return log


def test_a_write_by_a_replica_that_never_held_the_lease_is_flagged() -> None:
    """soak-c writing at all is a violation; soak-a writing while it led is not."""
    log = _deposed()
    assert log.checker.check_writers([_write(1, "soak-a", 5), _write(2, "soak-c", 12)]) == 2
    assert len(log.violations) == 1 and "soak-c had never held it" in log.violations[0]
    assert log.checker.by_promise == {Promise.SINGLE_WRITER: 1}


def test_one_write_in_flight_per_worker_may_land_after_the_deposal() -> None:
    """soak-a's first write per schedule worker landing after soak-b took over is accepted
    (both workers had one in flight); a second one for the same worker is flagged."""
    log = _deposed()
    alpha = TEAMS[0].workload_names()[0]
    late = [
        _write(1, "soak-a", 11),
        _write(2, "soak-a", 12, name=alpha),
        _write(3, "soak-a", 13, name=f"tidal-run-{TEAM.schedule}", resource="configmaps"),
    ]
    log.checker.check_writers(late)
    assert len(log.violations) == 1 and "write 2 of worker soak-beta" in log.violations[0]
    assert log.checker.writers.late == 2


def test_a_late_write_that_overwrites_the_new_holders_write_is_flagged() -> None:
    """soak-b patched the template after the deposal; soak-a's in-flight patch landing after
    it overwrote it: a violation. Landing before soak-b's write, it is accepted."""
    for first in ("soak-a", "soak-b"):
        log = _deposed()
        versions = (
            {"soak-a": 11, "soak-b": 12} if first == "soak-a" else {"soak-b": 11, "soak-a": 12}
        )
        log.checker.check_writers(
            [_write(1, "soak-b", versions["soak-b"]), _write(2, "soak-a", versions["soak-a"])]
        )
        overwrote = [v for v in log.violations if "overwrote soak-b's later write" in v]
        assert bool(overwrote) == (first == "soak-b"), log.violations


def test_deletes_are_judged_by_time() -> None:
    """A delete (no resourceVersion) by soak-a long after soak-b took over, its second late
    write, is flagged; one while soak-a led is not."""
    log = _deposed()
    log.checker.check_writers(
        [
            _write(1, "soak-a", None, verb="delete", at=T0 + 1),
            _write(
                2,
                "soak-a",
                None,
                verb="delete",
                name="tidal-soak-beta-x",
                resource="workloadrebalancers",
                at=T0 + 20,
            ),
            _write(
                3,
                "soak-a",
                None,
                verb="delete",
                name="tidal-soak-beta-y",
                resource="workloadrebalancers",
                at=T0 + 21,
            ),
        ]
    )
    assert len(log.violations) == 1 and "write 2 of worker soak-beta" in log.violations[0]


def test_a_write_that_changed_nothing_is_judged_by_its_time() -> None:
    """soak-b, leading from version 10, saves the state soak-a wrote at 8 unchanged: the
    answer carries version 8, yet the write came after soak-b took over (accepted). soak-a
    doing the same long after its deposal, twice, is flagged."""
    log = _deposed()
    records = [
        _write(
            1,
            "soak-a",
            8,
            name="tidal-run-soak-beta",
            resource="configmaps",
            verb="update",
            at=T0 + 2,
        ),
        _write(2, "soak-b", 11, name=W[0], at=T0 + 6),
        _write(
            3,
            "soak-b",
            8,
            name="tidal-run-soak-beta",
            resource="configmaps",
            verb="update",
            at=T0 + 8,
        ),
    ]
    log.checker.check_writers(records)
    assert log.violations == [] and log.checker.writers.unchanged == 1
    stale = [
        _write(
            4 + i,
            "soak-a",
            8,
            name="tidal-run-soak-beta",
            resource="configmaps",
            verb="update",
            at=T0 + 9 + i,
        )
        for i in range(2)
    ]
    log.checker.check_writers(records + stale)
    assert len(log.violations) == 1 and "write 2 of worker soak-beta" in log.violations[0]


def test_an_unchanged_save_of_a_state_another_replica_created_is_judged_by_time() -> None:
    """soak-a created the run state at version 8 (its record names no object); soak-b,
    leading from 10, saves it unchanged and is answered with version 8: accepted. The same
    found from when the store made version 8, with no earlier record of it, is accepted too."""
    log = _deposed()
    create = RequestRecord(
        1, T0 + 2, "create", "configmaps", "", STATE_NS, None, 201, "", "soak-a", 8
    )
    save = _write(
        2, "soak-b", 8, name="tidal-run-soak-beta", resource="configmaps", verb="update", at=T0 + 7
    )
    log.checker.check_writers([create, save])
    assert log.violations == [] and log.checker.writers.unchanged == 1
    log.checker.seen_at[8] = T0 + 2
    log.checker.check_writers([save])
    assert log.violations == [] and log.checker.writers.unchanged == 1


def test_a_metric_is_demanded_only_of_processes_scraped_after_the_failure() -> None:
    """A process killed before its next scrape cannot show its counter; one scraped after can;
    only the process that failed the wave matters."""
    from benchmarks.soak.fleet import Fleet

    fleet = Fleet.__new__(Fleet)
    lived: list[Any] = [
        SimpleNamespace(who="soak-a", started=T0, ended=T0 + 10, metrics_at=T0 + 8),
        SimpleNamespace(who="soak-a", started=T0 + 11, ended=None, metrics_at=T0 + 30),
        SimpleNamespace(who="soak-b", started=T0, ended=None, metrics_at=T0 + 30),
    ]
    fleet.history = lived
    assert fleet.scraped_after(T0 + 5) and fleet.scraped_after(T0 + 20)
    assert not fleet.scraped_after(T0 + 9) and not fleet.scraped_after(T0 + 9, "soak-a")
    assert fleet.scraped_after(T0 + 9, "soak-b")


# -- promises 2, 5 and 8 at the end: leftovers and secrets ---------------------------------


def _world(log: Log, *, rebalancer: bool) -> Any:
    """The end state: the team's policy (its run finished), maybe a WorkloadRebalancer."""
    store = log.checker.store
    store.create(
        _rtype("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy"),
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": TEAM.policy},
            "spec": {},
        },
    )
    if rebalancer:
        store.create(
            _rtype("apps.karmada.io/v1alpha1", "WorkloadRebalancer"),
            {
                "apiVersion": "apps.karmada.io/v1alpha1",
                "kind": "WorkloadRebalancer",
                "metadata": {"name": "tidal-soak-beta-r1-w1"},
                "spec": {},
            },
        )
    return SimpleNamespace(store=store, kinds=KINDS)


def test_a_workload_rebalancer_left_behind_is_flagged() -> None:
    """A WorkloadRebalancer still there at the end is a violation; none left is accepted."""
    from benchmarks.soak.runner import _no_leftovers

    for left in (True, False):
        log = Log()
        log.run("done", [wave(1, result="succeeded", triggered=True)], "succeeded")
        assert _no_leftovers(_world(log, rebalancer=left), log.checker) == 1
        assert bool(log.violations) == left, log.violations
        assert log.checker.by_promise[Promise.RESUME] == int(left)


def test_a_token_in_a_log_is_flagged(tmp_path: Any) -> None:
    """A kubeconfig token in a daemon's log is a violation; logs without one are accepted."""
    from benchmarks.soak.runner import _no_secrets

    for leaked in (True, False):
        log = Log()
        for who in ("soak-a", "soak-b"):
            (tmp_path / who).write_text(
                '{"event": "x", "token": "sim:soak-a"}\n'
                if leaked and who == "soak-b"
                else '{"event": "x"}\n'
            )
        fleet = SimpleNamespace(log_path=lambda who: tmp_path / who)
        places = _no_secrets(
            _world(log, rebalancer=False),
            fleet,  # type: ignore[arg-type]
            log.checker,
            ["tidal_runs_total 1"],
        )
        assert places == 6
        assert log.violations == (["a kubeconfig token appears in log of soak-b"] if leaked else [])


def test_a_restarted_replica_is_scraped_on_its_own_port(tmp_path: Any) -> None:
    """The replica's log holds its earlier process's start line: the new process's port is
    the one it logs itself, never the dead one (its counters would never be read)."""
    from benchmarks.soak.fleet import Fleet, Incarnation

    log = tmp_path / "daemon-soak-a.log"
    log.write_text('{"event": "daemon_started", "port": 1111}\n')
    fleet = Fleet(None, tmp_path, tmp_path, ("soak-a",))
    inc = Incarnation("soak-a", None, T0, log_offset=log.stat().st_size)  # type: ignore[arg-type]
    assert fleet._port(inc) is None
    with log.open("a") as fh:
        fh.write('{"event": "daemon_started", "port": 2222}\n')
    assert fleet._port(inc) == 2222


# -- the process and the summary ----------------------------------------------------------


def _incarnation(rss: list[float], ready_from: int) -> Any:
    samples = [
        SimpleNamespace(at=T0 + 3 * i, rss_mb=mb, sockets=2, ready=i >= ready_from)
        for i, mb in enumerate(rss)
    ]
    return SimpleNamespace(who="soak-a", proc=SimpleNamespace(pid=1), samples=samples)


def test_memory_growth_is_judged_from_a_daemon_that_was_up() -> None:
    """22 MB while still importing, then a flat 70 MB: accepted; growth of 60 MB after the
    daemon served /metrics: flagged."""
    from benchmarks.soak.runner import _flatness

    flat = [22.0, 40.0] + [70.0] * 30
    for rss, flagged in ((flat, False), ([*flat[:-1], 130.0], True)):
        log = Log()
        fleet = SimpleNamespace(history=[_incarnation(rss, ready_from=2)])
        start, end, _s, _e = _flatness(fleet, log.checker, 10.0)  # type: ignore[arg-type]
        assert start == 70.0 and end == rss[-1]
        assert bool(log.violations) == flagged
        assert log.checker.by_promise[Promise.PROCESS] == int(flagged)


def test_the_summary_counts_violations_per_promise() -> None:
    """Each violation is counted under its promise in soak.json's `promises`."""
    from benchmarks.soak.summary import per_promise

    log = _deposed()
    log.checker.check_writers([_write(1, "soak-c", 12)])
    log.checker.check_starts(T0, T0)
    result = {
        "window_starts_checked": 0,
        "runs": 0,
        "run_results": {},
        "daemon_restarts": 0,
        "acting_writes_checked": 1,
        "leader_changes": 1,
        "long_retry_after_faults": 0,
        "moves_checked_against_waves": 0,
        "moves_by_wave": 0,
        "moves_outside_runs": 0,
        "floor_breaches_seen": 0,
        "floor_breaches_in_waves": 0,
        "secret_places_scanned": 0,
        "lazy_policies_checked": 0,
        "rss_mb_start": 1.0,
        "rss_mb_end": 1.0,
        "sockets_start": 2,
        "sockets_end": 2,
    }
    promises = per_promise(log.checker, result)
    assert {k: v["violations"] for k, v in promises.items() if v["violations"]} == {
        "single_writer": 1,
        "windows": 1,
    }
    assert set(promises) == {p.value for p in Promise}
