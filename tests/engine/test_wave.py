"""A wave's view of the bindings, through the daemon's shared informer: only the keys it
reads (the run's workloads), never another team's bindings of the same namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    client_for,
    cpp,
    deployment,
    load_one,
    schedule_text,
    static_placement,
    static_team,
    write_schedule,
)
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.states import RunResult
from tidal.engine.switch import run_switch
from tidal.karmada.bindings import key_of
from tidal.karmada.informer import SharedReads
from tidal_sim.clock import ScaledClock

pytestmark = pytest.mark.e2e
SCHEDULE = schedule_text(
    "team-u",
    """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 60s
""",
)


def test_waves_follow_only_their_own_bindings_in_a_shared_namespace(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Another team's bindings share the namespace: while each gate passes, the informer has
    one keyed reader (the wave) indexing exactly team t1's bindings, and no namespace reader."""
    others = [deployment(f"other-{i}", "t2", 1) for i in range(3)]
    emu = make_emulator(
        [*static_team(), cpp("t2-cpp", "t2", static_placement({"cluster-a": 1})), *others],
        clock=ScaledClock(20.0),
    )
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, max_watch_seconds=5)
    informer = reads.informers["resourcebindings"]
    seen: list[tuple[tuple[int, int], set[str], set[str]]] = []

    def on_event(event: ev.EngineEvent) -> None:
        if isinstance(event, ev.GatePassed):
            ours = {
                key_of(obj)
                for obj in informer.items()
                if obj["spec"]["resource"]["name"].startswith("web-")
            }
            with informer._lock:
                indexed = set(informer._by_key)
            seen.append((informer.readers(), indexed, ours))

    with reads.in_use():
        record = run_switch(
            client,
            load_one(write_schedule(tmp_path, SCHEDULE)),
            "night",
            clock=SystemClock(),
            journal=InMemoryJournal(),
            on_event=on_event,
            reads=reads,
        )
    assert record.result is RunResult.SUCCEEDED
    assert seen
    for readers, indexed, ours in seen:
        assert readers == (0, 1)
        assert indexed == ours and len(ours) == 4
