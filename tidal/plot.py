"""The picture of a run: ready (solid) and desired (dashed) replicas per cluster over time,
the floors as horizontal lines, each wave a shaded span. PNG through matplotlib's Agg backend
(no display); matplotlib is optional (`pip install 'tidal[plot]'`), and without it
`PlotUnavailable` says so in one line.

The data is plain (Panel, Series, FloorLine, WaveSpan): `tidal status --plot` fills it from a
run's journal, `tidal demo` from the emulator's timeline, the benchmarks share the loader and
the colours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidal.domain.floors import FloorRule

INSTALL = "pip install 'tidal[plot]'"
COLORS = {
    "cluster-a": "tab:blue",
    "cluster-b": "tab:orange",
    "cluster-c": "tab:green",
    "total": "tab:gray",
}
_MORE = ("tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:red")
_WAVE = {"succeeded": "tab:green", "failed": "tab:red", "rolledBack": "tab:olive"}


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or PlotUnavailable naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(
            f"drawing needs matplotlib, which is not installed: {INSTALL}"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def color(cluster: str, order: Sequence[str] = ()) -> str:
    """One colour per cluster, the same in every picture for the three demo clusters."""
    if cluster in COLORS:
        return COLORS[cluster]
    index = list(order).index(cluster) if cluster in order else len(cluster)
    return _MORE[index % len(_MORE)]


@dataclass(frozen=True)
class Series:
    """One cluster: (seconds, ready, desired) at each change."""

    cluster: str
    points: tuple[tuple[float, int, int], ...]


@dataclass(frozen=True)
class FloorLine:
    value: float
    label: str
    cluster: str | None = None  # drawn in the cluster's colour; None: black


@dataclass(frozen=True)
class WaveSpan:
    label: str
    start: float
    end: float
    result: str = "succeeded"


@dataclass(frozen=True)
class Panel:
    title: str
    series: tuple[Series, ...]
    floors: tuple[FloorLine, ...] = ()
    waves: tuple[WaveSpan, ...] = ()
    notes: tuple[str, ...] = field(default=())  # lines under the title (e.g. % floors)


def floor_lines(floors: Sequence[FloorRule]) -> tuple[tuple[FloorLine, ...], tuple[str, ...]]:
    """Lines for ready-replica floors (per workload, so a line at k), notes for the others."""
    lines: list[FloorLine] = []
    notes: list[str] = []
    for rule in floors:
        if rule.min_available_percent is not None:
            notes.append(
                f"floor: {rule.min_available_percent:g}% of each workload's replicas ready"
            )
            continue
        k = rule.min_ready_replicas or 0
        if rule.every_cluster:
            lines.append(FloorLine(k, f"floor: {k} ready per workload, each cluster kept"))
        for cluster in rule.named_clusters():
            lines.append(FloorLine(k, f"floor: {k} ready per workload in {cluster}", cluster))
    return tuple(lines), tuple(notes)


def _draw(ax: Any, panel: Panel, legend: bool = True) -> None:
    names = [s.cluster for s in panel.series]
    for span in panel.waves:
        ax.axvspan(
            span.start,
            max(span.end, span.start + 0.1),
            alpha=0.10,
            color=_WAVE.get(span.result, "tab:gray"),
            linewidth=0,
        )
        ax.annotate(
            span.label,
            (span.start, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -10),
            textcoords="offset points",
            fontsize=7,
            color="dimgray",
        )
    for s in panel.series:
        if not s.points:
            continue
        xs = [p[0] for p in s.points]
        c = color(s.cluster, names)
        ax.step(xs, [p[1] for p in s.points], where="post", color=c, label=f"{s.cluster} ready")
        ax.step(
            xs,
            [p[2] for p in s.points],
            where="post",
            color=c,
            linestyle="--",
            linewidth=0.9,
            label=f"{s.cluster} desired",
        )
    for floor in panel.floors:
        ax.axhline(
            floor.value,
            linestyle=":",
            linewidth=1.0,
            color=color(floor.cluster, names) if floor.cluster else "black",
            label=floor.label,
        )
    title = panel.title + "".join(f"\n{n}" for n in panel.notes)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("replicas")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if legend and (panel.series or panel.floors):
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))


def draw(
    path: Path,
    panels: Sequence[Panel],
    *,
    columns: int = 1,
    xlabel: str = "seconds since the run began",
    title: str = "",
) -> Path:
    """Write the panels as a PNG at `path`, `columns` to a row (each row's legend at its
    right); PlotUnavailable without matplotlib."""
    plt = pyplot()
    rows = max(1, -(-len(panels) // columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(3.4 * columns + 2.6, 2.7 * rows + 0.5), squeeze=False
    )
    for i, panel in enumerate(panels):
        row, column = divmod(i, columns)
        _draw(axes[row, column], panel, legend=column == columns - 1 or i == len(panels) - 1)
    for i in range(len(panels), rows * columns):
        axes[divmod(i, columns)].axis("off")
    for ax in axes[-1, :]:
        ax.set_xlabel(xlabel, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return path
