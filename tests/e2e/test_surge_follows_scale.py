"""Surge that follows the user (issue 25, defect 3): Deployments scaled while their wave's
overrides are in force (5 -> 10 and 5 -> 2, as an autoscaler would) get their overrides
lifted: whatever the run's end, no override caps the new scale or holds more than it, and a
switch whose floors hold succeeds with nothing left.

(A template edit under the night's Lazy moves that workload at once, as Karmada does: with a
100% floor the user's own scale breaks the floor and the run halts.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import wait_for
from tests.e2e.outside import start_tidal
from tests.e2e.surge_helpers import (
    FULL_AVAILABILITY,
    desired,
    scale,
    slow_startup,
    surge_schedule,
    team,
)
from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tidal.karmada.overrides import list_overrides

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
B_FLOOR = """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 60s
    floors:
      - clusters: [cluster-b]
        minReadyReplicas: 1
"""
SPECS = {f"{NS}/Deployment/web-{i}": n for i, n in enumerate([10, 2, 5, 5])}


def _totals(emu: Any) -> dict[str, int]:
    return {w: sum(split.values()) for w, split in desired(emu).items()}


def _switch_scaled_mid_surge(emu: Any, tmp: Path, rollout: str) -> int:
    """The night switch, web-0 scaled to 10 and web-1 to 2 once the surge is written; its
    exit code."""
    client = client_for(emu, tmp)
    slow_startup(client, "cluster-b", 100)  # 5 s real
    path = surge_schedule(tmp, rollout)
    kubeconfig = emu.write_kubeconfig(tmp / "kc")
    proc = start_tidal(
        tmp / "switch.log", "switch", path, "--window", "night", "--kubeconfig", kubeconfig, "--yes"
    )
    try:
        wait_for(lambda: bool(list_overrides(client, schedule="team-s")), 60, "the surge")
        scale(client, "web-0", 10)
        scale(client, "web-1", 2)
        return proc.wait(240)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_halt_never_keeps_an_override_off_the_users_scale(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """100% available: the user's scale-up moves web-0 at once and the run halts (exit 2);
    every member then runs what the spec says (10 and 2), none pinned at the old 5."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    assert _switch_scaled_mid_surge(emu, tmp_path, FULL_AVAILABILITY) == 2
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _totals(emu) != SPECS:
        time.sleep(0.1)
    assert _totals(emu) == SPECS, desired(emu)


def test_a_workload_scaled_during_its_surge_is_followed_to_success(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Floors that hold: the switch succeeds, web-0 runs 10 and web-1 2 in cluster-b, no
    override is left."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    assert _switch_scaled_mid_surge(emu, tmp_path, B_FLOOR) == 0, (
        tmp_path / "switch.log"
    ).read_text()[-3000:]
    client = client_for(emu, tmp_path)
    assert list_overrides(client, schedule="team-s") == []
    night = {w: {"cluster-b": n} for w, n in SPECS.items()}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and desired(emu) != night:
        time.sleep(0.1)
    assert desired(emu) == night
