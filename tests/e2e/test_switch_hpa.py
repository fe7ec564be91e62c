"""An autoscaler (HPA, FederatedHPA, CronFederatedHPA) changes a template's replicas while a
switch runs: the wave it is in, and the later ones, move the new count (docs/hpa.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import NS, MakeEmulator, client_for, latest
from tests.e2e.test_switch_failures import _emulator, _switch_changing_at_wave_1

pytestmark = pytest.mark.e2e


def _scale(emu: Any, name: str, replicas: int) -> None:
    """What an HPA does: it writes the template's spec.replicas (its scale subresource)."""
    deployments = emu.kinds.by_kind("apps/v1", "Deployment")
    emu.store.mutate(deployments, NS, name, lambda o: o["spec"].update(replicas=replicas))


def _settled(emu: Any, want: dict[str, int], seconds: float = 5.0) -> dict[str, tuple[int, int]]:
    """Wait until each workload of `want` is assigned and ready with that many in cluster-b."""
    deadline = time.monotonic() + seconds
    while True:
        now = latest(emu)
        got = {w: now.get((f"{NS}/Deployment/{w}", "cluster-b"), (0, 0)) for w in want}
        if all(got[w] == (n, n) for w, n in want.items()) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_a_workload_scaled_mid_wave_moves_with_its_new_count(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """As wave 1 starts, the HPA scales web-0 (wave 1) from 5 to 8 and web-3 (wave 2) down to
    3: the switch succeeds, no floor breached, and the night places 8 and 3 in cluster-b."""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)

    def autoscale() -> None:
        _scale(emu, "web-0", 8)
        _scale(emu, "web-3", 3)

    record, events = _switch_changing_at_wave_1(client, tmp_path, autoscale)
    assert record.result == "succeeded", record.to_json()
    assert not [e for e in events if type(e).__name__ == "FloorBreached"]
    assert _settled(emu, {"web-0": 8, "web-3": 3, "web-1": 5}) == {
        "web-0": (8, 8),
        "web-3": (3, 3),
        "web-1": (5, 5),
    }
