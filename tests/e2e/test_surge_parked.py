"""Parked surges (tidal.engine.surging): a wave whose overrides restate the split Karmada
assigned after its move stays in the run's groups until the run's last release. Attacks on
that: a user scales a parked workload while a later wave runs (its override is lifted, never
capping the new scale); a later wave fails and halts the run (the parked overrides go with
the rest, none is called kept); the run's last release removes every group in one request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import wait_for
from tests.e2e.surge_helpers import no_overrides, scale, splits, surge_schedule, team
from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tests.e2e.switch_helpers import switch as run_window
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.states import SurgeStep
from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import KarmadaClient
from tidal.karmada.views import BindingView

pytestmark = pytest.mark.e2e

ROLLOUT = "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: {timeout}\n"


def _spec_replicas(client: KarmadaClient, name: str) -> int | None:
    """The replicas the binding of Deployment `name` says its template asks for now."""
    items, _ = list_bindings(client, NS)
    for item in items:
        if (item.get("spec") or {}).get("resource", {}).get("name") == name:
            return BindingView.of(item).replicas
    return None


def test_a_parked_workload_scaled_during_a_later_wave_is_lifted_not_capped(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """web-0 (wave 1, parked at 5 in cluster-b) scaled to 8 once wave 1 has finished: wave 2
    lifts its override (the surge_rescaled warning, for wave 1, comes before wave 2
    finishes) and web-0 runs 8 in cluster-b by the end, not the 5 its override restated."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    scaler = client_for(emu, tmp_path / "scaler")
    path = surge_schedule(tmp_path, ROLLOUT.format(timeout="60s"))
    events: list[Any] = []

    def scale_after_wave_1(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1 and not event.rollback:
            scale(scaler, "web-0", 8)
            wait_for(lambda: _spec_replicas(scaler, "web-0") == 8, 30, "web-0's binding at 8")

    record = run_window(client, path, "night", events=events, on_event=scale_after_wave_1)
    assert record.result == "succeeded", record.to_json()
    order = [
        (type(e).__name__, e.wave, getattr(e, "code", ""))
        for e in events
        if isinstance(e, ev.WaveFinished) or getattr(e, "code", "") == "surge_rescaled"
    ]
    assert order.index(("RunWarning", 1, "surge_rescaled")) < order.index(("WaveFinished", 2, ""))
    wait_for(
        lambda: splits(emu).get(f"{NS}/Deployment/web-0", {}).get("cluster-b") == 8,
        30,
        "web-0 at 8 ready in cluster-b",
    )
    no_overrides(client)


def test_a_halt_after_a_parked_wave_removes_its_overrides_and_calls_none_kept(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b with room for one wave's surge at a time: wave 1 parks, then cluster-b's pods
    stop starting and wave 2's surge times out: the halt takes wave 1's parked workloads out
    with the rest (removing an override that restates the split breaks no floor), keeps
    nothing, and leaves no override."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=21))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, ROLLOUT.format(timeout="3s"))

    def break_cluster_b(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            emu.set_pods_fail("cluster-b", True)

    journal = InMemoryJournal()
    record = run_window(client, path, "night", journal=journal, on_event=break_cluster_b)
    assert record.result == "failed", record.to_json()
    state = journal.load("team-s")
    assert state is not None
    first, second = (wave.forward.surge for wave in state.waves[:2])
    assert first is not None and second is not None
    assert first.step is SurgeStep.RELEASED and first.overrides == []
    assert second.step is SurgeStep.RELEASED and not second.kept
    no_overrides(client)
