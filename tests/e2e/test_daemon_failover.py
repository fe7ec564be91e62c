"""Failover mid-switch with real `tidal run` processes: SIGKILL the leader after the policy
change, after a wave, mid-gate (and mid-rollback elsewhere), the
standby resumes (no wave twice); SIGSTOP the leader past its lease, the standby takes over,
SIGCONT: the old leader writes nothing more and exits non-zero."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    settled_team,
    start_daemon,
    stop_all,
    stored_run,
    wait_for,
    write_due_schedule,
    writes_by,
)
from tidal.karmada.client import KarmadaClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ACTING = {"clusterpropagationpolicies", "deployments", "workloadrebalancers"}


def _start_leader_then_standby(
    emu: Any, tmp_path: Path, client: KarmadaClient, schedules: Path
) -> dict[str, subprocess.Popen[bytes]]:
    """Replica a, then, once a has started the run, standby b."""
    procs = {"a": start_daemon(emu, tmp_path, "a", schedules)}
    wait_for(lambda: stored_run(client) is not None, 30, "a to start the run")
    procs["b"] = start_daemon(emu, tmp_path, "b", schedules)
    return procs


def _assert_standby_succeeds(client: KarmadaClient) -> None:
    """Wait for the standby to finish the run, and the run succeeded."""
    wait_for(lambda: _finished(client), 90, "the standby to finish the run")
    run = stored_run(client)
    assert run is not None and run.result == "succeeded"


def _after_first_wave(client: KarmadaClient) -> bool:
    run = stored_run(client)
    return (
        run is not None
        and run.phase == "waves"
        and len(run.completed_waves) >= 1
        and len(run.completed_waves) < len(run.waves)
    )


def _finished(client: KarmadaClient) -> bool:
    run = stored_run(client)
    return run is not None and run.finished


def _leader(emu: Any) -> str:
    acting = [who for who, ws in writes_by(emu).items() if any(w[1] in ACTING for w in ws)]
    assert len(acting) == 1, acting
    return acting[0]


def _touch_counts(emu: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ws in writes_by(emu).values():
        for _verb, resource, name in ws:
            if resource == "deployments" and name:
                counts[name] = counts.get(name, 0) + 1
    return counts


def _mid_gate(client: KarmadaClient) -> bool:
    run = stored_run(client)
    return (
        run is not None
        and run.phase == "waves"
        and any(w.forward.triggered and w.result is None for w in run.waves[1:])
    )


KILL_POINTS = {
    # between waves: wave 1 done, the pause before wave 2 running
    "after_wave": (_after_first_wave, 20.0, "3s", "surge"),
    # wave 2 triggered, its gate waiting for pods (real-time emulator: gates take seconds);
    # moving directly, as a surged wave's pods are ready before its trigger (the surge's own
    # kill points are in tests/e2e/test_surge_crash.py)
    "mid_gate": (_mid_gate, 1.0, "0s", "direct"),
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_sigkill_at_step_boundary_standby_resumes_without_repeating(
    make_emulator: Any, tmp_path: Path, point: str
) -> None:
    """Leader killed mid-run: the standby finishes the run; each workload touched once."""
    reached, speed, pause, strategy = KILL_POINTS[point]
    emu = settled_team(make_emulator, speed, timeout=30)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause=pause, strategy=strategy)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = _start_leader_then_standby(emu, tmp_path, client, schedules)
    try:
        wait_for(lambda: reached(client), 60, point)
        first = _leader(emu).removeprefix("replica-")
        procs[first].send_signal(signal.SIGKILL)
        procs[first].wait(10)
        _assert_standby_succeeds(client)
    finally:
        stop_all(procs.values())
    counts = _touch_counts(emu)
    assert len(counts) == 8, counts
    if point == "mid_gate":
        # a kill between a touch and its journal entry may re-touch that one wave's
        # workloads (a no-op for Karmada); no other wave is ever triggered again
        assert max(counts.values()) <= 2 and sum(v - 1 for v in counts.values()) <= 2, counts
    else:
        assert set(counts.values()) == {1}, counts


def test_sigstop_leader_is_fenced_after_sigcont(make_emulator: Any, tmp_path: Path) -> None:
    """A leader frozen past its lease: the standby resumes; the old one writes nothing more."""
    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="3s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = _start_leader_then_standby(emu, tmp_path, client, schedules)
    try:
        wait_for(lambda: _after_first_wave(client), 60, "the first wave")
        old = procs["a"]
        old.send_signal(signal.SIGSTOP)
        stopped_at = time.time()
        wait_for(lambda: _finished(client), 90, "the standby to finish the run")
        old.send_signal(signal.SIGCONT)
        assert old.wait(20) != 0  # stepped down and exited
        # An Event has no resourceVersion to fence it: one sent in the instant of the freeze
        # may land right after it. Every acting write (policies, templates, state) is fenced.
        late = [
            r
            for r in emu.request_log()
            if r.identity == "replica-a"
            and r.time > stopped_at
            and r.verb not in ("get", "list", "watch")
            and r.code < 400
            and r.resource != "events"
            and not r.dry_run
        ]
        assert late == [], late
        run = stored_run(client)
        assert run is not None and run.result == "succeeded"
    finally:
        stop_all(procs.values(), resume=True)
    counts = _touch_counts(emu)
    assert len(counts) == 8 and set(counts.values()) == {1}, counts


def test_sigkill_mid_rollback_standby_continues_the_rollback(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Killed while rolling back a failed wave: the standby finishes the rollback, once."""
    from tidal.karmada.client import CLUSTER_PROPAGATION_POLICIES as CPP
    from tidal.karmada.client import CLUSTERS

    emu = settled_team(make_emulator, 1.0, timeout=30)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    before = client.request("get", CPP, "GET", CPP.path(None, "team-cpp"))["spec"]
    member = client.request("get", CLUSTERS, "GET", CLUSTERS.path(None, "cluster-b"))
    member["metadata"]["annotations"]["sim.tidal.io/pods-fail"] = "true"  # night wave fails
    client.request("update", CLUSTERS, "PUT", CLUSTERS.path(None, "cluster-b"), body=member)
    schedules = tmp_path / "schedules"
    # direct: a surging wave into failing pods never moves, so there would be nothing to
    # roll back (tests/e2e/test_switch_surge.py covers that); this is about a moved wave
    write_due_schedule(schedules, on_failure="rollback", wave_timeout="3s", strategy="direct")
    procs = _start_leader_then_standby(emu, tmp_path, client, schedules)
    try:
        wait_for(
            lambda: (r := stored_run(client)) is not None and r.phase == "rollback",
            60,
            "the rollback",
        )
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(10)
        wait_for(lambda: _finished(client), 90, "the standby to finish the rollback")
    finally:
        stop_all(procs.values())
    run = stored_run(client)
    assert run is not None and run.result == "rolledBack", run
    after = client.request("get", CPP, "GET", CPP.path(None, "team-cpp"))["spec"]
    assert after["placement"] == before["placement"]
    switched = set(run.waves[0].workloads)
    counts = _touch_counts(emu)
    assert {n for n in counts} == {w.name for w in switched}, counts
    # forward once, back once; the touches of a wave are journalled together once they all
    # landed, so a kill among them repeats each of that wave's touches at most once (the
    # placement is the same, so Karmada moves nothing again)
    assert set(counts.values()) <= {2, 3}, counts


