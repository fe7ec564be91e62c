"""The pause between waves (tidal.engine.pacing.pause_after): with strategy surge it halves
after each clean wave down to an eighth; with strategy direct it is the rollout's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tidal.engine.pacing import pause_after
from tidal.engine.states import Strategy


def _ctx(strategy: Strategy) -> Any:
    return SimpleNamespace(state=SimpleNamespace(strategy=strategy))


def test_a_surging_run_halves_its_pause_after_each_clean_wave_down_to_an_eighth() -> None:
    ctx = _ctx(Strategy.SURGE)
    assert [pause_after(ctx, 8.0, clean) for clean in range(1, 6)] == [4.0, 2.0, 1.0, 1.0, 1.0]
    assert pause_after(ctx, 0.0, 3) == 0.0


@pytest.mark.parametrize("clean", [1, 2, 5])
def test_a_direct_run_pauses_as_the_rollout_says(clean: int) -> None:
    assert pause_after(_ctx(Strategy.DIRECT), 8.0, clean) == 8.0
