"""Showing the demo: live progress while the switches run, then the summary.

On a terminal a rich Live view (one row per schedule window: state, wave, gates, ready
replicas per cluster, floor margin; below it the latest happenings). Elsewhere (CI, a pipe)
the same happenings as plain lines, one per event that matters.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tidal.engine.events import (
    EngineEvent,
    FloorBreached,
    PolicyChanged,
    RunFinished,
    RunStarted,
    RunWarning,
    WaveFinished,
    WaveStarted,
    WorkloadSkipped,
    policy_action_text,
)
from tidal_sim.demo.picture import TeamSplit, split_text
from tidal_sim.demo.tracking import FloorVerdict, Tracker, WindowRun

Totals = Callable[[str], dict[str, tuple[int, int]]]  # schedule -> cluster -> (ready, assigned)
STYLE = {
    "waiting": "dim",
    "running": "bold cyan",
    "succeeded": "bold green",
    "failed": "bold red",
    "rolledBack": "bold yellow",
    "refused": "bold red",
    "timeout": "bold red",
    "interrupted": "bold yellow",
}
GATES = ("triggered", "scheduled", "converged", "floors")


def clock_text(sim_now: float) -> str:
    return datetime.fromtimestamp(sim_now, tz=UTC).strftime("%H:%M:%SZ")


def ready_text(totals: dict[str, tuple[int, int]]) -> str:
    return "  ".join(f"{c} {r}/{a}" for c, (r, a) in totals.items())


def describe(run: WindowRun, event: EngineEvent | None, note: str, totals: Totals) -> str | None:
    """One line for an event worth a line (None for the rest: gates, progress, samples)."""
    who = f"{run.planned.schedule} {run.planned.window}"
    if event is None:
        what = "NOT started" if run.state == "refused" else "stopped"
        return f"{who}: switch {what}: {note}"
    if isinstance(event, RunStarted):
        verb = "resumed" if event.resumed else "started"
        return (
            f"{who}: switch {verb}: {event.workloads} workloads in {event.waves} waves, "
            f"trigger {event.trigger}"
        )
    if isinstance(event, PolicyChanged):
        lazy = " (activationPreference Lazy while the waves run)" if event.lazy_added else ""
        return f"{who}: {event.kind} {event.policy}: {policy_action_text(event.action)}{lazy}"
    if isinstance(event, WaveStarted):
        kind = "rollback wave" if event.rollback else "wave"
        return (
            f"{who}: {kind} {event.wave}/{run.waves_total}: {len(event.workloads)} "
            f"workloads, trigger {event.trigger}"
        )
    if isinstance(event, WaveFinished):
        return _wave_finished(who, run, event, totals)
    return _run_line(who, event)


def _wave_finished(who: str, run: WindowRun, event: WaveFinished, totals: Totals) -> str:
    if event.result != "succeeded":
        return f"{who}: wave {event.wave} {event.result}: {event.reason}"
    floors = "  ".join(f"floor {c}: min {m}" for c, m in sorted(run.engine_min.items()))
    return (
        f"{who}: wave {event.wave}/{run.waves_total} succeeded in "
        f"{event.duration_seconds:.0f}s, gates {' > '.join(run.gates)}; ready "
        f"{ready_text(totals(run.planned.schedule))}" + (f"; {floors}" if floors else "")
    )


def _run_line(who: str, event: EngineEvent) -> str | None:
    """Floor breaches, the run's end, workloads left out and warnings (None: no line)."""
    if isinstance(event, FloorBreached):
        return (
            f"{who}: FLOOR BREACHED in {event.cluster}: {event.workload} has "
            f"{event.ready} ready, needs {event.required} ({event.floor})"
        )
    if isinstance(event, RunFinished):
        how = f" ({event.reason})" if event.reason else ""
        return f"{who}: switch {event.result} after {event.duration_seconds:.0f}s (simulated){how}"
    if isinstance(event, WorkloadSkipped):
        return f"{who}: {event.workload} left out ({event.reason})"
    if isinstance(event, RunWarning):
        return f"{who}: warning: {event.message}"
    return None


class PlainProgress:
    """Lines, for pipes and CI logs."""

    def __init__(self, stream: TextIO, totals: Totals, sim_now: Callable[[], float]) -> None:
        self.stream, self.totals, self.sim_now = stream, totals, sim_now
        self._lock = threading.Lock()

    def start(self, tracker: Tracker) -> None:
        pass

    def note(self, text: str) -> None:
        with self._lock:
            print(f"[{clock_text(self.sim_now())}] {text}", file=self.stream, flush=True)

    def on_run(self, run: WindowRun, event: EngineEvent | None, note: str) -> None:
        line = describe(run, event, note, self.totals)
        if line is not None:
            self.note(line)

    def stop(self) -> None:
        pass


