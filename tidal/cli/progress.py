"""The live view of a switch on a terminal: one row per wave, ready / desired replicas per
cluster (the clusters a wave moves to included before any pod of theirs is ready), built from
the engine's events and drawn with rich's Live display. Lines worth keeping (policy changes,
workloads left out, floor breaches, the result) print above it; logs are not mixed in."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tidal.domain.outcomes import Gate, RunResult, WaveResult
from tidal.engine import events as ev


class WaveState(StrEnum):
    WAITING = "waiting"  # not started yet (tidal status --watch)
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ROLLED_BACK = "rolled back"


_STYLE = {
    WaveState.WAITING: "dim",
    WaveState.RUNNING: "bold",
    WaveState.SUCCEEDED: "green",
    WaveState.FAILED: "red",
    WaveState.ROLLED_BACK: "yellow",
}


@dataclass
class WaveRow:
    """One wave as the view shows it."""

    index: int
    rollback: bool
    total: int
    state: WaveState = WaveState.RUNNING
    converged: int = 0
    ready: dict[str, int] = field(default_factory=dict)
    desired: dict[str, int] = field(default_factory=dict)

    def clusters(self) -> str:
        """`cluster-a 3/15  cluster-b 5/5 (14 leaving)`: ready over desired per cluster; the
        ready pods beyond what a cluster keeps are counted as leaving, not as ready."""
        parts = []
        for cluster in sorted(set(self.ready) | set(self.desired)):
            ready, desired = self.ready.get(cluster, 0), self.desired.get(cluster, 0)
            text = f"{cluster} {min(ready, desired)}/{desired}"
            if ready > desired:
                text += f" ({ready - desired} leaving)"
            parts.append(text)
        return "  ".join(parts) or "-"


class SwitchView:
    """The state of the view: what each engine event changes, and the lines to keep."""

    def __init__(self) -> None:
        self.title = ""
        self.waves: dict[tuple[int, bool], WaveRow] = {}
        self.result: str | None = None

    def apply(self, event: Any) -> tuple[str, str | None] | None:
        """Update the view with an event; a (line, style) to print above it, or None."""
        if isinstance(event, ev.RunStarted):
            self.title = (
                f"switch {event.schedule}/{event.window} run {event.run_id}: "
                f"{event.workloads} workload(s), {event.waves} wave(s), "
                f"trigger {event.trigger}"
            )
            return self.title, "bold"
        if isinstance(event, ev.PolicyChanged):
            return (
                f"policy {event.kind} {event.policy}: "
                f"{ev.policy_action_text(event.action)}" + (" (+Lazy)" if event.lazy_added else "")
            ), None
        if isinstance(event, ev.WorkloadSkipped):
            return f"left out {event.workload}: {event.reason}", "yellow"
        if isinstance(event, ev.FloorBreached):
            return (
                f"floor breached: {event.workload} {event.ready} ready in {event.cluster}, "
                f"needs {event.required}"
            ), "red"
        if isinstance(event, ev.RunFinished):
            self.result = str(event.result)
            return (
                f"run {event.result}" + (f": {event.reason}" if event.reason else ""),
                "green" if event.result == RunResult.SUCCEEDED else "red",
            )
        self._wave(event)
        return None

    def _wave(self, event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and event.wave is not None:
            self.waves[(event.wave, event.rollback)] = WaveRow(
                event.wave, event.rollback, len(event.workloads)
            )
            return
        row = self._current(event)
        if row is None:
            return
        if isinstance(event, ev.WaveProgress):
            row.ready, row.desired = dict(event.ready), dict(event.assigned)
            row.converged, row.total = event.converged, event.total or row.total
        elif isinstance(event, ev.GatePassed) and event.gate is Gate.CONVERGED:
            row.converged = row.total
        elif isinstance(event, ev.WaveFinished):
            row.state = {
                WaveResult.SUCCEEDED: WaveState.SUCCEEDED,
                WaveResult.ROLLED_BACK: WaveState.ROLLED_BACK,
            }.get(event.result, WaveState.FAILED)
            if row.state is WaveState.SUCCEEDED:
                row.converged = row.total

    def _current(self, event: Any) -> WaveRow | None:
        """The row of the wave an event is about (its rollback wave while that runs)."""
        if event.wave is None:
            return None
        flag = getattr(event, "rollback", None)
        if flag is not None:
            return self.waves.get((event.wave, flag))
        rollback = self.waves.get((event.wave, True))
        if rollback is not None and rollback.state is WaveState.RUNNING:
            return rollback
        return self.waves.get((event.wave, False))

    def render(self) -> RenderableType:
        table = Table(title=self.title or None, title_justify="left", expand=False)
        table.add_column("wave", justify="right")
        table.add_column("state")
        table.add_column("converged", justify="right")
        table.add_column("ready/desired per cluster")
        for row in self.waves.values():
            name = f"{row.index} (rollback)" if row.rollback else str(row.index)
            table.add_row(
                name,
                Text(str(row.state), style=_STYLE[row.state]),
                f"{row.converged}/{row.total}",
                row.clusters(),
            )
        return Group(table) if self.waves else Text(self.title or "starting...")


class LiveProgress:
    """The engine's on_event for a switch on a terminal: the live view on `stream`."""

    def __init__(self, stream: IO[str] | None = None, width: int | None = None) -> None:
        self.console = Console(
            file=stream or sys.stderr, markup=False, highlight=False, width=width
        )
        self.view = SwitchView()
        self.live = Live(
            self.view.render(),
            console=self.console,
            refresh_per_second=4,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> LiveProgress:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.update(self.view.render(), refresh=True)
        self.live.stop()
        if not self.console.is_terminal:
            self.console.line()  # the last frame ends its line

    def log_stream(self) -> ConsoleLines:
        """A stream for the log lines that still show (warnings): printed above the view."""
        return ConsoleLines(self.live.console)

    def __call__(self, event: Any) -> None:
        line = self.view.apply(event)
        if line is not None:
            self.live.console.print(line[0], style=line[1])
        self.live.update(self.view.render())


class ConsoleLines:
    """A text stream whose whole lines go to a rich console (above a live view), ANSI kept."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self.console.print(Text.from_ansi(line))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.console.is_terminal
