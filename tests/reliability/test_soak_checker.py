"""The soak's invariant checker is not vacuous: it reports a wave started before the previous
one converged, a run left unfinished, a workload moved twice in one run, a write from a
replica that did not hold the lease, and a Lazy left on a policy."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.soak.checker import Breach, Checker
from benchmarks.soak.scenario import NS, STATE_NS, TEAMS, topology
from tidal_sim.apiserver import RequestRecord
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e
TEAM = TEAMS[0]


@pytest.fixture
def world() -> Any:
    emu = Emulator(topology()).start()
    emu.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}])
    checker = Checker(emu.store).start()
    yield emu, checker
    checker.stop()
    emu.stop()


def _save_run(emu: Any, state: dict[str, Any]) -> None:
    rtype = emu.kinds.by_kind("v1", "ConfigMap")
    name = f"tidal-run-{state['schedule']}"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": STATE_NS},
        "data": {"run": json.dumps(state)},
    }
    try:
        emu.store.get(rtype, STATE_NS, name)
    except Exception:
        emu.store.create(rtype, body)
        return
    emu.store.mutate(rtype, STATE_NS, name, lambda o: o.update(data=body["data"]))


def _run(phase: str, waves: list[dict[str, Any]], result: str | None = None) -> dict[str, Any]:
    return {
        "schedule": TEAM.schedule,
        "window": "night",
        "runId": "r1",
        "phase": phase,
        "result": result,
        "policies": [{"applied": True}],
        "waves": waves,
    }


def _wave(index: int, started: bool, result: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "workloads": [f"{NS}/Deployment/{TEAM.workload_names()[index]}"],
        "startedAt": "2026-01-01T00:00:00Z" if started else None,
        "result": result,
    }


def _settle(checker: Checker) -> None:
    deadline = time.monotonic() + 5
    while not checker._sub.events.empty() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)


def test_wave_started_before_previous_finished_is_reported(world: Any) -> None:
    """Wave 1 starting while wave 0 failed is a violation; an unfinished run is another."""
    emu, checker = world
    _save_run(emu, _run("waves", [_wave(0, True, None), _wave(1, False, None)]))
    _save_run(emu, _run("waves", [_wave(0, True, "failed"), _wave(1, True, None)]))
    _settle(checker)
    checker.check_runs(metrics_breaches=0)
    text = " | ".join(checker.violations)
    assert "wave 1 started while wave 0 was failed" in text
    assert "did not end" in text


def test_moved_twice_in_one_run_is_reported(world: Any) -> None:
    """A binding whose assignment changes twice during one succeeded run is a violation."""
    emu, checker = world
    _save_run(emu, _run("waves", [_wave(0, True, None)]))
    rtype = emu.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    name = f"{TEAM.workload_names()[0]}-deployment"
    for clusters in (
        [{"name": "cluster-b", "replicas": 5}],
        [{"name": "cluster-a", "replicas": 5}],
    ):
        emu.store.mutate(rtype, NS, name, lambda o, c=clusters: o["spec"].update(clusters=c))
        _settle(checker)
    _save_run(emu, _run("done", [_wave(0, True, "succeeded")], "succeeded"))
    _settle(checker)
    checker.check_runs(metrics_breaches=0)
    assert any("moved more than 1x" in v for v in checker.violations), checker.violations


def test_write_by_a_replica_without_the_lease_is_reported(world: Any) -> None:
    """An acting write by a replica while another held the leader Lease is a violation."""
    _emu, checker = world
    now = time.time()
    checker.leader_history[:] = [(now - 30, "soak-a")]
    record = RequestRecord(1, now, "patch", "deployments", "apps", NS, "x", 200, "", "soak-b")
    ok = RequestRecord(2, now, "patch", "deployments", "apps", NS, "x", 200, "", "soak-a")
    assert checker.check_writers([record, ok]) == 2
    assert len(checker.violations) == 1 and " by soak-b " in checker.violations[0]


def test_write_outside_the_schedules_is_reported(world: Any) -> None:
    """A daemon's write to a template no schedule selects is a violation; its own are not."""
    _emu, checker = world
    now = time.time()
    own = RequestRecord(
        1, now, "patch", "deployments", "apps", NS, TEAM.workload_names()[0], 200, "", "soak-a"
    )
    foreign = RequestRecord(
        2, now, "patch", "deployments", "apps", "other", "db", 200, "", "soak-a"
    )
    assert checker.check_scope([own, foreign]) == 2
    assert len(checker.violations) == 1 and "other/db" in checker.violations[0]