def test_sigkill_after_the_policy_change_resumes_without_repatching(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Leader killed after the policy change, before wave 1's trigger lands: the standby
    neither re-patches the policy nor skips wave 1."""
    emu = settled_team(make_emulator, timeout=30)
    # hold the first template patch (wave 1's first touch) in the server for a while
    emu.faults.inject(type="latency", verb="patch", resource="deployments", seconds=6, count=1)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="0s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = {"a": start_daemon(emu, tmp_path, "a", schedules)}
    try:
        wait_for(
            lambda: any(
                w[1] == "clusterpropagationpolicies" for ws in writes_by(emu).values() for w in ws
            ),
            30,
            "the policy change",
        )
        first_touch = [w for ws in writes_by(emu).values() for w in ws if w[1] == "deployments"]
        assert first_touch == [], "wave 1 was triggered before the kill point"
        procs["b"] = start_daemon(emu, tmp_path, "b", schedules)
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(10)
        _assert_standby_succeeds(client)
    finally:
        stop_all(procs.values())
    policy_writes = [
        (who, w)
        for who, ws in writes_by(emu).items()
        for w in ws
        if w[1] == "clusterpropagationpolicies"
    ]
    # one change by the old leader, one Lazy restore at the end by the standby: no re-patch
    assert [who for who, _ in policy_writes] == ["replica-a", "replica-b"], policy_writes
    counts = _touch_counts(emu)
    assert len(counts) == 8, counts  # every workload, wave 1 included
    assert max(counts.values()) <= 2, counts  # only the in-flight touch may land twice


def test_schedule_edited_mid_run_then_sigkill_the_standby_finishes_the_started_version(
    make_emulator: Any, tmp_path: Path
) -> None:
    """After wave 1 the night window is edited (now all to cluster-a) and the leader is
    killed: the standby finishes the run against the version it started with (all to
    cluster-b), succeeds, and status says the edit waits for the next start."""
    from tidal.daemon.status import build_status
    from tidal.karmada.policies import get_policy
    from tidal.loading import load_schedules

    emu = settled_team(make_emulator, 20.0, timeout=30)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="3s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = _start_leader_then_standby(emu, tmp_path, client, schedules)
    try:
        wait_for(lambda: _after_first_wave(client), 60, "the first wave")
        path = schedules / "team-t1.yaml"
        text = path.read_text()
        edited = text.replace("clusterNames: [cluster-b]}", "clusterNames: [cluster-a]}", 1)
        assert edited != text
        path.write_text(edited)
        first = _leader(emu).removeprefix("replica-")
        procs[first].send_signal(signal.SIGKILL)
        procs[first].wait(10)
        _assert_standby_succeeds(client)
    finally:
        stop_all(procs.values())
    policy = get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    weights = policy["spec"]["placement"]["replicaScheduling"]["weightPreference"]
    assert weights["staticWeightList"] == [
        {"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": 1}
    ]
    run = stored_run(client)
    assert run is not None and run.result == "succeeded" and run.schedule_hash
    report = build_status(
        client, STATE_NS, "tidal-leader", load_schedules([schedules]).schedules, datetime.now(UTC)
    )
    pending = report["schedules"][0]["editPending"]
    assert pending is not None and pending["runId"] == run.run_id
    counts = _touch_counts(emu)
    assert len(counts) == 8 and set(counts.values()) == {1}, counts
