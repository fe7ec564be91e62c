"""A switch made by hand (`tidal switch`) before the daemon ran is the operator's intent."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.daemon.test_daemon import NIGHT, NS, FakeEngine, client, make_daemon, sched_dir
from tidal.daemon.state import StateStore
from tidal.domain.clock import FakeClock
from tidal.engine.journal import RunState
from tidal.engine.states import Phase, RunResult
from tidal.karmada.client import KarmadaClient
from tidal.metrics import Metrics

pytestmark = pytest.mark.e2e
__all__ = ["client", "sched_dir"]  # the fixtures, shared with test_daemon


def test_a_manual_switch_to_the_other_window_raises_no_window_missed(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """`tidal switch --window day` ran an hour after the night start; the daemon comes up an
    hour later (the night start is past catchUpWindow): no window_missed, no run over the
    operator's switch, the manual run recorded as the one handled."""
    manual = RunState(schedule="team-a", window="day", run_id="20260601-160000-abcd")
    manual.phase, manual.result = Phase.DONE, RunResult.SUCCEEDED
    manual.started_at = (NIGHT + timedelta(hours=1)).isoformat()
    manual.finished_at = (NIGHT + timedelta(hours=1, minutes=3)).isoformat()
    StateStore(client, NS).save(manual)
    clock, engine, metrics = FakeClock(NIGHT + timedelta(hours=2)), FakeEngine(), Metrics()
    daemon = make_daemon(client, sched_dir, clock, engine, metrics=metrics)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "startup")
        daemon.reconciler("team-a", "resync")
    assert engine.calls == []
    assert not any(e["event"] == "window_missed" for e in logs)
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None
    assert (handled.window, handled.outcome, handled.run_id) == ("day", "succeeded", manual.run_id)
    labels = {"schedule": "team-a", "window": "night"}
    assert not metrics.registry.get_sample_value("tidal_windows_missed_total", labels)
