"""The picture of a run from its journal (`tidal status --plot FILE --schedule NAME`): the
samples each wave record keeps (tidal.engine.samples), the waves' start and end, the floors of
the window. Pure: from a RunState and the window's floor rules to a tidal.plot.Panel."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tidal.domain.floors import FloorRule
from tidal.engine.journal import RunState
from tidal.plot import Panel, Series, WaveSpan, floor_lines


def _at(started_at: str | None, when: str | None) -> float | None:
    if not started_at or not when:
        return None
    start = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    return round((datetime.fromisoformat(when.replace("Z", "+00:00")) - start).total_seconds(), 1)


def run_panel(state: RunState, floors: Sequence[FloorRule]) -> Panel:
    """Ready vs desired per cluster over the run's workloads, waves marked, floors drawn."""
    samples = [s for wave in state.waves for s in wave.samples]
    clusters = sorted(
        {c for s in samples for part in ("ready", "desired") for c in (s.get(part) or {})}
    )
    points = {cluster: [_point(s, cluster) for s in samples] for cluster in clusters}
    spans = _wave_spans(state, max((float(s["t"]) for s in samples), default=0.0))
    lines, notes = floor_lines(floors)
    outcome = str(state.result) if state.result is not None else f"running ({state.phase})"
    title = f"{state.schedule} / {state.window}: run {state.run_id}, {outcome}"
    if not samples:
        notes += (
            "no replica samples in this run's journal (a run from before tidal "
            "recorded them, or no wave started yet)",
        )
    return Panel(
        title, tuple(Series(c, tuple(points[c])) for c in clusters), lines, tuple(spans), notes
    )


def _point(sample: dict[str, Any], cluster: str) -> tuple[float, int, int]:
    """(seconds into the run, ready, desired) of one cluster in one sample."""
    return (
        float(sample["t"]),
        int((sample.get("ready") or {}).get(cluster, 0)),
        int((sample.get("desired") or {}).get(cluster, 0)),
    )


def _wave_spans(state: RunState, end_of_samples: float) -> list[WaveSpan]:
    """Each started wave's span; one still running ends at the last sample."""
    spans = []
    for wave in state.waves:
        start = _at(state.started_at, wave.started_at)
        if start is None:
            continue
        end = _at(state.started_at, wave.finished_at)
        result = wave.result.reported if wave.result is not None else "running"
        spans.append(
            WaveSpan(
                f"wave {wave.index}",
                start,
                end if end is not None else max(end_of_samples, start),
                result,
            )
        )
    return spans