class LiveProgress:
    """A rich Live view for a terminal."""

    def __init__(
        self, console: Console, totals: Totals, sim_now: Callable[[], float], title: str
    ) -> None:
        self.console, self.totals, self.sim_now, self.title = console, totals, sim_now, title
        self.lines: deque[Text] = deque(maxlen=10)
        self._lock = threading.Lock()
        self._tracker: Tracker | None = None
        self._live: Live | None = None
        self._final: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}

    def start(self, tracker: Tracker) -> None:
        self._tracker = tracker
        self._live = Live(
            get_renderable=self._render, console=self.console, refresh_per_second=4, transient=False
        )
        self._live.start()

    def note(self, text: str) -> None:
        style = "red" if "BREACHED" in text or "NOT started" in text or "stopped" in text else ""
        with self._lock:
            self.lines.append(Text(f"{clock_text(self.sim_now())}  {text}", style=style))

    def on_run(self, run: WindowRun, event: EngineEvent | None, note: str) -> None:
        if isinstance(event, RunFinished) or event is None:
            self._final[run.key] = self.totals(run.planned.schedule)  # as the run left it
        line = describe(run, event, note, self.totals)
        if line is not None:
            self.note(line)

    def stop(self) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    def _render(self) -> Any:
        table = Table(
            title=f"{self.title}   simulated time {clock_text(self.sim_now())}",
            title_justify="left",
            expand=False,
        )
        for name in (
            "schedule",
            "window",
            "state",
            "wave",
            "gates",
            "ready / assigned",
            "floor (lowest ready)",
        ):
            table.add_column(name)
        if self._tracker is not None:
            for run in self._tracker.runs:
                table.add_row(*self._row(run))
        with self._lock:
            lines = list(self.lines)
        return Group(table, *lines)

    def _row(self, run: WindowRun) -> list[Any]:
        gates = Text()
        if run.state == "running":
            for gate in GATES:
                gates.append(f"{gate} ", style="green" if gate in run.gates else "dim")
        wave = f"{run.wave or 0}/{run.waves_total}" if run.waves_total else ""
        if run.state == "waiting":
            state = Text(f"starts {run.planned.at:%H:%M:%S}Z", style=STYLE["waiting"])
        else:
            state = Text(run.state, style=STYLE.get(run.state, ""))
        totals = (
            {}
            if run.state == "waiting"
            else (self._final.get(run.key) or self.totals(run.planned.schedule))
        )
        ready = "\n".join(f"{c} {r}/{a}" for c, (r, a) in totals.items())
        floor = _floor_cell(run)
        return [run.planned.schedule, run.planned.window, state, wave, gates, ready, floor]


def _floor_cell(run: WindowRun) -> str:
    """The floor column: each cluster's lowest ready against its floor, and BREACHED."""
    required = {c: rule.min_ready_replicas for rule in run.floors for c in rule.named_clusters()}
    lines = [f"{c} {m} (needs {required.get(c, '?')})" for c, m in sorted(run.engine_min.items())]
    lines += [
        f"each kept cluster (needs {rule.min_ready_replicas})"
        for rule in run.floors
        if rule.every_cluster and run.state != "waiting"
    ]
    if run.engine_breaches:
        lines.append("BREACHED")
    return "\n".join(lines)


def floor_text(verdict: FloorVerdict) -> str:
    if not verdict.cluster:
        return f">= {verdict.required:g}% available"
    where = "each kept cluster" if verdict.cluster == "*" else verdict.cluster
    return f"{where} >= {verdict.required:g} ready"


def summary_table(tracker: Tracker) -> Table:
    table = Table(title="tidal demo: summary", title_justify="left")
    for name in ("schedule", "window", "result", "waves", "floor", "lowest ready", "breached"):
        table.add_column(name)
    for run in tracker.runs:
        verdicts = run.verdicts or []
        floors = "\n".join(floor_text(v) for v in verdicts) or "-"
        lowest = (
            "\n".join(
                "-" if v.min_ready is None else f"{v.min_ready:g}{'%' if not v.cluster else ''}"
                for v in verdicts
            )
            or "-"
        )
        breached = "yes" if run.floor_breached else "no"
        result = Text(run.state, style=STYLE.get(run.state, ""))
        if run.reason and not run.ok:
            result.append(f"\n{run.reason[:300]}", style="")
        table.add_row(
            run.planned.schedule,
            run.planned.window,
            result,
            f"{run.waves_done}/{run.waves_total}",
            floors,
            lowest,
            Text(breached, style="bold red" if run.floor_breached else "green"),
        )
    return table


def splits_table(splits: list[TeamSplit]) -> Table:
    """Where each team's ready replicas were per cluster: at the start, after each switch."""
    windows = list(dict.fromkeys(w for s in splits for w in s.after))
    table = Table(title="where each team ran (ready replicas per cluster)", title_justify="left")
    for name in ("schedule", "at the start", *(f"after {w}" for w in windows)):
        table.add_column(name)
    for split in splits:
        table.add_row(
            split.schedule,
            split_text(split.start),
            *(split_text(split.after.get(w)) for w in windows),
        )
    return table
