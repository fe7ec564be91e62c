"""How one wave (or one step of it) ended."""

from __future__ import annotations

from dataclasses import dataclass

from tidal.engine.states import FailureReason


@dataclass
class WaveOutcome:
    ok: bool
    failure: FailureReason | None = None
    reason: str = ""
