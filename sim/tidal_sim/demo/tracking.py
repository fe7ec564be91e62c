"""What happened in the demo, per schedule and window: fed by the engine's events (through the
daemon's on_event), by refusals the daemon recorded, and judged against the emulator's own
timeline of ready replicas, an observer independent of the engine's gates."""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.floors import FloorRule
from tidal.engine.events import (
    EngineEvent,
    FloorBreached,
    FloorObserved,
    GatePassed,
    RunFinished,
    RunStarted,
    WaveFinished,
    WaveStarted,
)
from tidal_sim.demo.scenario import DemoWindow

TERMINAL = ("succeeded", "failed", "rolledBack", "refused", "timeout", "interrupted")
Sample = dict[str, Any]  # the emulator timeline's {t, workload, cluster, assigned, ready}


@dataclass
class FloorVerdict:
    floor: str  # as FloorRule.describe() says it
    cluster: str  # a cluster name, "*" (the clusters each workload keeps) or "" (percentage)
    required: float
    min_ready: float | None  # lowest seen during the run (replicas, or percent); None: nothing
    breached: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "floor": self.floor,
            "cluster": self.cluster,
            "required": self.required,
            "minReady": self.min_ready,
            "breached": self.breached,
        }


@dataclass
class WindowRun:
    planned: DemoWindow
    floors: list[FloorRule]
    state: str = "waiting"  # waiting | running | or one of TERMINAL
    run_id: str = ""
    trigger: str = ""
    waves_total: int = 0
    waves_done: int = 0
    wave: int | None = None
    gates: list[str] = field(default_factory=list)
    reason: str = ""
    started: float | None = None  # simulated seconds
    finished: float | None = None
    engine_breaches: list[str] = field(default_factory=list)
    engine_min: dict[str, int] = field(default_factory=dict)
    verdicts: list[FloorVerdict] = field(default_factory=list)
    ready_after: dict[str, int] | None = None  # ready replicas per cluster when it finished
    # (wave, simulated start, simulated end or None, result) of each forward wave
    wave_spans: list[tuple[int, float, float | None, str]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return self.planned.schedule, self.planned.window

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    @property
    def floor_breached(self) -> bool:
        return bool(self.engine_breaches) or any(v.breached for v in self.verdicts)

    @property
    def ok(self) -> bool:
        return self.state == "succeeded" and not self.floor_breached

    def to_json(self) -> dict[str, Any]:
        duration = (
            self.finished - self.started
            if self.started is not None and self.finished is not None
            else None
        )
        return {
            "schedule": self.planned.schedule,
            "window": self.planned.window,
            "result": self.state,
            "runId": self.run_id,
            "trigger": self.trigger,
            "waves": self.waves_done,
            "wavesPlanned": self.waves_total,
            "start": self.planned.at.isoformat().replace("+00:00", "Z"),
            "durationSimulatedSeconds": None if duration is None else round(duration, 1),
            "floors": [v.to_json() for v in self.verdicts],
            "floorBreached": self.floor_breached,
            "reason": self.reason,
            "readyAfter": self.ready_after,
        }


def _wave_event(run: WindowRun, event: EngineEvent, now: float) -> None:
    """A wave's start, gates, floors and end, as the run's row shows them (at `now`)."""
    if isinstance(event, WaveStarted):
        if not event.rollback:
            run.wave, run.gates = event.wave, []
            run.wave_spans.append((event.wave or 0, now, None, "running"))
    elif isinstance(event, GatePassed):
        run.gates.append(event.gate)
    elif isinstance(event, FloorObserved):
        low = run.engine_min.get(event.cluster)
        run.engine_min[event.cluster] = (
            event.min_ready if low is None else min(low, event.min_ready)
        )
    elif isinstance(event, FloorBreached):
        run.engine_breaches.append(
            f"{event.workload}: {event.ready} ready in {event.cluster}, floor {event.required}"
        )
    elif isinstance(event, WaveFinished):
        if not event.rollback and run.wave_spans and run.wave_spans[-1][2] is None:
            index, began, _, _ = run.wave_spans[-1]
            run.wave_spans[-1] = (index, began, now, str(event.result))
        if event.result == "succeeded" and not event.rollback:
            run.waves_done += 1
        elif event.result == "failed":
            run.reason = event.reason


class Tracker:
    """Thread-safe: the daemon's workers report, the demo's main loop reads."""

    def __init__(
        self,
        windows: Sequence[DemoWindow],
        floors: dict[tuple[str, str], list[FloorRule]],
        members: dict[str, set[str]],
        now: Callable[[], float],
        listener: Callable[[WindowRun, EngineEvent | None, str], None] | None = None,
        totals: Callable[[str], dict[str, tuple[int, int]]] | None = None,
    ) -> None:
        self.runs = [WindowRun(w, floors.get((w.schedule, w.window), [])) for w in windows]
        self._totals = totals
        self._clusters_seen: dict[tuple[str, str], set[str]] = {}
        self._by_key = {r.key: r for r in self.runs}
        self.members = members
        self._now = now
        self._lock = threading.Lock()
        self.listener = listener

    def run(self, schedule: str, window: str) -> WindowRun | None:
        return self._by_key.get((schedule, window))

    # --- fed by the daemon ------------------------------------------------------------------
    def on_event(self, event: Any) -> None:
        if not isinstance(event, EngineEvent):
            return
        run = self._by_key.get((event.schedule, event.window))
        if run is None:
            return
        with self._lock:
            note = self._apply(run, event)
        if self.listener is not None:
            self.listener(run, event, note)

    def _apply(self, run: WindowRun, event: EngineEvent) -> str:
        if isinstance(event, RunStarted):
            self._started(run, event)
        elif isinstance(event, RunFinished):
            self._finished(run, event)
        else:
            _wave_event(run, event, self._now())
        return ""

    def _started(self, run: WindowRun, event: RunStarted) -> None:
        run.state, run.run_id, run.trigger = "running", event.run_id, event.trigger
        run.waves_total, run.started = event.waves, self._now()
        if self._totals is not None:
            self._clusters_seen[run.key] = set(self._totals(run.planned.schedule))

    def _finished(self, run: WindowRun, event: RunFinished) -> None:
        run.state, run.finished = event.result, self._now()
        if self._totals is not None:
            ready = {c: v[0] for c, v in self._totals(run.planned.schedule).items()}
            for cluster in self._clusters_seen.get(run.key, set()):
                ready.setdefault(cluster, 0)  # a cluster the team left: none ready there
            run.ready_after = dict(sorted(ready.items()))
        run.reason = event.reason or run.reason
        if event.noop:
            run.reason = run.reason or "already in force"

    def refused(self, schedule: str, window: str, error: BaseException) -> None:
        """The engine raised: before the run started, the daemon refused it (a plan or
        preflight that failed); after, the run was stopped (fenced out)."""
        run = self._by_key.get((schedule, window))
        if run is None:
            return
        with self._lock:
            if run.done:
                return
            run.state = "failed" if run.state == "running" else "refused"
            run.finished = self._now()
            run.reason = f"{type(error).__name__}: {error}"
        if self.listener is not None:
            self.listener(run, None, run.reason)

    def time_out(self) -> None:
        self._end("timeout", "did not finish within the demo's time limit")

    def interrupt(self) -> None:
        self._end("interrupted", "")

    def _end(self, state: str, reason: str) -> None:
        with self._lock:
            for run in self.runs:
                if not run.done:
                    run.state, run.reason = state, run.reason or reason

    # --- read by the main loop ----------------------------------------------------------------
    def all_done(self) -> bool:
        with self._lock:
            return all(r.done for r in self.runs)

    def busy(self, now: float) -> bool:
        """A switch is running, or a window has started and not finished yet."""
        with self._lock:
            return any(
                not r.done and (r.state == "running" or r.planned.at.timestamp() <= now)
                for r in self.runs
            )

    def next_waiting(self) -> WindowRun | None:
        with self._lock:
            waiting = [r for r in self.runs if r.state == "waiting"]
        return min(waiting, key=lambda r: r.planned.at) if waiting else None

    def judge(self, samples: list[Sample]) -> None:
        """Floor verdicts of every finished run from the emulator's timeline."""
        series = _series(samples)
        for run in self.runs:
            if run.started is None:
                continue
            end = run.finished if run.finished is not None else self._now()
            members = self.members.get(run.planned.schedule, set())
            run.verdicts = [
                judge_floor(rule, members, series, run.started, end) for rule in run.floors
            ]


def cluster_totals(
    current: dict[tuple[str, str], tuple[int, int]], members: Iterable[str]
) -> dict[str, tuple[int, int]]:
    """(ready, assigned) per cluster summed over a team's workloads, from timeline.current()."""
    wanted = set(members)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (workload, cluster), (assigned, ready) in current.items():
        if workload in wanted:
            totals[cluster][0] += ready
            totals[cluster][1] += assigned
    return {c: (v[0], v[1]) for c, v in sorted(totals.items())}


# --- floors judged from the timeline ------------------------------------------------------

Series = dict[str, dict[str, list[tuple[float, int, int]]]]  # workload -> cluster -> samples


def _series(samples: list[Sample]) -> Series:
    out: Series = defaultdict(lambda: defaultdict(list))
    for s in samples:
        out[str(s["workload"])][str(s["cluster"])].append(
            (float(s["t"]), int(s["assigned"]), int(s["ready"]))
        )
    return out


def _at(points: list[tuple[float, int, int]], t: float) -> tuple[int, int]:
    """(assigned, ready) in force at t (the last sample at or before t)."""
    value = (0, 0)
    for when, assigned, ready in points:
        if when > t:
            break
        value = (assigned, ready)
    return value


def _during(
    points: list[tuple[float, int, int]], start: float, end: float
) -> list[tuple[float, int, int]]:
    first = _at(points, start)
    return [(start, *first)] + [p for p in points if start < p[0] <= end]


def judge_floor(
    rule: FloorRule, members: set[str], series: Series, start: float, end: float
) -> FloorVerdict:
    """The lowest ready replicas the rule's clusters saw during [start, end], and the verdict."""
    if rule.min_available_percent is not None:
        return _judge_percent(rule, members, series, start, end)
    required = rule.min_ready_replicas or 0
    low: int | None = None
    for workload in sorted(members):
        clusters = series.get(workload, {})
        if rule.every_cluster:
            names = [
                c for c, pts in clusters.items() if _at(pts, start)[0] > 0 and _at(pts, end)[0] > 0
            ]
        else:
            names = list(rule.named_clusters())
        for cluster in names:
            for _, _, ready in _during(clusters.get(cluster, []), start, end):
                low = ready if low is None else min(low, ready)
    label = "*" if rule.every_cluster else ",".join(rule.named_clusters())
    return FloorVerdict(rule.describe(), label, required, low, low is not None and low < required)


def _judge_percent(
    rule: FloorRule, members: set[str], series: Series, start: float, end: float
) -> FloorVerdict:
    percent = rule.min_available_percent or 0.0
    low: float | None = None
    breached = False
    for workload in sorted(members):
        clusters = series.get(workload, {})
        replicas = sum(_at(pts, start)[0] for pts in clusters.values())
        if replicas <= 0:
            continue
        times = sorted(
            {start} | {t for pts in clusters.values() for t, _, _ in pts if start < t <= end}
        )
        for t in times:
            ready = sum(_at(pts, t)[1] for pts in clusters.values())
            share = 100.0 * ready / replicas
            low = share if low is None else min(low, share)
            breached |= ready < math.ceil(replicas * percent / 100 - 1e-9)
    return FloorVerdict(
        rule.describe(), "", percent, None if low is None else round(low, 1), breached
    )
