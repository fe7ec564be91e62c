"""The sweep's metrics: leftovers counted per kind and schedule, overdue past the alert age,
except a temporary Lazy of a schedule the daemon runs (a run of its window lifts it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tidal.daemon.sweeping import SweepReport
from tidal.engine.sweeper import Leftover, LeftoverKind, SweepAction, SweepResult

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _kept(kind: LeftoverKind, schedule: str, age: float) -> SweepAction:
    leftover = Leftover(kind, f"x/{schedule}/{age}", schedule, "r1", NOW - timedelta(seconds=age))
    return SweepAction(leftover, SweepResult.KEPT, "why")


def test_overdue_counts_old_leftovers_but_not_a_lazy_its_own_runs_lift() -> None:
    """Two overrides (one 20 min old) and two Lazy (of a loaded and of a removed schedule,
    both old): overdue are the old override and the removed schedule's Lazy."""
    report = SweepReport(
        NOW,
        [
            _kept(LeftoverKind.OVERRIDE, "a", 1200),
            _kept(LeftoverKind.OVERRIDE, "a", 60),
            _kept(LeftoverKind.LAZY, "a", 5000),
            _kept(LeftoverKind.LAZY, "gone", 5000),
            SweepAction(Leftover(LeftoverKind.BRIDGE, "b", "a", "r1", NOW), SweepResult.RESTORED),
        ],
    )
    assert report.counts(900, loaded={"a"}) == {
        ("override", "a"): (2, 1),
        ("lazy", "a"): (1, 0),
        ("lazy", "gone"): (1, 1),
    }
