"""EngineObserver: turns the engine's progress events into metrics and Kubernetes Events.

Passed to the engine as its `on_event` callback by the daemon (and by `tidal switch`). The
engine itself logs every event; this module only counts and records. It lives outside the
engine so that the engine never imports prometheus_client; it imports the engine's event
types, the metrics and the access layer's Event recorder, and nothing imports it but callers.
Nothing here may fail a switch: every problem is logged and swallowed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import structlog

from tidal.domain.outcomes import FailureReason, RunResult, WaveResult
from tidal.engine.events import (
    EngineEvent,
    FloorBreached,
    FloorObserved,
    PolicyChanged,
    RunFinished,
    RunStarted,
    WaveFinished,
)
from tidal.karmada.events import (
    FLOOR_BREACHED,
    ROLLED_BACK,
    SWITCH_STARTED,
    SWITCH_SUCCEEDED,
    WAVE_FAILED,
    WAVE_SUCCEEDED,
    EventRecorder,
    EventType,
    ObjectRef,
    log_event_failed,
    policy_ref,
)
from tidal.metrics import Metrics

log = structlog.get_logger(__name__)

# Not one of the six reasons of the issue: a run that failed before any wave (preflight,
# policy write) would otherwise leave no Event at all.
SWITCH_FAILED: Final = "SwitchFailed"

_CHANGING_ACTIONS: Final = frozenset({"patch", "swap", "restore", "lazy_restored"})

StateObject = Callable[[str], ObjectRef | None]


@dataclass
class _Run:
    """What the observer remembers about one run in flight: the policies it changed."""

    policies: list[ObjectRef] = field(default_factory=list)


class EngineObserver:
    """Callable `on_event` for the engine: metrics always, Events when given a recorder."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        recorder: EventRecorder | None = None,
        state_object: StateObject | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics
        self.recorder = recorder
        self.state_object = state_object
        self._wall_clock = wall_clock
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    def __call__(self, event: EngineEvent) -> None:
        context: dict[str, object] = {
            "schedule": event.schedule,
            "window": event.window,
            "run_id": event.run_id,
        }
        if event.wave is not None:
            context["wave"] = event.wave
        # Lines logged while observing (kube_event_failed) belong to the run's story too.
        with structlog.contextvars.bound_contextvars(**context):
            try:
                self._observe(event)
            except Exception as exc:  # observing must never break the switch it observes
                log.warning("observer_failed", event_type=type(event).__name__, error=str(exc))

    # --- dispatch -----------------------------------------------------------------------------

    def _observe(self, event: EngineEvent) -> None:
        if isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, PolicyChanged):
            self._policy_changed(event)
        elif isinstance(event, FloorObserved):
            self.metrics.floor_observed(
                event.schedule, event.cluster, event.min_ready, event.required
            )
        elif isinstance(event, FloorBreached):
            self._floor_breached(event)
        elif isinstance(event, WaveFinished):
            self._wave_finished(event)
        elif isinstance(event, RunFinished):
            self._run_finished(event)

    def _run_started(self, event: RunStarted) -> None:
        with self._lock:
            self._runs.setdefault(event.run_id, _Run())
        verb = "resumed" if event.resumed else "started"
        self._record(
            event,
            SWITCH_STARTED,
            f"Switch of schedule {event.schedule} to window {event.window} {verb}: "
            f"{event.workloads} workloads in {event.waves} waves by {event.trigger} "
            f"(run {event.run_id})",
            policies=False,
        )

    def _policy_changed(self, event: PolicyChanged) -> None:
        if event.action not in _CHANGING_ACTIONS:
            return
        namespace, _, name = event.policy.rpartition("/")
        ref = policy_ref(event.kind, name, namespace or None)
        with self._lock:
            run = self._runs.setdefault(event.run_id, _Run())
            if ref in run.policies:
                return
            run.policies.append(ref)
        lazy = " (activationPreference Lazy while the waves run)" if event.lazy_added else ""
        self._record_on(
            ref,
            SWITCH_STARTED,
            f"Policy changed ({event.action}) for window {event.window} of schedule "
            f"{event.schedule}{lazy} (run {event.run_id})",
        )

    def _floor_breached(self, event: FloorBreached) -> None:
        self.metrics.floor_breached(event.schedule, event.cluster, event.ready, event.required)
        self._record(
            event,
            FLOOR_BREACHED,
            f"Floor {event.floor} broken in cluster {event.cluster}: {event.workload} "
            f"has {event.ready} ready, needs {event.required} (schedule "
            f"{event.schedule}, window {event.window}, wave {event.wave}, run "
            f"{event.run_id})",
            event_type="Warning",
        )

    def _wave_finished(self, event: WaveFinished) -> None:
        # a failed wave that was moved back is counted, and reported, as failed
        result = WaveResult(WaveResult(event.result).reported)
        reason: FailureReason | None = None
        if result is WaveResult.FAILED:
            reason = event.failure or FailureReason.API_ERROR
        self.metrics.wave_finished(
            event.schedule,
            event.window,
            result,
            event.duration_seconds,
            reason,
            finished_at=self._wall_clock(),
        )
        where = f"schedule {event.schedule}, window {event.window}, run {event.run_id}"
        if result is WaveResult.SUCCEEDED:
            self._record(
                event,
                WAVE_SUCCEEDED,
                f"Wave {event.wave} succeeded in {event.duration_seconds:.0f}s ({where})",
            )
        elif result is WaveResult.FAILED:
            detail = f": {event.reason}" if event.reason else ""
            self._record(
                event,
                WAVE_FAILED,
                f"Wave {event.wave} failed ({reason}){detail} ({where})",
                event_type="Warning",
            )

    def _run_finished(self, event: RunFinished) -> None:
        result = RunResult(event.result)
        self.metrics.run_finished(
            event.schedule, event.window, result, event.duration_seconds, self._wall_clock()
        )
        where = f"schedule {event.schedule} to window {event.window} (run {event.run_id})"
        detail = f": {event.reason}" if event.reason else ""
        if result is RunResult.SUCCEEDED:
            noop = ", nothing to do" if event.noop else ""
            self._record(
                event,
                SWITCH_SUCCEEDED,
                f"Switch of {where} succeeded in {event.duration_seconds:.0f}s{noop}",
            )
        elif result is RunResult.ROLLED_BACK:
            self._record(
                event,
                ROLLED_BACK,
                f"Switch of {where} was rolled back{detail}",
                event_type="Warning",
            )
        else:
            self._record(
                event, SWITCH_FAILED, f"Switch of {where} failed{detail}", event_type="Warning"
            )
        with self._lock:
            self._runs.pop(event.run_id, None)

    # --- Kubernetes Events ----------------------------------------------------------------------

    def _targets(self, event: EngineEvent, policies: bool) -> list[ObjectRef]:
        targets: list[ObjectRef] = []
        if self.state_object is not None:
            state = self.state_object(event.schedule)
            if state is not None:
                targets.append(state)
        if policies:
            with self._lock:
                run = self._runs.get(event.run_id)
                targets.extend(run.policies if run else ())
        return targets

    def _record(
        self,
        event: EngineEvent,
        reason: str,
        message: str,
        *,
        event_type: EventType = "Normal",
        policies: bool = True,
    ) -> None:
        for target in self._targets(event, policies):
            self._record_on(target, reason, message, event_type)

    def _record_on(
        self, target: ObjectRef, reason: str, message: str, event_type: EventType = "Normal"
    ) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.record(target, reason, message, event_type)
        except Exception as exc:  # the recorder is best-effort already; be sure of it
            log_event_failed(log, target, reason, exc)
