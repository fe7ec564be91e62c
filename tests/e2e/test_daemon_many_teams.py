"""Many teams at the same minute through one `tidal run` on the emulator: one shared list and
watch per kind serves every wave of every team, and a team whose policy is broken halts alone
while the others switch."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import STATE_NS, start_daemon, stop, wait_for
from tests.e2e.switch_helpers import (
    DAY,
    cluster,
    cpp,
    deployment,
    deployment_workloads,
    namespace,
    static_placement,
    weights_window,
)
from tests.e2e.switch_helpers import schedule_text as team_schedule
from tidal.daemon.state import DaemonOutcome, StateStore
from tidal.karmada.client import KarmadaClient
from tidal_sim.clock import ScaledClock

pytestmark = pytest.mark.e2e
TEAMS = ("t1", "t2", "t3")  # healthy teams
BROKEN = "t4"  # its window names a policy that is not there
STRANDED = "t5"  # its destination, cluster-c, goes NotReady after its first wave
PER_TEAM = 4  # Deployments, one per wave (waveSize 25%)


def topology(stranded: bool = False) -> list[dict[str, Any]]:
    topo = [
        cluster("cluster-a", startup=1.0, termination=1.0),
        cluster("cluster-b", startup=1.0, termination=1.0),
        namespace(),
    ]
    for team in (*TEAMS, BROKEN):
        topo.append(cpp(f"team-{team}-cpp", team, DAY))
        topo += [deployment(f"{team}-web-{i}", team, 5) for i in range(PER_TEAM)]
    if stranded:
        topo.append(cluster("cluster-c", startup=1.0, termination=1.0))
        placement = static_placement({"cluster-a": 4, "cluster-c": 1})
        placement["clusterAffinity"] = {"clusterNames": ["cluster-a", "cluster-c"]}
        topo.append(cpp(f"team-{STRANDED}-cpp", STRANDED, placement))
        topo += [deployment(f"{STRANDED}-web-{i}", STRANDED, 5) for i in range(PER_TEAM)]
    return topo


def teams(stranded: bool) -> tuple[str, ...]:
    return (*TEAMS, BROKEN, STRANDED) if stranded else (*TEAMS, BROKEN)


def write_schedules(directory: Path, stranded: bool = False) -> None:
    """Every team's night window starts this minute (due at start-up)."""
    directory.mkdir(parents=True, exist_ok=True)
    night = datetime.now(UTC).replace(second=0, microsecond=0)
    day = night + timedelta(hours=12)
    for team in teams(stranded):
        policy = f"team-{team}-cpp" if team != BROKEN else f"team-{team}-cpp-missing"
        to = "cluster-c" if team == STRANDED else "cluster-b"
        pause = "3s" if team == STRANDED else "0s"
        windows = weights_window(
            "night", f"{night:%H:%M}", {to: 1}, policy=policy, trigger="touch"
        ) + weights_window(
            "day", f"{day:%H:%M}", {"cluster-a": 4, to: 1}, policy=policy, trigger="touch"
        )
        (directory / f"team-{team}.yaml").write_text(
            team_schedule(
                f"team-{team}",
                catch_up_window="30m",
                windows=windows,
                workloads=deployment_workloads(f"{{matchLabels: {{team: {team}}}}}"),
                rollout=f"""
                waveSize: 25%
                pauseBetweenWaves: {pause}
                waveTimeout: 60s
                floors:
                  - clusters: [{to}]
                    minReadyReplicas: 1
            """,
            )
        )


def settled(emu: Any, stranded: bool) -> None:
    """Every team's day split is up and ready, and the bindings say so."""
    workloads = len(teams(stranded)) * PER_TEAM

    def ready() -> bool:
        current = emu.controllers.timeline.current()
        return (
            len(current) >= workloads * 2
            and all(assigned == ready for assigned, ready in current.values())
            and bool(emu.bindings_report_ready())
        )

    wait_for(ready, 60, "the day split to settle")


def outcomes(client: KarmadaClient, stranded: bool = False) -> dict[str, str | None]:
    states = StateStore(client, STATE_NS).list_states()
    return {
        f"team-{t}": (lambda h: h.outcome if h else None)(
            states[f"team-{t}"].handled if f"team-{t}" in states else None
        )
        for t in teams(stranded)
    }


def run_night(make_emulator: Any, tmp_path: Path, **env: str) -> tuple[Any, list[Any], str]:
    """The four teams' night through one daemon: (emulator, its requests, its log)."""
    emu = make_emulator(topology(), clock=ScaledClock(20.0))
    settled(emu, stranded=False)
    schedules = tmp_path / "schedules"
    write_schedules(schedules)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    since = max((r.seq for r in emu.request_log()), default=0)
    daemon = start_daemon(
        emu, tmp_path, "solo", schedules, TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES="4", **env
    )
    done = (DaemonOutcome.SUCCEEDED, DaemonOutcome.FAILED, DaemonOutcome.REFUSED)
    try:
        wait_for(
            lambda: all(o in done for o in outcomes(client).values()),
            120,
            "every team's night switch to end",
        )
    finally:
        assert stop(daemon) == 0
    log_text = (tmp_path / "solo.log").read_text()
    result = outcomes(client)
    assert result == {
        **{f"team-{t}": DaemonOutcome.SUCCEEDED for t in TEAMS},
        f"team-{BROKEN}": DaemonOutcome.REFUSED,
    }, log_text[-3000:]
    mine = [r for r in emu.request_log(since) if r.identity.endswith("replica-solo")]
    return emu, mine, log_text


