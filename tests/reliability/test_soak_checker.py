"""The soak's invariant checker is not vacuous: it reports a wave started before the previous
one converged, a run left unfinished, a workload moved twice in one run, a write from a
replica that did not hold the lease, and a Lazy left on a policy."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from benchmarks.soak.checker import Checker
from benchmarks.soak.scenario import NS, STATE_NS, TEAMS, topology
from tidal.sim.apiserver import RequestRecord
from tidal.sim.emulator import Emulator

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
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": STATE_NS},
            "data": {"run": json.dumps(state)}}
    try:
        emu.store.get(rtype, STATE_NS, name)
    except Exception:
        emu.store.create(rtype, body)
        return
    emu.store.mutate(rtype, STATE_NS, name, lambda o: o.update(data=body["data"]))


def _run(phase: str, waves: list[dict[str, Any]], result: str | None = None) -> dict[str, Any]:
    return {"schedule": TEAM.schedule, "window": "night", "runId": "r1", "phase": phase,
            "result": result, "policies": [{"applied": True}], "waves": waves}


def _wave(index: int, started: bool, result: str | None) -> dict[str, Any]:
    return {"index": index, "workloads": [f"{NS}/Deployment/{TEAM.workload_names()[index]}"],
            "startedAt": "2026-01-01T00:00:00Z" if started else None, "result": result}


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
    for clusters in ([{"name": "cluster-b", "replicas": 5}],
                     [{"name": "cluster-a", "replicas": 5}]):
        emu.store.mutate(rtype, NS, name,
                         lambda o, c=clusters: o["spec"].update(clusters=c))
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
    own = RequestRecord(1, now, "patch", "deployments", "apps", NS, TEAM.workload_names()[0],
                        200, "", "soak-a")
    foreign = RequestRecord(2, now, "patch", "deployments", "apps", "other", "db", 200, "",
                            "soak-a")
    assert checker.check_scope([own, foreign]) == 2
    assert len(checker.violations) == 1 and "other/db" in checker.violations[0]


@pytest.mark.parametrize(("result", "marked", "expected"), [
    ("succeeded", True, "Lazy left behind"),
    ("failed", False, "without tidal's marks"),
    ("failed", True, None),
])
def test_a_lazy_left_on_a_policy_is_judged_by_the_run_result(
        world: Any, result: str, marked: bool, expected: str | None) -> None:
    """After a finished run no Lazy may stay; after a halted one a Lazy must carry the marks
    that let the next run restore it."""
    from benchmarks.soak.runner import _no_leftovers

    emu, checker = world
    _save_run(emu, _run("done", [_wave(0, True, result)], result))
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


@pytest.mark.parametrize(("reason", "floor_metric", "failure_metric", "expected"), [
    ("floor breached: x", 0, 1, "tidal_floor_breaches_total stayed 0"),
    ("floor breached: x", 1, 0, None),
    ("not converged within waveTimeout 12s", 1, 0, "tidal_wave_failures_total stayed 0"),
    ("API error: patch deployments", 0, 1, None),
])
def test_a_breach_in_a_failed_wave_needs_its_metric(
        world: Any, reason: str, floor_metric: float, failure_metric: float,
        expected: str | None) -> None:
    """A breach seen during a wave must show in the floor metric when it failed the wave, or
    in the wave-failure metric when the wave failed first for another reason."""
    emu, checker = world
    wave = _wave(0, True, "failed") | {"reason": reason}
    _save_run(emu, _run("done", [wave], "failed"))
    _settle(checker)
    checker.runs["r1"].floor_breaches = 1
    checker.check_runs(metrics_breaches=floor_metric, metrics_wave_failures=failure_metric)
    if expected is None:
        assert checker.violations == []
    else:
        assert len(checker.violations) == 1 and expected in checker.violations[0]
