"""Builders for the daemon end-to-end tests: a small static-weight team, `tidal run` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.e2e.switch_helpers import (
    DAY,
    TEAM_T1,
    cluster,
    cpp,
    deployment,
    namespace,
    weights_window,
)
from tests.e2e.switch_helpers import schedule_text as team_schedule
from tidal.daemon.state import StateStore
from tidal.engine.journal import RunState
from tidal.karmada.client import KarmadaClient
from tidal_sim.clock import ScaledClock

WORKLOADS = 8
STATE_NS = "tidal-system"


def topology() -> list[dict[str, Any]]:
    topo = [
        cluster("cluster-a", startup=1.0, termination=1.0),
        cluster("cluster-b", startup=1.0, termination=1.0),
        namespace(),
        cpp("team-cpp", "t1", DAY),
    ]
    return topo + [deployment(f"web-{i:02d}", "t1", 5) for i in range(WORKLOADS)]


def settle(emu: Any, timeout: float = 20.0) -> None:
    """Wait until every workload runs 4/1 and is ready, and the bindings say so."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current: dict[tuple[str, str], int] = {}
        for s in emu.timeline():
            current[(s["workload"], s["cluster"])] = s["ready"]
        if (
            sum(1 for (_w, c), r in current.items() if c == "cluster-b" and r >= 1) == WORKLOADS
            and emu.bindings_report_ready()
        ):
            return
        time.sleep(0.05)
    raise AssertionError("topology did not settle")


def settled_team(
    make_emulator: Callable[..., Any], speed: float = 20.0, timeout: float = 20.0
) -> Any:
    """A started emulator holding topology(), its clock at `speed`x, once settle() saw 4/1."""
    emu = make_emulator(topology(), clock=ScaledClock(speed))
    settle(emu, timeout)
    return emu


def schedule_text(
    night: datetime,
    day: datetime,
    catch_up: str = "30m",
    pause: str = "0s",
    on_failure: str = "halt",
    wave_timeout: str = "60s",
    strategy: str = "surge",
) -> str:
    windows = weights_window(
        "night", f"{night:%H:%M}", {"cluster-b": 1}, trigger="touch"
    ) + weights_window("day", f"{day:%H:%M}", {"cluster-a": 4, "cluster-b": 1}, trigger="touch")
    return team_schedule(
        "team-t1",
        catch_up_window=catch_up,
        windows=windows,
        workloads=TEAM_T1,
        rollout=f"""
        waveSize: 25%
        pauseBetweenWaves: {pause}
        waveTimeout: {wave_timeout}
        onFailure: {on_failure}
        strategy: {strategy}
        floors:
          - clusters: [cluster-b]
            minReadyReplicas: 1
    """,
    )


def write_due_schedule(
    directory: Path, *, minutes_ago: int = 0, catch_up: str = "30m", pause: str = "0s", **kw: str
) -> datetime:
    """A schedule whose night window started this minute (or `minutes_ago`): due at start-up."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    night = now.replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)
    (directory / "team-t1.yaml").write_text(
        schedule_text(night, night + timedelta(hours=12), catch_up, pause, **kw)
    )
    return night


def start_daemon(
    emu: Any, tmp: Path, who: str, schedules: Path, **env: str
) -> subprocess.Popen[bytes]:
    kubeconfig = emu.write_kubeconfig(tmp / f"kubeconfig-{who}", user=f"replica-{who}")
    environ = dict(
        os.environ,
        TIDAL_LOG_FORMAT="json",
        TIDAL_STATE_NAMESPACE=STATE_NS,
        TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS="3",
        TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS="2",
        TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS="0.5",
        **env,
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
            str(kubeconfig),
            "--port",
            "0",
            "--identity",
            who,
        ],
        stdout=(tmp / f"{who}.log").open("wb"),
        stderr=subprocess.STDOUT,
        env=environ,
    )


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    """SIGTERM, and its exit code within `timeout`; one that hangs fails the test, killed so
    that it outlives neither the test nor the run."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise


def stop_all(procs: Iterable[subprocess.Popen[bytes]], *, resume: bool = False) -> None:
    """stop() every process still running; `resume` sends SIGCONT first (to a stopped one)."""
    for proc in procs:
        if proc.poll() is None:
            if resume:
                proc.send_signal(signal.SIGCONT)
            stop(proc)


def writes_by(emu: Any) -> dict[str, list[tuple[str, str, str | None]]]:
    """Mutating requests per caller identity: (verb, resource, name)."""
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for r in emu.request_log():
        if r.verb in ("get", "list", "watch") or r.code >= 400 or r.dry_run:
            continue
        out.setdefault(r.identity, []).append((r.verb, r.resource, r.name))
    return out


def stored_run(client: KarmadaClient, schedule: str = "team-t1") -> RunState | None:
    """The schedule's run state as stored, or None while there is none or it cannot be read
    (a daemon mid-write, the API faulted)."""
    try:
        return StateStore(client, STATE_NS).load(schedule)
    except Exception:
        return None


def log_events(path: Path) -> list[dict[str, Any]]:
    """The JSON log lines of a `tidal run` log file (other lines skipped)."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def daemon_metrics(events: list[dict[str, Any]]) -> str:
    """The /metrics text of the daemon whose log `events` are (its daemon_started port)."""
    port = next(e["port"] for e in events if e.get("event") == "daemon_started")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode()
    return text
