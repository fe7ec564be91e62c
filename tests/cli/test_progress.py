"""The live view of `tidal switch` on a terminal: per wave and cluster, counts that are right."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from tidal.cli.progress import SwitchView
from tidal.engine import events as ev
from tidal.engine.states import Gate, RunResult, Trigger, WaveResult

BASE: dict[str, Any] = {"schedule": "team-a", "window": "day", "run_id": "r1"}


def _text(view: SwitchView) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(view.render())
    return console.export_text()


def _day_switch(view: SwitchView) -> None:
    """A day switch's wave 1: 5 workloads moving back to cluster-a, the destination, whose
    pods are not ready yet; cluster-b keeps 5 of its 19 ready."""
    view.apply(ev.RunStarted(**BASE, workloads=5, waves=1, trigger=Trigger.TOUCH))
    view.apply(
        ev.WaveStarted(
            **BASE, wave=1, workloads=tuple(f"w{i}" for i in range(5)), trigger=Trigger.TOUCH
        )
    )
    view.apply(
        ev.WaveProgress(
            **BASE,
            wave=1,
            ready={"cluster-b": 19},
            assigned={"cluster-a": 15, "cluster-b": 5},
            converged=0,
            total=5,
        )
    )


def test_the_destination_cluster_shows_before_any_of_its_pods_is_ready() -> None:
    """Ready over desired per cluster: cluster-a 0/15 is shown, cluster-b counts 5/5 with
    the 14 beyond what it keeps as leaving (never 19/5)."""
    view = SwitchView()
    _day_switch(view)
    text = _text(view)
    assert "cluster-a 0/15" in text
    assert "cluster-b 5/5 (14 leaving)" in text and "19/5" not in text
    assert "0/5" in text and "running" in text


def test_a_converged_wave_counts_every_workload_converged() -> None:
    """Once the converged gate passes and the wave succeeds, the row says 5/5 converged and
    the last ready counts, not the first progress' 0/5."""
    view = SwitchView()
    _day_switch(view)
    view.apply(ev.GatePassed(**BASE, wave=1, gate=Gate.CONVERGED))
    view.apply(
        ev.WaveProgress(
            **BASE,
            wave=1,
            ready={"cluster-a": 15, "cluster-b": 5},
            assigned={"cluster-a": 15, "cluster-b": 5},
            converged=5,
            total=5,
        )
    )
    view.apply(ev.WaveFinished(**BASE, wave=1, result=WaveResult.SUCCEEDED))
    line = view.apply(ev.RunFinished(**BASE, result=RunResult.SUCCEEDED))
    text = _text(view)
    (row,) = [r for r in text.splitlines() if "succeeded" in r]
    assert "5/5" in row and "cluster-a 15/15" in row and "cluster-b 5/5" in row
    assert "leaving" not in row
    assert line == ("run succeeded", "green")
