"""Karmada's resource detector reaches the templates of a policy change late, with the policy
as it is by then: a run that patches a policy moments after a previous run lifted its
temporary Lazy waits for the detector, so no template moves outside its wave."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.e2e.scenario_checks import converged_at, first_move
from tests.e2e.switch_helpers import (
    DAY,
    NIGHT_TO_B,
    TEAM_T1,
    MakeEmulator,
    client_for,
    cluster,
    cpp,
    deployment,
    namespace,
    schedule_text,
    switch,
    weights_window,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.engine.record import RunRecord

pytestmark = pytest.mark.e2e

LAG = 1.5  # the emulated detector reaches a policy change's templates this late
SCHEDULE = schedule_text(
    "team-settle",
    workloads=TEAM_T1,
    windows=NIGHT_TO_B + weights_window("day", "07:00", {"cluster-a": 4, "cluster-b": 1}),
    rollout="""
    waveSize: 1
    pauseBetweenWaves: 0s
    waveTimeout: 60s
""",
)


def _topology() -> list[dict[str, Any]]:
    """Three 2-replica Deployments whose pods take 1.5 s to start (a wave outlasts the lag)."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"policyChangeLagSeconds": LAG},
    }
    return [
        settings,
        cluster("cluster-a", startup=1.5),
        cluster("cluster-b", startup=1.5),
        namespace(),
        cpp("team-cpp", "t1", DAY),
    ] + [deployment(f"web-{i}", "t1", 2) for i in range(3)]


def _night_then_day(emu: Any, tmp_path: Path, settle: float) -> tuple[float, RunRecord, list[Any]]:
    """Run night, then day at once; returns (day start, day record, day events)."""
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE)
    time.sleep(LAG + 3.5)  # the topology's own policy creation is long reconciled
    night = switch(client, path, "night", policy_settle=settle)
    assert night.result == "succeeded", night.to_json()
    t0 = emu.clock.now()
    events: list[Any] = []
    day = switch(client, path, "day", events=events, policy_settle=settle)
    return t0, day, events


def _out_of_wave_moves(emu: Any, t0: float, record: RunRecord) -> list[str]:
    """Workloads of a wave that moved before the wave before it converged."""
    timeline = emu.timeline()
    out = []
    for earlier, later in zip(record.waves, record.waves[1:], strict=False):
        done = max(converged_at(timeline, t0, w) or float("inf") for w in earlier.workloads)
        out += [w for w in later.workloads if (first_move(timeline, t0, w) or float("inf")) < done]
    return out


def test_a_policy_lifted_from_lazy_moments_ago_moves_templates_outside_the_waves(
    make_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Why the wait exists: patched at once, the detector's late keys from the night run's
    Lazy lift apply the day placement to templates of later waves during wave 1."""
    emu = make_emulator(_topology())
    t0, day, _ = _night_then_day(emu, tmp_path, settle=0.0)
    time.sleep(LAG)
    assert _out_of_wave_moves(emu, t0, day), day.to_json()


def test_a_run_waits_for_the_detector_before_patching_a_policy_changed_moments_ago(
    make_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """With a settle time longer than the detector's lag, the day run waits (policy_settling)
    and every workload moves in its own wave, in order."""
    emu = make_emulator(_topology())
    with capture_logs() as logs:
        t0, day, events = _night_then_day(emu, tmp_path, settle=LAG + 1)
    assert day.result == "succeeded", day.to_json()
    assert _out_of_wave_moves(emu, t0, day) == []
    settling = [e for e in events if isinstance(e, ev.PolicySettling)]
    assert len(settling) == 1 and 0 < settling[0].seconds <= LAG + 2
    assert settling[0].policy == "team-cpp"
    names = [e["event"] for e in logs if e.get("run_id") == day.run_id]
    assert names.index("policy_settling") < names.index("policy_changed")
