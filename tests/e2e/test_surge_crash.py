"""SIGKILL a `tidal run` leader during each step of a surging wave (surge: overrides being
written; wait: surged replicas starting; move: the touch in flight; release: overrides being
deleted): a fresh replica resumes the run to a clean end, with no OverridePolicy left and no
workload above its share. Each step is held open on the killed replica only (a latency fault
on its own requests, or slow pods in cluster-b)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    WORKLOADS,
    settle,
    start_daemon,
    stop_all,
    topology,
    wait_for,
    write_due_schedule,
)
from tidal.daemon.state import StateStore
from tidal.engine.journal import RunState
from tidal.engine.states import SurgeStep
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import list_overrides
from tidal_sim.clock import ScaledClock

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# step -> (the surge step the journal shows, a latency fault on the leader, cluster-b startup)
KILL_POINTS: dict[str, tuple[SurgeStep, dict[str, str] | None, float]] = {
    "surge": (SurgeStep.RESERVED, {"verb": "create", "resource": "overridepolicies"}, 1.0),
    "wait": (SurgeStep.SURGED, None, 60.0),
    "move": (SurgeStep.MOVING, {"verb": "patch", "resource": "deployments"}, 1.0),
    "release": (
        SurgeStep.RELEASING,
        {"verb": "deletecollection", "resource": "overridepolicies"},
        1.0,
    ),
}


def _run(client: KarmadaClient) -> RunState | None:
    try:
        return StateStore(client, STATE_NS).load("team-t1")
    except Exception:
        return None


def _at(client: KarmadaClient, step: SurgeStep) -> bool:
    run = _run(client)
    return run is not None and any(
        w.forward.surge is not None and w.forward.surge.step is step and w.forward.surge.overrides
        for w in run.waves
    )


def _desired(emu: Any) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in emu.timeline():
        out.setdefault(s["workload"], {})[s["cluster"]] = s["assigned"]
    return {w: {c: n for c, n in split.items() if n} for w, split in out.items()}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_sigkill_during_a_surge_step_resumes_to_a_clean_end(
    make_emulator: Any, tmp_path: Path, point: str
) -> None:
    """Killed at the step, a new replica finishes the run: succeeded, no override left, every
    member at its night share (5 in cluster-b, none in cluster-a)."""
    step, fault, b_startup = KILL_POINTS[point]
    topo = topology()
    for obj in topo:
        if obj["kind"] == "Cluster" and obj["metadata"]["name"] == "cluster-b":
            obj["metadata"]["annotations"]["sim.tidal.io/pod-startup-seconds"] = str(b_startup)
    emu = make_emulator(topo, clock=ScaledClock(20.0))
    settle(emu, 30)
    held = (
        None
        if fault is None
        else emu.faults.inject(type="latency", identity="replica-a", seconds=4.0, **fault)
    )
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = {"a": start_daemon(emu, tmp_path, "a", schedules)}
    try:
        # the kill waits for the held request to reach the server, not only for the journal
        # to name the step: the step is journalled before its request is sent
        wait_for(
            lambda: _at(client, step) and (held is None or held.fired > 0),
            60,
            f"the leader at {step}" + ("" if held is None else ", its request held"),
        )
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(10)
        if fault is not None:  # its request held by the fault still lands: let it, first
            wait_for(
                lambda: any(
                    r.identity == "replica-a"
                    and r.verb == fault["verb"]
                    and r.resource == fault["resource"]
                    for r in emu.request_log()
                ),
                10,
                "the killed replica's held request to land",
            )
        procs["b"] = start_daemon(emu, tmp_path, "b", schedules)
        wait_for(
            lambda: (r := _run(client)) is not None and r.finished,
            120,
            "the new replica to finish the run",
        )
        run = _run(client)
        assert run is not None and run.result == "succeeded", run
        assert all(
            w.forward.surge is None or w.forward.surge.step is SurgeStep.RELEASED for w in run.waves
        )
    finally:
        stop_all(procs.values())
    assert list_overrides(client, schedule="team-t1") == []
    night = {f"ai-app/Deployment/web-{i:02d}": {"cluster-b": 5} for i in range(WORKLOADS)}
    deadline = time.monotonic() + 10
    while _desired(emu) != night and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _desired(emu) == night
