"""The pause between waves (tidal.engine.pacing.pause_after): with strategy surge it halves
after each clean wave down to an eighth; with strategy direct it is the rollout's; either
counts from when the wave converged."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from tidal.domain.clock import FakeClock
from tidal.engine.pacing import pause_after
from tidal.engine.states import Strategy


def _ctx(strategy: Strategy, clock: FakeClock | None = None) -> Any:
    return SimpleNamespace(state=SimpleNamespace(strategy=strategy), clock=clock)


def test_a_surging_run_halves_its_pause_after_each_clean_wave_down_to_an_eighth() -> None:
    ctx = _ctx(Strategy.SURGE)
    assert [pause_after(ctx, 8.0, clean) for clean in range(1, 6)] == [4.0, 2.0, 1.0, 1.0, 1.0]
    assert pause_after(ctx, 0.0, 3) == 0.0


@pytest.mark.parametrize("clean", [1, 2, 5])
def test_a_direct_run_pauses_as_the_rollout_says(clean: int) -> None:
    assert pause_after(_ctx(Strategy.DIRECT), 8.0, clean) == 8.0


@pytest.mark.parametrize(
    ("strategy", "released_in", "left"),
    [
        (Strategy.SURGE, 1.5, 2.5),  # half of 8 after the first clean wave, 1.5 s spent
        (Strategy.SURGE, 6.0, 0.0),  # a release longer than the pause: no pause at all
        (Strategy.DIRECT, 0.25, 7.75),
    ],
)
def test_the_pause_counts_from_when_the_wave_converged(
    strategy: Strategy, released_in: float, left: float
) -> None:
    clock = FakeClock(datetime(2026, 3, 29, 1, 30, tzinfo=UTC))
    settled = clock.monotonic()
    clock.sleep(released_in)
    assert pause_after(_ctx(strategy, clock), 8.0, 1, settled) == left
