"""The two moving parts of `tidal status`: `--watch` (re-read the journal and the bindings
every --interval seconds and show tidal.cli.watch's view) and `--plot FILE` (the picture of a
schedule's latest run, tidal.cli.picture drawn by tidal.plot).

Watching on a terminal draws the view in place on stdout (logs stay on stderr); off a terminal
(or with `-o json`) it prints one JSON document a line, `{"at": ..., "runs": [...]}`, at the
first refresh and at every refresh whose figures changed. Ctrl-C ends it (exit 0);
`--until-done` ends it when every watched run has finished (exit 0 all succeeded, 2 one did
not).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK, WAVE_FAILED
from tidal.cli.watch import document, floor_notes, run_rows, template_key, view_of
from tidal.domain.floors import FloorRule
from tidal.engine.journal import RunState
from tidal.engine.states import RunResult


def floors_of(item: Any, window: str) -> list[FloorRule]:
    """The floors of a loaded schedule's window (none when the window is gone from the file)."""
    try:
        rollout = item.schedule.rollout_for(window)
    except KeyError:
        return []
    return [FloorRule.from_model(f) for f in rollout.floors]


def read_bindings(client: Any, state: RunState) -> dict[str, Any]:
    """The bindings of the run's namespaces (one list each), by the template they bind."""
    from tidal.karmada.bindings import list_bindings

    out: dict[str, Any] = {}
    for namespace in sorted({k.namespace for w in state.waves for k in w.workloads}):
        items, _ = list_bindings(client, namespace or None, cluster_scoped=not namespace)
        for binding in items:
            out[template_key(binding)] = binding
    return out


class Watcher:
    """One refresh: the latest run of each watched schedule, with its rows and floor notes."""

    def __init__(self, client: Any, store: Any, items: Sequence[Any]) -> None:
        self.client, self.store, self.items = client, store, list(items)

    def refresh(self) -> list[tuple[RunState, list[Any], list[str]]]:
        out = []
        for item in self.items:
            state = self.store.load(item.schedule.name)
            if state is None:
                continue
            bindings = read_bindings(self.client, state)
            floors = floors_of(item, state.window)
            out.append((state, run_rows(state, bindings), floor_notes(state, bindings, floors)))
        return out


def _renderable(runs: list[tuple[RunState, list[Any], list[str]]]) -> Any:
    from rich.console import Group
    from rich.text import Text

    if not runs:
        return Text("no run of the schedules watched yet")
    parts: list[Any] = []
    for state, rows, notes in runs:
        parts.append(view_of(state, rows).render())
        parts += [Text(n) for n in notes]
        if state.reason:
            parts.append(Text(state.reason, style="red"))
    return Group(*parts)


def _finished(runs: list[tuple[RunState, list[Any], list[str]]]) -> int | None:
    """The exit code once every watched run has finished, else None."""
    if not runs or not all(state.finished for state, _, _ in runs):
        return None
    return OK if all(s.result is RunResult.SUCCEEDED for s, _, _ in runs) else WAVE_FAILED


def watch(
    watcher: Watcher,
    *,
    interval: float,
    until_done: bool,
    width: int | None,
    lines: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Refresh until Ctrl-C (or, with until_done, the runs' end); the exit code. `lines`: JSON
    lines even on a terminal (`-o json`)."""
    try:
        if sys.stdout.isatty() and not lines:
            return _watch_live(watcher, interval, until_done, width, sleep)
        return _watch_lines(watcher, interval, until_done, sleep)
    except KeyboardInterrupt:
        return OK


def _watch_live(
    watcher: Watcher,
    interval: float,
    until_done: bool,
    width: int | None,
    sleep: Callable[[float], None],
) -> int:
    from rich.console import Console
    from rich.live import Live

    console = Console(width=width)
    with Live(_renderable([]), console=console, auto_refresh=False) as live:
        while True:
            runs = watcher.refresh()
            live.update(_renderable(runs), refresh=True)
            done = _finished(runs)
            if until_done and done is not None:
                return done
            sleep(interval)


def _watch_lines(
    watcher: Watcher, interval: float, until_done: bool, sleep: Callable[[float], None]
) -> int:
    last: list[dict[str, Any]] | None = None
    while True:
        runs = watcher.refresh()
        docs = [document(state, rows, notes) for state, rows, notes in runs]
        if docs != last:
            at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            click.echo(json.dumps({"at": at, "runs": docs}, separators=(",", ":")))
            sys.stdout.flush()
            last = docs
        done = _finished(runs)
        if until_done and done is not None:
            return done
        sleep(interval)


def plot(store: Any, item: Any, path: Path) -> Path:
    """The picture of the schedule's latest run at `path`; a one-line error and exit 1 when
    there is no run or no matplotlib."""
    from tidal.cli.picture import run_panel
    from tidal.plot import PlotUnavailable, draw

    state = store.load(item.schedule.name)
    if state is None:
        click.echo(
            f"error: {item.schedule.name} has no run to draw yet (`tidal status` shows "
            "its next start)",
            err=True,
        )
        raise SystemExit(INVALID_INPUT)
    try:
        return draw(path, [run_panel(state, floors_of(item, state.window))])
    except PlotUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    except OSError as exc:
        click.echo(
            f"error: cannot write {path}: {exc.strerror or exc}; pass --plot a writable file",
            err=True,
        )
        raise SystemExit(INVALID_INPUT) from None
