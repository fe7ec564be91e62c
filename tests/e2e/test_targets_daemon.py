"""Two `tidal run` replicas on each --karmada target: one leader acts, the standby waits; the
leader is SIGKILLed after the first wave and the standby resumes the run to the end with no
completed wave run again and the cluster-b floor held throughout."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.daemon_helpers import STATE_NS, log_events, stop_all, wait_for
from tests.e2e.scenario_checks import floor_breaches
from tests.e2e.targets import RealTarget, Target, kubectl
from tests.e2e.test_targets_static import REPO, _day_ready, _night_ready, team_objects
from tidal.daemon.state import StateStore
from tidal.engine.journal import RunState
from tidal.karmada.client import KarmadaClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def due_schedule(directory: Path, wave_timeout: float) -> None:
    """team-1005 in UTC whose night window started this minute (due when a replica starts)."""
    doc = yaml.safe_load((REPO / "schedules" / "team-1005.yaml").read_text())
    now = datetime.now(UTC)
    doc["spec"].update(timeZone="UTC", catchUpWindow="30m", skipDates=[])
    doc["spec"]["rollout"].update(pauseBetweenWaves="2s", waveTimeout=f"{int(wave_timeout)}s")
    for window in doc["spec"]["windows"]:
        window.pop("rollout", None)
        window["start"] = (
            f"{now:%H:%M}" if window["name"] == "night" else f"{(now.hour + 12) % 24:02d}:{now:%M}"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "team-1005.yaml").write_text(yaml.safe_dump(doc))


def start_replica(
    target: Target,
    tmp: Path,
    who: str,
    schedules: Path,
    *,
    sweep_seconds: float = 60.0,
    extra_env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """A `tidal run` replica named `who` on the target, short lease timings, its JSON log in
    tmp/WHO.log; `extra_env` adds settings."""
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",  # a SIGKILL must not lose logged events
        TIDAL_LOG_FORMAT="json",
        TIDAL_STATE_NAMESPACE=STATE_NS,
        TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS="3",
        TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS="2",
        TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS="0.5",
        TIDAL_SWEEPER__INTERVAL_SECONDS=str(sweep_seconds),
        TIDAL_KARMADA__POLICY_SETTLE_SECONDS=str(target.policy_settle),
        **(extra_env or {}),
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tidal",
            "run",
            "--schedules",
            str(schedules),
            "--kubeconfig",
            str(target.kubeconfig),
            "--port",
            "0",
            "--identity",
            who,
        ],
        stdout=(tmp / f"{who}.log").open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
    )


def fresh_state(target: Target) -> None:
    """On real Karmada: the scenario objects reset, no Lease or state ConfigMap left."""
    if not isinstance(target, RealTarget):
        return
    target.reset()
    for kind in ("leases", "configmaps"):
        with contextlib.suppress(AssertionError):
            kubectl(
                target.kubeconfig, "delete", kind, "-n", STATE_NS, "--all", "--ignore-not-found"
            )


def _run(client: KarmadaClient) -> RunState | None:
    try:
        return StateStore(client, STATE_NS).load("team-1005")
    except Exception:
        return None


def day_team(target: Target) -> dict[str, int]:
    """Team 1005 on a fresh target, in its day placement, all ready; its replicas by
    workload."""
    fresh_state(target)
    objs = team_objects()
    target.apply(objs)
    replicas = {
        f"ai-app/Deployment/{d['metadata']['name']}": d["spec"]["replicas"]
        for d in objs
        if d["kind"] == "Deployment"
    }
    target.wait_serving(_day_ready(replicas), replicas, "day placement, all ready")
    return replicas


def test_two_replicas_one_leader_sigkill_resumes(
    target: Target, fidelity: dict[str, Any], tmp_path: Path
) -> None:
    """a leads, b stands by; SIGKILL a after wave 1: b finishes, each wave succeeds once."""
    from tidal.karmada.leases import get_lease

    replicas = day_team(target)
    schedules = tmp_path / "schedules"
    due_schedule(schedules, target.patience)
    client = target.client()
    t0 = target.now()
    procs = {"a": start_replica(target, tmp_path, "a", schedules)}
    try:
        wait_for(lambda: _run(client) is not None, 60, "a to start the run")
        procs["b"] = start_replica(target, tmp_path, "b", schedules)
        lease = get_lease(client, STATE_NS, "tidal-leader")
        assert lease is not None and lease["spec"].get("holderIdentity") == "a"
        wait_for(
            lambda: (r := _run(client)) is not None and len(r.completed_waves) >= 1,
            target.patience,
            "wave 1 done",
        )
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(10)
        wait_for(
            lambda: (r := _run(client)) is not None and r.finished,
            target.patience * 2,
            "b to finish the run",
        )
        run = _run(client)
        assert run is not None and run.result == "succeeded", (tmp_path / "b.log").read_text()[
            -3000:
        ]
    finally:
        stop_all(procs.values())
    target.wait_for(_night_ready(replicas), "night placement, all ready", 30)
    assert floor_breaches(target.timeline(), t0, "cluster-b", set(replicas), 1) == []
    done: dict[int, list[str]] = {}
    for who in ("a", "b"):
        for e in log_events(tmp_path / f"{who}.log"):
            if e.get("event") == "wave_succeeded":
                done.setdefault(int(e["wave"]), []).append(who)
    assert done and all(len(v) == 1 for v in done.values()), done
    assert done[1] == ["a"] and "b" in {w for v in done.values() for w in v}, done
    fidelity["waves_by_replica"] = {str(k): v for k, v in sorted(done.items())}