@pytest.mark.parametrize(
    ("result", "marked", "left", "expected"),
    [
        ("succeeded", True, False, "Lazy left behind"),
        ("failed", False, False, "without tidal's marks"),
        ("failed", True, False, None),
        ("rolledBack", True, False, "Lazy left behind"),
        ("rolledBack", True, True, None),
        ("rolledBack", False, True, "Lazy left behind"),
    ],
)
def test_a_lazy_left_on_a_policy_is_judged_by_the_run_result(
    world: Any, result: str, marked: bool, left: bool, expected: str | None
) -> None:
    """After a finished run no Lazy may stay, unless a rollback journalled leaving it (it held
    unmoved templates) and it is marked; after a halted one a Lazy must carry the marks that let
    the next run restore it."""
    from benchmarks.soak.runner import _no_leftovers

    emu, checker = world
    run = _run("done", [_wave(0, True, result)], result)
    run["policies"] = [
        {"applied": True, "name": TEAM.policy, "lazyAdded": True, "lazyRestored": not left}
    ]
    _save_run(emu, run)
    _settle(checker)
    rtype = emu.kinds.by_kind("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")

    def make_lazy(obj: dict[str, Any]) -> None:
        obj["spec"]["activationPreference"] = "Lazy"
        if marked:
            obj["metadata"].setdefault("annotations", {})["tidal.io/lazy-added-by"] = "r1"

    emu.store.mutate(rtype, None, TEAM.policy, make_lazy)
    _no_leftovers(emu, checker)
    found = [v for v in checker.violations if TEAM.policy in v]
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize(
    ("reason", "floor_metric", "failure_metric", "expected"),
    [
        ("floor breached: x", 0, 1, "tidal_floor_breaches_total stayed 0"),
        ("floor breached: x", 1, 0, None),
        ("not converged within waveTimeout 12s", 1, 0, "tidal_wave_failures_total stayed 0"),
        ("API error: patch deployments", 0, 1, None),
    ],
)
def test_a_breach_in_a_failed_wave_needs_its_metric(
    world: Any, reason: str, floor_metric: float, failure_metric: float, expected: str | None
) -> None:
    """A breach seen during a wave must show in the floor metric when it failed the wave, or
    in the wave-failure metric when the wave failed first for another reason."""
    emu, checker = world
    wave = _wave(0, True, "failed") | {"reason": reason}
    _save_run(emu, _run("done", [wave], "failed"))
    _settle(checker)
    now = time.time()
    checker.runs["r1"].breaches.append(Breach("x", now, now + 1))
    checker.lease_renewals.append(now)  # a replica led while it lasted
    checker.check_runs(metrics_breaches=floor_metric, metrics_wave_failures=failure_metric)
    if expected is None:
        assert checker.violations == []
    else:
        assert len(checker.violations) == 1 and expected in checker.violations[0]


def _save_handled(emu: Any, record: dict[str, Any]) -> None:
    rtype = emu.kinds.by_kind("v1", "ConfigMap")
    name = f"tidal-sched-{TEAM.schedule}"
    data = {"handled": json.dumps(record)}
    try:
        emu.store.get(rtype, STATE_NS, name)
    except Exception:
        emu.store.create(
            rtype,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": STATE_NS},
                "data": data,
            },
        )
        return
    emu.store.mutate(rtype, STATE_NS, name, lambda o: o.update(data=data))


def test_every_window_start_ran_once_or_was_recorded_with_a_reason(world: Any) -> None:
    """Over three starts: one ran twice, one was refused without a reason, the other team
    did nothing at all: each is reported; a refusal with its reason is not."""
    emu, checker = world
    first = (time.time() // 60 - 10) * 60  # three minute boundaries after `first`
    stamps = [time.strftime("%Y%m%d-%H%M%S", time.gmtime(first + 60 * i)) for i in (1, 2, 3)]
    iso = [time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(first + 60 * i)) for i in (1, 2, 3)]
    for run_id in (f"a-{stamps[0]}", f"b-{stamps[0]}"):
        _save_run(emu, _run("done", [_wave(0, True, "succeeded")], "succeeded") | {"runId": run_id})
        _settle(checker)
    _save_handled(emu, {"window": "x", "at": iso[1], "outcome": "refused"})
    _settle(checker)
    _save_handled(
        emu,
        {
            "window": "x",
            "at": iso[2],
            "outcome": "refused",
            "reason": "unsafe_plan: PlanRefused: a floor would break",
        },
    )
    _settle(checker)
    assert checker.check_starts(first, first + 60 * 3 + 30) == 3 * len(TEAMS)
    mine = [v for v in checker.violations if v.startswith(f"{TEAM.schedule} ")]
    assert len(mine) == 2, mine
    assert f"start {stamps[0]} ran 2 times: " in mine[0]
    assert mine[1].endswith(f"start {stamps[1]} recorded refused without a reason")
    other = [v for v in checker.violations if v.startswith(f"{TEAMS[1].schedule} ")]
    assert len(other) == 3 and all("neither ran nor was recorded" in v for v in other)


