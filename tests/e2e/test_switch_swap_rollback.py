"""Swap with rollback over HTTP: the `to` policy is deleted, `from` recreated from its
pre-image, the switched wave moved back, and activationPreference restored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    MakeEmulator,
    assert_back_to_day,
    client_for,
    cpp,
    policy_file,
    schedule_text,
    static_placement,
    swap_window,
    switch,
    write_schedule,
)
from tidal.karmada import policies

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-swap",
    windows=swap_window("night", "23:00", swap_from="day-cpp", swap_to="night.yaml"),
    rollout="""
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 2s
    onFailure: rollback
    floors:
      - clusters: [cluster-b]
        minReadyReplicas: 1
""",
)

NIGHT = policy_file(cpp("night-cpp", "t1", static_placement({"cluster-b": 1})))


def test_swap_rolls_back_to_the_day_policy(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A swap whose first wave cannot fit is undone: day-cpp back, night-cpp gone, 80/20."""
    emu = make_switch_emulator(policy="day-cpp", cpu="1", b_cpu="6")
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE, {"night.yaml": NIGHT})

    record = switch(client, path, "night")

    assert record.result == "rolledBack", record.to_json()
    assert policies.find_policy(client, "ClusterPropagationPolicy", "night-cpp", None) is None
    day = policies.get_policy(client, "ClusterPropagationPolicy", "day-cpp", None)
    assert day["spec"]["placement"] == DAY
    assert "activationPreference" not in day["spec"]
    assert_back_to_day(emu)