def test_teams_at_the_same_minute_share_one_watch_and_a_broken_team_halts_alone(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Four teams due at once, four slots: three switch (every wave of theirs gated through
    the daemon's one watch of resourcebindings across namespaces, one list and watch of
    clusters), the fourth is refused alone; no per-wave list or watch of bindings."""
    _, mine, log_text = run_night(make_emulator, tmp_path)
    events = [json.loads(line) for line in log_text.splitlines() if line.startswith("{")]
    waves = [e for e in events if e.get("event") == "wave_started"]
    assert len(waves) == len(TEAMS) * PER_TEAM
    reads = {
        (r.verb, r.resource, r.namespace)
        for r in mine
        if r.resource in ("resourcebindings", "clusters") and r.verb in ("list", "watch")
    }
    binding_watches = [r for r in mine if r.verb == "watch" and r.resource == "resourcebindings"]
    # one watch (re-opened at most once a minute) and all namespaces, for twelve waves
    assert 1 <= len(binding_watches) <= 3
    assert {r.namespace for r in binding_watches} == {None}
    assert ("watch", "clusters", None) in reads
    cluster_watches = [r for r in mine if r.verb == "watch" and r.resource == "clusters"]
    assert 1 <= len(cluster_watches) <= 3
    # the bindings are listed once, for the cache: every plan and every wave reads it
    binding_lists = [r for r in mine if r.verb == "list" and r.resource == "resourcebindings"]
    assert len(binding_lists) == 1, binding_lists
    cluster_lists = [r for r in mine if r.verb == "list" and r.resource == "clusters"]
    assert len(cluster_lists) == 1, cluster_lists


def test_without_the_shared_watch_every_switch_watches_on_its_own(
    make_emulator: Any, tmp_path: Path
) -> None:
    """The comparison arm (TIDAL_API__SHARED_WATCH=false): each switch lists and watches the
    bindings and the clusters on its own, once for the run (since issue 26, not once per
    wave), so the daemon opens a watch of each kind per switch."""
    _, mine, _ = run_night(make_emulator, tmp_path, TIDAL_API__SHARED_WATCH="false")
    for resource in ("resourcebindings", "clusters"):
        watches = [r for r in mine if r.verb == "watch" and r.resource == resource]
        # one per switch (three), re-opened at most once a minute each; never one per wave
        assert len(TEAMS) <= len(watches) < len(TEAMS) * PER_TEAM, (resource, len(watches))
    binding_lists = [r for r in mine if r.verb == "list" and r.resource == "resourcebindings"]
    assert len(TEAMS) <= len(binding_lists) < len(TEAMS) * PER_TEAM


def test_a_cluster_going_not_ready_mid_night_halts_only_the_team_moving_there(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Chaos: one team's policy is broken (refused) and another team's destination goes
    NotReady after its first wave (that run halts: cluster_not_ready); every other team
    switches, through the same shared watch."""
    emu = make_emulator(topology(stranded=True), clock=ScaledClock(20.0))
    settled(emu, stranded=True)
    schedules = tmp_path / "schedules"
    write_schedules(schedules, stranded=True)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    daemon = start_daemon(
        emu, tmp_path, "solo", schedules, TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES="5"
    )
    log_path = tmp_path / "solo.log"

    def first_wave_done() -> bool:
        for line in log_path.read_text().splitlines():
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("event") == "wave_succeeded" and e.get("schedule") == f"team-{STRANDED}":
                    return True
        return False

    done = (DaemonOutcome.SUCCEEDED, DaemonOutcome.FAILED, DaemonOutcome.REFUSED)
    try:
        wait_for(first_wave_done, 60, f"team-{STRANDED}'s first wave")
        emu.set_cluster_ready("cluster-c", False, reason="ClusterNotReachable")
        wait_for(
            lambda: all(o in done for o in outcomes(client, True).values()),
            120,
            "every team's night switch to end",
        )
    finally:
        assert stop(daemon) == 0
    log_text = log_path.read_text()
    assert outcomes(client, True) == {
        **{f"team-{t}": DaemonOutcome.SUCCEEDED for t in TEAMS},
        f"team-{BROKEN}": DaemonOutcome.REFUSED,
        f"team-{STRANDED}": DaemonOutcome.FAILED,
    }, log_text[-3000:]
    events = [json.loads(line) for line in log_text.splitlines() if line.startswith("{")]
    failed = [e for e in events if e.get("event") == "wave_failed"]
    assert [(e["schedule"], e["failure"]) for e in failed] == [
        (f"team-{STRANDED}", "cluster_not_ready")
    ]
