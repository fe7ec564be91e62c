"""Stopping a run where a crash would: at the first engine event a predicate accepts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import surge_schedule
from tests.e2e.switch_helpers import client_for, load_one
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal, Journal
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient


class Crash(Exception):
    """Raised from an engine event: the run stops there, its journal as the crash left it."""


def wave_starts(number: int) -> Callable[[Any], bool]:
    """The moment wave `number` starts."""
    return lambda event: isinstance(event, ev.WaveStarted) and event.wave == number


def crash_run(
    client: KarmadaClient,
    loaded: Any,
    journal: Journal,
    when: Callable[[Any], bool],
    *,
    window: str = "night",
    **kwargs: Any,
) -> None:
    """Run `window` and crash at the first event `when` accepts (the crash must happen)."""

    def crash(event: Any) -> None:
        if when(event):
            raise Crash

    with pytest.raises(Crash):
        run_switch(
            client, loaded, window, clock=SystemClock(), journal=journal, on_event=crash, **kwargs
        )


def crashed_while_wave_1_surges(
    emu: Any, tmp_path: Path
) -> tuple[KarmadaClient, Any, InMemoryJournal]:
    """A surging run of four 5-replica workloads in waves of two, crashed while wave 1's
    surged replicas start: its client, loaded schedule and journal."""
    client = client_for(emu, tmp_path)
    loaded = load_one(
        surge_schedule(tmp_path, "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    )
    journal = InMemoryJournal()
    crash_run(client, loaded, journal, lambda e: isinstance(e, ev.WaveProgress) and e.wave == 1)
    return client, loaded, journal
