"""What a switch reports as it goes: frozen event records, logged with structlog and handed
to an optional `on_event` callback (the CLI renders progress, the daemon makes metrics).

Every event carries schedule, window, run_id and wave (None outside a wave); `name` is the
stable snake_case event name used in logs (run_started, policy_settling, policy_changed,
wave_started, surge_raised_ahead, bridge_step, gate_passed, floor_breached, floor_observed,
wave_failed / wave_succeeded / wave_rolled_back, workload_skipped, warning, wave_progress,
run_finished).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, TypedDict

import structlog

from tidal.engine.states import (
    BridgeStep,
    FailureReason,
    Gate,
    PolicyAction,
    RunResult,
    Trigger,
    WaveResult,
)


class EventBase(TypedDict):
    """The fields every event of one run (and wave) shares, to spread into an event."""

    schedule: str
    window: str
    run_id: str
    wave: int | None


@dataclass(frozen=True, kw_only=True)
class EngineEvent:
    schedule: str
    window: str
    run_id: str
    wave: int | None = None

    event_name: ClassVar[str] = "engine_event"
    level: ClassVar[str] = "info"

    @property
    def name(self) -> str:
        return self.event_name

    def fields(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in asdict(self).items()
            if k not in ("schedule", "window", "run_id", "wave")
        }


@dataclass(frozen=True, kw_only=True)
class RunStarted(EngineEvent):
    workloads: int
    waves: int
    trigger: Trigger
    resumed: bool = False
    event_name: ClassVar[str] = "run_started"


@dataclass(frozen=True, kw_only=True)
class PolicyChanged(EngineEvent):
    kind: str
    policy: str  # namespace/name or name
    action: PolicyAction
    lazy_added: bool = False
    event_name: ClassVar[str] = "policy_changed"


@dataclass(frozen=True, kw_only=True)
class PolicySettling(EngineEvent):
    """The run waits before changing a policy that changed moments ago (detector_settle.py)."""

    kind: str
    policy: str  # namespace/name or name
    last_changed: str  # the policy's last change, as the server stamped it
    seconds: float  # how long the run waits
    event_name: ClassVar[str] = "policy_settling"


POLICY_ACTION_TEXT: dict[str, str] = {
    PolicyAction.PATCH: "patched",
    PolicyAction.SWAP: "swapped in",
    PolicyAction.RESTORE: "restored to its spec before the switch",
    PolicyAction.LAZY_RESTORED: "Lazy lifted (activationPreference back as it was)",
    PolicyAction.UNCHANGED: "already as the window wants it",
    PolicyAction.COMPLETED: "marked completed",
}


def policy_action_text(action: str) -> str:
    """What a PolicyChanged action means, in words (for people, not logs)."""
    return POLICY_ACTION_TEXT.get(action, action.replace("_", " "))


@dataclass(frozen=True, kw_only=True)
class WorkloadSkipped(EngineEvent):
    workload: str
    reason: str  # deleted | not_selected | (a plan's) excluded | unbound | foreign | unmatched
    event_name: ClassVar[str] = "workload_skipped"
    level: ClassVar[str] = "warning"


@dataclass(frozen=True, kw_only=True)
class RunWarning(EngineEvent):
    code: str
    message: str
    event_name: ClassVar[str] = "warning"
    level: ClassVar[str] = "warning"


@dataclass(frozen=True, kw_only=True)
class WaveStarted(EngineEvent):
    workloads: tuple[str, ...]
    trigger: Trigger
    rollback: bool = False
    event_name: ClassVar[str] = "wave_started"


@dataclass(frozen=True, kw_only=True)
class SurgeRaisedAhead(EngineEvent):
    """`wave`'s surge was raised ahead of its turn, while wave `during` settles
    (tidal.engine.pacing): its overrides are written, its room held."""

    during: int
    workloads: tuple[str, ...]
    overrides: int
    event_name: ClassVar[str] = "surge_raised_ahead"


@dataclass(frozen=True, kw_only=True)
class BridgeStepped(EngineEvent):
    """A wave's bridge reached `step` (journalled; its side effect comes next)."""

    step: BridgeStep
    workloads: tuple[str, ...]
    rollback: bool = False
    event_name: ClassVar[str] = "bridge_step"


@dataclass(frozen=True, kw_only=True)
class GatePassed(EngineEvent):
    gate: Gate
    event_name: ClassVar[str] = "gate_passed"


@dataclass(frozen=True, kw_only=True)
class FloorObserved(EngineEvent):
    """The lowest ready replicas any workload has in a floor's cluster, when it changes."""

    cluster: str
    min_ready: int
    required: int
    event_name: ClassVar[str] = "floor_observed"
    level: ClassVar[str] = "debug"


@dataclass(frozen=True, kw_only=True)
class FloorBreached(EngineEvent):
    cluster: str  # "*" for a percentage floor over all clusters
    workload: str
    ready: int
    required: int
    floor: str
    event_name: ClassVar[str] = "floor_breached"
    level: ClassVar[str] = "error"


@dataclass(frozen=True, kw_only=True)
class WaveProgress(EngineEvent):
    """Ready and assigned replicas per cluster over the wave's workloads (for progress bars)."""

    ready: dict[str, int] = field(default_factory=dict)
    assigned: dict[str, int] = field(default_factory=dict)
    converged: int = 0
    total: int = 0
    event_name: ClassVar[str] = "wave_progress"
    level: ClassVar[str] = "debug"


@dataclass(frozen=True, kw_only=True)
class WaveFinished(EngineEvent):
    result: WaveResult  # succeeded | failed | rolledBack
    reason: str = ""
    failure: FailureReason | None = None
    duration_seconds: float = 0.0
    rollback: bool = False

    @property
    def name(self) -> str:
        return {
            WaveResult.SUCCEEDED: "wave_succeeded",
            WaveResult.FAILED: "wave_failed",
            WaveResult.ROLLED_BACK: "wave_rolled_back",
        }.get(self.result, "wave_finished")

    @property
    def log_level(self) -> str:
        return "error" if self.result == "failed" else "info"


@dataclass(frozen=True, kw_only=True)
class RunFinished(EngineEvent):
    result: RunResult
    reason: str = ""
    duration_seconds: float = 0.0
    noop: bool = False
    event_name: ClassVar[str] = "run_finished"


OnEvent = Callable[[EngineEvent], None]


def policy_ref(namespace: str | None, name: str) -> str:
    """How events name a policy: namespace/name for a PropagationPolicy, name otherwise."""
    return f"{namespace}/{name}" if namespace else name


class Emitter:
    """Logs each event with its bound fields and passes it to the callback."""

    def __init__(self, on_event: OnEvent | None, logger: Any = None) -> None:
        self._on_event = on_event
        self._log = logger or structlog.get_logger("tidal.engine")

    def emit(self, event: EngineEvent) -> None:
        level = getattr(event, "log_level", event.level)
        bound: dict[str, Any] = {
            "schedule": event.schedule,
            "window": event.window,
            "run_id": event.run_id,
        }
        if event.wave is not None:
            bound["wave"] = event.wave
        getattr(self._log, level)(event.name, **bound, **event.fields())
        if self._on_event is not None:
            self._on_event(event)
