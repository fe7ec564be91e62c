"""PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tidal.plot import COLORS, pyplot

plt = pyplot()  # the Agg backend and the cluster colours of tidal's own run pictures

Steps = Mapping[str, Sequence[tuple[float, float]]]


def _steps(ax: Any, series: Steps, *, total: float | None = None) -> None:
    for name, pts in series.items():
        if not pts:
            continue
        xs, ys = zip(*pts, strict=True)
        ax.step(xs, ys, where="post", label=f"{name} ready", color=COLORS.get(name))
    if series and all(series.values()):
        merged = _sum(series)
        xs, ys = zip(*merged, strict=True)
        ax.step(xs, ys, where="post", label="total ready", color=COLORS["total"], linestyle="--")
    if total is not None:
        ax.axhline(total, color="black", linewidth=0.6, linestyle=":", label="desired")
    ax.grid(alpha=0.3)


def _sum(series: Steps) -> list[tuple[float, float]]:
    times = sorted({t for pts in series.values() for t, _ in pts})
    out = []
    for t in times:
        value = 0.0
        for pts in series.values():
            current = 0.0
            for pt, v in pts:
                if pt <= t:
                    current = v
                else:
                    break
            value += current
        out.append((t, value))
    return out


def arms_plot(path: Path, arms: Mapping[str, Steps], title: str, desired: float) -> Path:
    """One panel per arm: ready replicas per cluster over simulated time since the switch."""
    fig, axes = plt.subplots(1, len(arms), figsize=(5.2 * len(arms), 3.6), sharey=True)
    axes = [axes] if len(arms) == 1 else list(axes)
    xmax = max((pts[-1][0] for s in arms.values() for pts in s.values() if pts), default=1.0)
    for ax, (name, series) in zip(axes, arms.items(), strict=True):
        # hold each arm's final state to the common right edge
        held = {
            c: [*pts, (xmax, pts[-1][1])] if pts and pts[-1][0] < xmax else list(pts)
            for c, pts in series.items()
        }
        _steps(ax, held, total=desired)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("simulated seconds since the switch began")
        ax.set_xlim(0, xmax)
    axes[0].set_ylabel("ready replicas")
    axes[0].legend(fontsize=7, loc="center right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def growth_plot(
    path: Path,
    sizes: Sequence[int],
    lines: Mapping[str, Sequence[float]],
    memory: Sequence[float] | None,
    title: str,
) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for name, values in lines.items():
        ax.plot(sizes, values, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("workloads")
    ax.set_ylabel("wall seconds")
    ax.grid(alpha=0.3, which="both")
    if memory is not None:
        ax2 = ax.twinx()
        ax2.plot(
            sizes,
            memory,
            marker="s",
            color="tab:green",
            linestyle="--",
            label="plan peak MB (right)",
        )
        ax2.set_ylabel("peak MB (tracemalloc)")
        ax2.set_yscale("log")
        ax2.legend(loc="lower right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def bars_plot(
    path: Path,
    labels: Sequence[str],
    values: Sequence[float],
    title: str,
    ylabel: str,
    log: bool = False,
) -> Path:
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    ax.bar(labels, values, color=["tab:green" if "tidal" in lab else "tab:red" for lab in labels])
    if log:
        ax.set_yscale("log")
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
