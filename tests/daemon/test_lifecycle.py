"""The daemon's lifecycle table: stages start in table order and stop by their stop rank."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tidal.daemon.app import Daemon, Wiring
from tidal.daemon.lifecycle import Lifecycle, Stage
from tidal.karmada.client import KarmadaClient
from tidal.settings import load_settings


def _recording(calls: list[str], name: str, rank: int | None, enabled: bool = True) -> Stage:
    return Stage(
        name,
        lambda: calls.append(f"start {name}"),
        lambda grace: calls.append(f"stop {name} {grace:g}"),
        f"{name} test",
        stop_rank=rank,
        enabled=lambda: enabled,
    )


def test_stages_start_in_order_and_stop_by_rank() -> None:
    """Start walks the table; stop walks the ranks, skipping stages that never started."""
    calls: list[str] = []
    life = Lifecycle(
        [
            _recording(calls, "a", 2),
            _recording(calls, "b", None),
            _recording(calls, "c", 1),
            _recording(calls, "off", 3, enabled=False),
        ]
    )
    life.start()
    life.stop(7)
    assert calls == ["start a", "start b", "start c", "stop c 7", "stop a 7"]


def test_a_table_with_a_name_or_rank_twice_is_refused() -> None:
    """Two stages of one name, or sharing a stop rank, are a wiring bug caught at build."""
    calls: list[str] = []
    with pytest.raises(ValueError, match="named twice"):
        Lifecycle([_recording(calls, "a", 1), _recording(calls, "a", 2)])
    with pytest.raises(ValueError, match="stop ranks used twice"):
        Lifecycle([_recording(calls, "a", 1), _recording(calls, "b", 1)])


@pytest.mark.e2e
def test_the_daemon_table_is_the_documented_order(emulator: Any, tmp_path: Path) -> None:
    """Start: HTTP before the scheduler, the first load before the watcher, sweeper and lease;
    stop: the scheduler first, the Lease after the runs, HTTP last (docs/architecture.md)."""
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    settings = load_settings(schedules=tmp_path, port=0, identity="a")
    life = Daemon(settings, client=client, wiring=Wiring(watch=False)).lifecycle
    assert [s.name for s in life.stages] == [
        "state namespace",
        "http",
        "queue publisher",
        "dispatcher",
        "window scheduler",
        "first load",
        "schedules watcher",
        "sweeper",
        "leadership",
    ]
    assert [s.name for s in life.stop_order()] == [
        "window scheduler",
        "schedules watcher",
        "dispatcher",
        "queue publisher",
        "sweeper",
        "leadership",
        "http",
    ]
    assert all(s.stopped_by for s in life.stop_order())
