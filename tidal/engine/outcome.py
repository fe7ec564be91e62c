"""How one wave (or one step of it) ended."""

from __future__ import annotations

from dataclasses import dataclass

from tidal.engine.states import FailureReason


@dataclass
class WaveOutcome:
    ok: bool
    failure: FailureReason | None = None
    reason: str = ""
    # when (the clock's monotonic scale) the wave converged, if in this process: the pause
    # after it counts from then (tidal.engine.pacing.pause_after)
    settled_at: float | None = None
