"""`tidal abort NAME --daemon URL` on each --karmada target: two `tidal run` replicas with the
command API on; team-1005's night (an hour between waves, onFailure rollback) is aborted after
its first wave through the STANDBY, which forwards to the leader; the run stops before wave 2,
rolls wave 1 back (the day placement again, all ready) and status shows it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.e2e.daemon_helpers import STATE_NS, log_events, stop_all, wait_for
from tests.e2e.targets import Target
from tests.e2e.test_targets_daemon import _run, day_team, due_schedule
from tests.e2e.test_targets_daemon import start_replica as daemon_replica
from tests.e2e.test_targets_static import _day_ready
from tidal.cli.main import cli
from tidal.karmada.leases import get_lease

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
NAME = "team-1005"


def start_replica(
    target: Target, tmp: Path, who: str, schedules: Path, token: Path
) -> subprocess.Popen[bytes]:
    """A replica (test_targets_daemon's) serving the command API on 127.0.0.1 with `token`."""
    return daemon_replica(
        target,
        tmp,
        who,
        schedules,
        extra_env={
            "TIDAL_LISTEN_ADDRESS": "127.0.0.1",
            "TIDAL_COMMANDS__ENABLED": "true",
            "TIDAL_COMMANDS__PORT": "0",
            "TIDAL_COMMANDS__TOKEN_FILE": str(token),
        },
    )


def command_api(tmp: Path, who: str) -> str | None:
    return next(
        (
            str(e["command_api"])
            for e in log_events(tmp / f"{who}.log")
            if e.get("event") == "daemon_started"
        ),
        None,
    )


def test_abort_through_the_standby_rolls_back(
    target: Target, fidelity: dict[str, Any], tmp_path: Path
) -> None:
    """Aborted through the standby after wave 1: no wave 2, rolledBack, the day placement back
    and all ready; status shows the run's result and reason."""
    replicas = day_team(target)
    schedules = tmp_path / "schedules"
    due_schedule(schedules, target.patience)
    path = schedules / f"{NAME}.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["rollout"].update(pauseBetweenWaves="1h", onFailure="rollback")
    path.write_text(yaml.safe_dump(doc))
    token = tmp_path / "token"
    token.write_text("real-tier-token")
    client = target.client()
    procs = {who: start_replica(target, tmp_path, who, schedules, token) for who in ("a", "b")}
    try:
        wait_for(lambda: all(command_api(tmp_path, w) for w in procs), 60, "both replicas")
        wait_for(
            lambda: (r := _run(client)) is not None and len(r.completed_waves) >= 1,
            target.patience * 2,
            "wave 1 done",
        )
        lease = get_lease(client, STATE_NS, "tidal-leader")
        leader = (lease or {}).get("spec", {}).get("holderIdentity")
        standby = next(w for w in procs if w != leader)
        aborted = CliRunner().invoke(
            cli,
            [
                "abort",
                NAME,
                "--daemon",
                str(command_api(tmp_path, standby)),
                "--token-file",
                str(token),
            ],
        )
        assert aborted.exit_code == 0, aborted.output
        wait_for(
            lambda: (r := _run(client)) is not None and r.finished,
            target.patience * 2,
            "the aborted run to roll back",
        )
        run = _run(client)
        assert run is not None and run.result == "rolledBack" and "tidal abort" in run.reason
        assert all(w.started_at is None for w in run.waves[1:])
        status = CliRunner().invoke(
            cli,
            [
                "status",
                "--schedules",
                str(schedules),
                "--kubeconfig",
                str(target.kubeconfig),
                "-o",
                "json",
            ],
            env={"TIDAL_STATE_NAMESPACE": STATE_NS},
        )
        (entry,) = json.loads(status.stdout)["schedules"]
        assert entry["lastRun"]["result"] == "rolledBack"
        assert "tidal abort" in entry["lastRun"]["reason"]
        leader_events = log_events(tmp_path / f"{leader}.log")
        assert [e["command"] for e in leader_events if e.get("event") == "run_aborted"] == ["abort"]
    finally:
        stop_all(procs.values())
    target.wait_for(_day_ready(replicas), "day placement again, all ready", 60)
    fidelity["aborted_after_waves"] = 1
