"""Health to the end (issue 25, defect 4): the destination turning NotReady right after the
surge overrides are written fails the wave with a reason naming the cluster, instead of a run
`succeeded` with every replica placed in a NotReady cluster (Karmada keeps its last status)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.daemon_helpers import wait_for
from tests.e2e.outside import start_tidal
from tests.e2e.surge_helpers import FULL_AVAILABILITY, slow_startup, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for
from tidal.karmada.overrides import list_overrides

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("on_failure", ["halt", "rollback"])
def test_a_destination_turning_not_ready_mid_wave_fails_it(
    make_switch_emulator: MakeEmulator, tmp_path: Path, on_failure: str
) -> None:
    """cluster-b NotReady once the one wave's overrides exist: the run does not succeed (exit 2),
    wave 1 failed with cluster_not_ready naming cluster-b, and the run halted or rolled back
    as onFailure says."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    slow_startup(client, "cluster-b", 60)  # 3 s real
    rollout = FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 4").replace(
        "waveTimeout: 60s", f"waveTimeout: 60s\n        onFailure: {on_failure}"
    )
    path = surge_schedule(tmp_path, rollout)  # one wave: no later wave's check to catch it
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    proc = start_tidal(
        tmp_path / "switch.log",
        "switch",
        path,
        "--window",
        "night",
        "--kubeconfig",
        kubeconfig,
        "--yes",
        "-o",
        "json",
    )
    try:
        wait_for(lambda: bool(list_overrides(client, schedule="team-s")), 60, "the surge")
        emu.set_cluster_ready("cluster-b", False)
        code = proc.wait(240)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = (tmp_path / "switch.log").read_text()
    assert code == 2, out[-3000:]
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"')]
    failed = [e for e in events if e.get("event") == "wave_failed" and not e.get("rollback")]
    assert failed and failed[0]["failure"] == "cluster_not_ready", out[-3000:]
    assert failed[0]["wave"] == 1
    assert "cluster-b" in failed[0]["reason"] and "NotReady" in failed[0]["reason"]
    finished = next(e for e in events if e.get("event") == "run_finished")
    assert finished["result"] == ("rolledBack" if on_failure == "rollback" else "failed")
