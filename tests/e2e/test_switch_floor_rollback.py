"""A rollback begun while a workload is still below its floor (the breach that failed the run,
healing or healed only by the rollback itself) moves everything back instead of failing at its
first look; a workload that meets its floors again is held to them for the rest of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    NIGHT_TO_B,
    NS,
    MakeEmulator,
    client_for,
    schedule_text,
    switch,
    write_schedule,
)
from tests.e2e.test_switch_lazy_rollback import _clusters_of, _scaling_web_3
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.karmada.bindings import list_bindings
from tidal.karmada.views import BindingView

pytestmark = pytest.mark.e2e
WEB_3 = f"{NS}/Deployment/web-3"
ROLLOUT = """\
waveSize: 1
pauseBetweenWaves: 0s
waveTimeout: 10s
order: name
onFailure: rollback
strategy: direct
floors:
  - minAvailablePercent: 20
"""


def _ready(client: Any, name: str) -> int:
    for binding in list_bindings(client, NS)[0]:
        view = BindingView(binding)
        if view.spec["resource"]["name"] == name:
            return sum(view.ready(None).values())
    return 0


def test_a_rollback_begun_below_a_floor_moves_everything_back(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """web-3, scaled mid-run onto a full cluster-b, breaks its floor and fails wave 2; it is
    still below it as the rollback begins, which moves web-1 and web-0 back (freeing the room
    web-3 needed) and then web-3, with a warning naming it: rolled back, not failed."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="9")
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, schedule_text("team-f", ROLLOUT, windows=NIGHT_TO_B))
    events: list[Any] = []
    record = switch(
        client,
        path,
        "night",
        journal=InMemoryJournal(),
        events=events,
        on_event=_scaling_web_3(emu, client, replicas=15, at_wave=2),
    )
    breaches = [e for e in events if isinstance(e, ev.FloorBreached)]
    assert breaches and {e.workload for e in breaches} == {WEB_3}, breaches
    assert record.result == "rolledBack", record.to_json()
    back = [e.wave for e in events if isinstance(e, ev.WaveStarted) and e.rollback]
    assert back == [2, 1, 4], back
    warned = [e for e in events if isinstance(e, ev.RunWarning) and e.code == "floor_recovering"]
    assert len(warned) == 1 and "web-3" in warned[0].message, warned
    assert _clusters_of(client)["web-3"] == {"cluster-a", "cluster-b"}
    assert _ready(client, "web-3") >= 3
