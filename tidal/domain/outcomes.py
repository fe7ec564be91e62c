"""The shared vocabulary of a run's outcome: results, failure reasons, gates, triggers, strategies.

One module, at the bottom of the layers, so that the engine (which journals and reports these),
the metrics (which label series with them), the daemon's /status and the CLI all speak the same
enums instead of redefining them as strings. Each value is the string stored in the journal and
printed by `tidal switch -o json`, so journals written before this module read back unchanged;
where a Prometheus label spells a value differently (snake_case), `metric_label` says how.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "AUTO",
    "NOT_STARTED",
    "FailureReason",
    "Gate",
    "RunResult",
    "Strategy",
    "Trigger",
    "WaveResult",
]


class RunResult(StrEnum):
    """How a run ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ROLLED_BACK = "rolledBack"

    @classmethod
    def _missing_(cls, value: object) -> RunResult | None:
        return cls.ROLLED_BACK if value == "rolled_back" else None

    @property
    def metric_label(self) -> str:
        """The Prometheus label value (snake_case)."""
        return "rolled_back" if self is RunResult.ROLLED_BACK else self.value


class WaveResult(StrEnum):
    """A wave's end; a rolled back wave is one value (the old journal kept a flag beside)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ROLLED_BACK = "rolledBack"  # it had succeeded, and was moved back
    FAILED_ROLLED_BACK = "failedRolledBack"  # it had failed, and what it moved was moved back

    @classmethod
    def _missing_(cls, value: object) -> WaveResult | None:
        return cls.ROLLED_BACK if value == "rolled_back" else None

    @property
    def reported(self) -> str:
        """What the run record and events say (a failed wave stays failed once undone)."""
        return WaveResult.FAILED.value if self is WaveResult.FAILED_ROLLED_BACK else self.value

    @property
    def metric_label(self) -> str:
        """The Prometheus label value of tidal_waves_total (snake_case; undone failed: failed)."""
        if self is WaveResult.ROLLED_BACK:
            return "rolled_back"
        return self.reported

    @property
    def rolled_back(self) -> bool:
        return self in (WaveResult.ROLLED_BACK, WaveResult.FAILED_ROLLED_BACK)

    def after_rollback(self) -> WaveResult:
        return (
            WaveResult.FAILED_ROLLED_BACK if self is WaveResult.FAILED else WaveResult.ROLLED_BACK
        )


NOT_STARTED: Final = "notStarted"  # the run record's result of a wave not yet finished


class FailureReason(StrEnum):
    """Why a wave failed (the `reason` label of tidal_wave_failures_total)."""

    FLOOR_BREACH = "floor_breach"
    TIMEOUT = "timeout"
    UNSCHEDULABLE = "unschedulable"
    BINDING_NOT_FOUND = "binding_not_found"
    API_ERROR = "api_error"
    CLUSTER_NOT_READY = "cluster_not_ready"
    POLICY_DRIFT = "policy_drift"


class Gate(StrEnum):
    """What a wave waits for, in order (a gate passed is journalled and reported by name)."""

    TRIGGERED = "triggered"
    SCHEDULED = "scheduled"
    CONVERGED = "converged"
    FLOORS = "floors"


class Trigger(StrEnum):
    """The trigger a run uses, resolved from the window's setting (which may say `auto`)."""

    TOUCH = "touch"
    REBALANCE = "rebalance"
    BOTH = "both"


AUTO: Final = "auto"  # the configured trigger that asks the planner to choose


class Strategy(StrEnum):
    """The run's rollout strategy (`rollout.strategy`): move in place, or make before break."""

    DIRECT = "direct"
    SURGE = "surge"

    @classmethod
    def _missing_(cls, value: object) -> Strategy | None:
        # A journal from before surges has no strategy key; anything unknown is direct.
        return cls.DIRECT if value in (None, "") else None