def test_a_soak_without_runs_fails(world: Any) -> None:
    """No run at all is a violation, whatever else held."""
    _emu, checker = world
    checker.check_starts(time.time(), time.time())
    assert checker.violations == ["the soak made no run at all"]


def test_a_move_outside_the_wave_in_flight_is_reported(world: Any) -> None:
    """Wave 0 (workload 0) in flight: workload 0 moving counts for wave 0; workload 1, which
    no wave in flight lists, moving is a violation."""
    emu, checker = world
    _save_run(emu, _run("waves", [_wave(0, True, None), _wave(1, False, None)]))
    _settle(checker)
    rtype = emu.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    for index in (0, 1):
        name = f"{TEAM.workload_names()[index]}-deployment"
        emu.store.mutate(
            rtype,
            NS,
            name,
            lambda o: o["spec"].update(clusters=[{"name": "cluster-b", "replicas": 5}]),
        )
        _settle(checker)
    assert dict(checker.runs["r1"].moves_by_wave) == {0: 1}
    assert len(checker.violations) == 1, checker.violations
    assert TEAM.workload_names()[1] in checker.violations[0]
    assert "no wave listing it was in flight" in checker.violations[0]


def test_a_move_into_a_not_ready_cluster_is_reported(world: Any) -> None:
    """cluster-b NotReady: a wave's workload moving into it is a violation."""
    emu, checker = world
    _save_run(emu, _run("waves", [_wave(0, True, None)]))
    _settle(checker)
    rtype = emu.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    name = f"{TEAM.workload_names()[0]}-deployment"
    emu.store.mutate(
        rtype, NS, name, lambda o: o["spec"].update(clusters=[{"name": "cluster-a", "replicas": 5}])
    )
    _settle(checker)
    assert checker.violations == []
    emu.set_cluster_ready("cluster-b", False)
    emu.store.mutate(
        rtype, NS, name, lambda o: o["spec"].update(clusters=[{"name": "cluster-b", "replicas": 5}])
    )
    _settle(checker)
    assert any("moved into NotReady ['cluster-b']" in v for v in checker.violations), (
        checker.violations
    )


def test_writes_are_judged_by_the_holder_at_their_resource_version(world: Any) -> None:
    """The Lease passed from soak-a to soak-b at resourceVersion 20: soak-a's write at 26,
    after soak-b wrote the same object at 25, is a violation whatever the wall clock says
    (an in-flight write may land late, but never over the new holder's)."""
    _emu, checker = world
    checker.lease_versions[:] = [(10, "soak-a"), (20, "soak-b")]
    now = time.time()

    def write(seq: int, who: str, version: int) -> RequestRecord:
        return RequestRecord(
            seq, now, "patch", "deployments", "apps", NS, "x", 200, "", who, version
        )

    assert (
        checker.check_writers(
            [write(1, "soak-a", 15), write(2, "soak-b", 25), write(3, "soak-a", 26)]
        )
        == 3
    )
    assert len(checker.violations) == 1, checker.violations
    assert "by soak-a at resourceVersion 26: the Lease was held by soak-b" in checker.violations[0]


def test_the_chaos_throttles_longer_than_the_lease(world: Any) -> None:
    """Some 429s carry a Retry-After longer than the replicas' Lease."""
    from benchmarks.soak.chaos import LONG_RETRY_AFTER, Chaos
    from benchmarks.soak.scenario import daemon_env

    emu, _checker = world
    lease = float(daemon_env("soak-a")["TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS"])
    assert lease < LONG_RETRY_AFTER
    chaos = Chaos(emu, None, Path("."), seed=3, leader=lambda: None)  # type: ignore[arg-type]
    details = [chaos._api_429() for _ in range(30)]
    assert any(d.endswith(f"Retry-After {LONG_RETRY_AFTER}s") for d in details)
