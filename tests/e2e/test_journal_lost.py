"""The run-state ConfigMap deleted mid-run: the engine stops acting (journal_lost, counted);
the policy's marks let the next pass find the run and carry it to the end: every workload
moved, the Lazy taken off, the run recorded as succeeded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    WORKLOADS,
    daemon_metrics,
    log_events,
    settled_team,
    start_daemon,
    stop_all,
    stored_run,
    wait_for,
    write_due_schedule,
)
from tests.e2e.switch_helpers import latest
from tidal.daemon.state import StateStore, run_object_name
from tidal.karmada import policies
from tidal.karmada.client import KNOWN, KarmadaClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
CONFIGMAPS = next(r for r in KNOWN if r.plural == "configmaps")


def test_deleted_journal_mid_run_is_reported_and_the_run_finished(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Delete tidal-run-team-t1 after wave 1: journal_lost logged and counted; the next pass
    finds the run by its policy marks and finishes it under the same run id."""
    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="3s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    proc = start_daemon(emu, tmp_path, "a", schedules, TIDAL_SCHEDULER__RESYNC_SECONDS="1")
    try:

        def first_wave_done() -> bool:
            run = stored_run(client)
            return run is not None and run.phase == "waves" and len(run.completed_waves) == 1

        wait_for(first_wave_done, 120, "the first wave")
        first = stored_run(client)
        assert first is not None
        client.request(
            "delete", CONFIGMAPS, "DELETE", CONFIGMAPS.path(STATE_NS, run_object_name("team-t1"))
        )

        def finished() -> bool:
            run = stored_run(client)
            return run is not None and run.finished

        wait_for(finished, 150, "the run to be carried on to the end")
        run = stored_run(client)
        assert run is not None and run.run_id == first.run_id and run.result == "succeeded"

        def recorded() -> bool:  # the handled record is written just after the run state
            handled = StateStore(client, STATE_NS).read("team-t1").handled
            return handled is not None and handled.outcome == "succeeded"

        wait_for(recorded, 30, "the window start recorded as succeeded")
        policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
        assert "activationPreference" not in policy["spec"]
        assert not {k for k in policy["metadata"].get("annotations", {}) if "lazy" in k}
        now = latest(emu)
        assert all(now.get((w, "cluster-a"), (0, 0))[0] == 0 for w in {w for w, _ in now}), now
        assert len({w for w, _ in now}) == WORKLOADS
        events = log_events(tmp_path / "a.log")
        lost = [e for e in events if e.get("event") == "journal_lost"]
        assert lost and lost[0]["reason"] == "journal_lost" and lost[0]["level"] == "error"
        assert 'tidal_journal_lost_total{schedule="team-t1"} 1.0' in daemon_metrics(events)
    finally:
        stop_all([proc])
