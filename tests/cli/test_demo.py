"""`tidal demo`: the whole demo as a user runs it (console script, non-interactive), and its parts:
the examples it ships, the "bring windows forward" transform, the floor verdicts it prints."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tidal.domain.floors import FloorRule
from tidal.engine.events import GatePassed, RunFinished, RunStarted, WaveFinished, WaveStarted
from tidal.engine.states import Gate, PolicyAction, RunResult, Trigger, WaveResult
from tidal.loading import load_schedules
from tidal_sim.demo.clock import DaemonClock, DemoClock
from tidal_sim.demo.scenario import (
    EXAMPLE_FILES,
    PACKAGED_EXAMPLES,
    DemoWindow,
    bring_forward,
    examples_dir,
    first_start,
)
from tidal_sim.demo.tracking import Tracker, judge_floor

REPO = Path(__file__).resolve().parents[2]
FIRST = datetime(2026, 12, 2, 10, 11, tzinfo=UTC)


def tidal_command() -> list[str]:
    script = Path(sys.executable).with_name("tidal")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tidal"]


@pytest.mark.e2e
@pytest.mark.slow
def test_demo_runs_night_and_day_of_both_teams(tmp_path: Path) -> None:
    """`tidal demo -o json` (no checkout in the cwd): four switches succeed, no floor breached;
    each team's start and end split with the reason, and the picture written."""
    done = subprocess.run(
        [*tidal_command(), "demo", "-o", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["result"] == "succeeded"
    assert "shipped with tidal" in summary["schedules"]
    switches = {(s["schedule"], s["window"]): s for s in summary["switches"]}
    assert list(switches) == [
        ("team-1005", "night"),
        ("team-1005", "day"),
        ("team-2001", "night"),
        ("team-2001", "day"),
    ]
    for switch in switches.values():
        assert switch["result"] == "succeeded"
        assert switch["waves"] == switch["wavesPlanned"] > 0
        assert switch["floorBreached"] is False
        assert switch["floors"], "every example window has a floor"
        for floor in switch["floors"]:
            assert floor["minReady"] is not None and floor["minReady"] >= floor["required"]
    assert {s["trigger"] for k, s in switches.items() if k[0] == "team-1005"} == {"touch"}
    assert {s["trigger"] for k, s in switches.items() if k[0] == "team-2001"} == {"rebalance"}
    # the team estimator leaves team 2001 no room in cluster-a at night: all of it in
    # cluster-b; by day it spreads back (readyAfter: ready replicas when the switch finished)
    night, day = switches[("team-2001", "night")], switches[("team-2001", "day")]
    assert night["readyAfter"]["cluster-a"] == 0 and night["readyAfter"]["cluster-b"] > 0
    assert day["readyAfter"]["cluster-a"] > 0
    assert switches[("team-1005", "night")]["readyAfter"]["cluster-a"] == 0
    # team 1005 surges: no replica left before its replacement was ready, night and day
    for window in ("night", "day"):
        full = [
            f
            for f in switches[("team-1005", window)]["floors"]
            if f["floor"] == "minAvailablePercent 100"
        ]
        assert full and full[0]["minReady"] == 100, full
    assert summary["wallSeconds"] < 120
    assert summary["kubeconfig"] is None  # nothing left behind without --keep
    # where each team started and ended, and why team 2001's day split is not its start's
    splits = {s["schedule"]: s for s in summary["splits"]}
    assert splits["team-1005"]["start"] == splits["team-1005"]["end"]
    assert "ends where it started" in splits["team-1005"]["why"]
    team = splits["team-2001"]
    assert sum(team["start"].values()) == sum(team["end"].values()) > 0
    assert team["after"]["night"]["cluster-a"] == 0
    if team["start"] != team["end"]:
        assert "dynamicWeight" in team["why"] and "not its start's" in team["why"]
    # the picture, written where the demo ran (its path printed in the summary)
    assert summary["picture"] == "tidal-demo.png"
    assert (tmp_path / "tidal-demo.png").read_bytes()[:4] == b"\x89PNG"


def test_packaged_examples_are_the_repository_examples() -> None:
    """The examples shipped in the package are byte-for-byte those in schedules/."""
    shipped = sorted(p.relative_to(PACKAGED_EXAMPLES) for p in PACKAGED_EXAMPLES.rglob("*.yaml"))
    assert [str(p) for p in shipped] == [
        "policies/team-2001-cpp-day.yaml",
        "policies/team-2001-cpp-night.yaml",
        *EXAMPLE_FILES,
    ]
    for rel in shipped:
        assert (PACKAGED_EXAMPLES / rel).read_bytes() == (REPO / "schedules" / rel).read_bytes(), (
            f"copy schedules/{rel} to sim/tidal_sim/demo/examples/{rel}"
        )


def test_examples_come_from_the_checkout_or_the_package(tmp_path: Path) -> None:
    """A cwd with schedules/ examples is used; any other cwd falls back to the packaged copy."""
    assert examples_dir(REPO)[0] == REPO / "schedules"
    assert examples_dir(tmp_path)[0] == PACKAGED_EXAMPLES


def test_windows_brought_forward_in_each_schedules_time_zone(tmp_path: Path) -> None:
    """Night starts at `first`, day a gap later, as cron minutes in the schedule's own zone."""
    windows = bring_forward(PACKAGED_EXAMPLES, tmp_path, first=FIRST, gap=timedelta(minutes=10))
    assert [(w.schedule, w.window, w.at) for w in windows] == [
        ("team-1005", "night", FIRST),
        ("team-1005", "day", FIRST + timedelta(minutes=10)),
        ("team-2001", "night", FIRST),
        ("team-2001", "day", FIRST + timedelta(minutes=10)),
    ]
    result = load_schedules([tmp_path])
    assert result.errors == []
    by_name = {item.schedule.name: item.schedule for item in result.schedules}
    shanghai = FIRST.astimezone(ZoneInfo("Asia/Shanghai"))
    assert by_name["team-1005"].window("night").start == f"{shanghai.minute} {shanghai.hour} * * *"
    berlin = (FIRST + timedelta(minutes=10)).astimezone(ZoneInfo("Europe/Berlin"))
    assert by_name["team-2001"].window("day").start == f"{berlin.minute} {berlin.hour} * * *"
    assert by_name["team-1005"].spec.skip_dates == []
    original = load_schedules([PACKAGED_EXAMPLES / "team-1005.yaml"]).schedules[0].schedule
    assert by_name["team-1005"].spec.rollout == original.spec.rollout


def test_first_start_is_a_whole_minute_after_the_lead() -> None:
    """The first window starts on the first whole minute at least the lead time away."""
    assert first_start(FIRST.timestamp() - 45, 30) == FIRST
    assert first_start(FIRST.timestamp() - 20, 30) == FIRST + timedelta(minutes=1)


def test_floor_verdicts_from_the_timeline() -> None:
    """A dip to 0 ready in a floor cluster is a breach; '*' only counts the clusters kept."""
    series = {
        "ai-app/Deployment/a": {
            "cluster-a": [(0.0, 2, 2), (5.0, 0, 0)],
            "cluster-b": [(0.0, 1, 1), (5.0, 3, 1), (9.0, 3, 3)],
        },
        "ai-app/Deployment/b": {"cluster-b": [(0.0, 1, 1), (6.0, 1, 0), (8.0, 1, 1)]},
    }
    members = set(series)
    b_floor = FloorRule(clusters=("cluster-b",), min_ready_replicas=1)
    dip = judge_floor(b_floor, members, series, 1.0, 10.0)
    assert (dip.min_ready, dip.breached) == (0, True)
    early = judge_floor(b_floor, members, series, 1.0, 5.5)
    assert (early.min_ready, early.breached) == (1, False)
    kept = judge_floor(
        FloorRule(clusters=("*",), min_ready_replicas=1), {"ai-app/Deployment/a"}, series, 1.0, 10.0
    )
    assert (kept.cluster, kept.min_ready, kept.breached) == ("*", 1, False)
    percent = judge_floor(
        FloorRule(min_available_percent=50), {"ai-app/Deployment/a"}, series, 1.0, 10.0
    )
    assert (percent.min_ready, percent.breached) == (33.3, True)


def test_tracker_follows_engine_events_and_refusals() -> None:
    """Engine events drive a window's state and waves; a refusal before the start is 'refused'."""
    night = DemoWindow("team-a", "night", FIRST, "11 10 * * *", "23:00", "UTC")
    day = DemoWindow("team-a", "day", FIRST + timedelta(minutes=10), "21 10 * * *", "07:00", "UTC")
    seen: list[tuple[str, str]] = []
    tracker = Tracker(
        [night, day],
        {},
        {"team-a": set()},
        lambda: 100.0,
        listener=lambda run, event, note: seen.append((run.planned.window, run.state)),
    )
    base: dict[str, Any] = {"schedule": "team-a", "window": "night", "run_id": "r1"}
    tracker.on_event(RunStarted(**base, workloads=2, waves=2, trigger=Trigger.TOUCH))
    assert tracker.busy(FIRST.timestamp()) and not tracker.all_done()
    for wave in (1, 2):
        tracker.on_event(WaveStarted(**base, wave=wave, workloads=("w",), trigger=Trigger.TOUCH))
        tracker.on_event(GatePassed(**base, wave=wave, gate=Gate.TRIGGERED))
        tracker.on_event(WaveFinished(**base, wave=wave, result=WaveResult.SUCCEEDED))
    tracker.on_event(RunFinished(**base, result=RunResult.SUCCEEDED))
    tracker.refused("team-a", "day", RuntimeError("a floor would break"))
    tracker.refused("team-a", "night", RuntimeError("late"))  # finished runs stay as they are
    night_run, day_run = tracker.runs
    assert (night_run.state, night_run.waves_done, night_run.ok) == ("succeeded", 2, True)
    assert (day_run.state, day_run.reason) == ("refused", "RuntimeError: a floor would break")
    assert tracker.all_done() and seen[0] == ("night", "running") and seen[-1][1] == "refused"


def test_demo_clock_fast_forwards_and_daemon_sleeps_scale() -> None:
    """Fast-forward moves simulated time and fires due timers; the daemon's sleeps shrink."""
    clock = DemoClock(speed=100.0, start=FIRST.timestamp())
    fired: list[float] = []
    clock.call_at(FIRST.timestamp() + 3600, lambda: fired.append(clock.now()))
    clock.start()
    try:
        clock.fast_forward(3600)
        assert clock.now() >= FIRST.timestamp() + 3600
        daemon_clock = DaemonClock(clock)
        began, wall = daemon_clock.monotonic(), time.monotonic()
        daemon_clock.sleep(5.0)  # 5 simulated seconds: 0.05 s of real time at x100
        assert daemon_clock.monotonic() - began >= 5.0 and time.monotonic() - wall < 1.0
        assert daemon_clock.now().tzinfo is not None
        deadline = time.monotonic() + 2
        while not fired and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fired
    finally:
        clock.stop()


@pytest.mark.parametrize("action", list(PolicyAction))
def test_the_demo_says_policy_actions_in_words(action: PolicyAction) -> None:
    """The demo's policy lines say what happened in words, never a raw event name such as
    `lazy_restored`."""
    from types import SimpleNamespace

    from tidal.engine.events import PolicyChanged
    from tidal_sim.demo.render import describe

    run = SimpleNamespace(planned=SimpleNamespace(schedule="team-1005", window="night"))
    event = PolicyChanged(
        schedule="team-1005",
        window="night",
        run_id="r",
        wave=None,
        kind="ClusterPropagationPolicy",
        policy="team-1005-cpp",
        action=action,
    )
    line = describe(run, event, "", lambda schedule: {})  # type: ignore[arg-type]
    assert line is not None and line.startswith("team-1005 night: ClusterPropagationPolicy ")
    assert "_" not in line.split(": ", 2)[-1], line


@pytest.mark.e2e
@pytest.mark.slow
def test_status_after_demo_keep_shows_no_false_edit(tmp_path: Path) -> None:
    """`tidal demo --keep` names the `tidal status` command for what it ran; that status
    shows no "edit pending" (nothing was edited) and, from the cluster, day in force."""
    import signal

    demo = subprocess.Popen(
        [*tidal_command(), "demo", "--keep", "--speed", "20"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert demo.stdout is not None
        status = None
        deadline = time.monotonic() + 170
        for line in demo.stdout:
            if line.strip().startswith("tidal status "):
                status = line.split()[1:]
            if "Ctrl-C to stop" in line or time.monotonic() > deadline:
                break
        assert status, "the demo's --keep hints name no `tidal status` command"
        done = subprocess.run(
            [*tidal_command(), *status, "-o", "json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)["schedules"]
        assert [s["name"] for s in report] == ["team-1005", "team-2001"]
        for entry in report:
            assert entry["editPending"] is None
            assert (entry["windowInForce"]["window"], entry["windowInForce"]["source"]) == (
                "day",
                "cluster",
            )
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=30)
