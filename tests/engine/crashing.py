"""Stopping a run where a crash would: at the first engine event a predicate accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import Journal
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
