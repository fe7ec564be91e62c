"""B1's third arm: tidal with make-before-break waves (`rollout.strategy: surge`).

The same fleets and capacity as B1's other arms (benchmarks/b1_availability.py), the night
switch 80/20 -> 0/100 and then the day switch back, each run by tidal's engine as a window of
one TidalSchedule. Figures come from the emulator's timeline, as for the other arms; the
capacity bound is computed from the fleet's day split and the destination's free GPUs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import scenario as sc
from benchmarks.b1_availability import DAY, NIGHT, fleet_replicas
from benchmarks.harness import SimEngineClock, karmada_client, wait_until
from benchmarks.schedules import load_one, patch_window, write_schedule
from benchmarks.timeline import (
    Availability,
    Floor,
    analyse,
    lowest_workload_percent,
    peak_extra_held,
    settled,
)
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import PlanRefused, run_switch
from tidal_sim.clock import ScaledClock
from tidal_sim.emulator import Emulator

# the issue's floor, which the direct arm's plan refuses (a moving workload dips below 50%)
ISSUE_FLOORS: list[dict[str, Any]] = [
    {"clusters": ["cluster-b"], "minReadyReplicas": 1},
    {"minAvailablePercent": 50},
]
STRICT_FLOORS: list[dict[str, Any]] = [
    {"clusters": ["cluster-b"], "minReadyReplicas": 1},
    {"minAvailablePercent": 100},
]
# 1-2 replica workloads have nothing in cluster-b by day: only the availability floor applies
SMALL_FLOORS: list[dict[str, Any]] = [{"minAvailablePercent": 50}]
# The main run's clock: simulated seconds per wall second. B1's other runs use a 10x clock to
# save wall time; at 10x every millisecond of CPU the engine and the in-process emulator
# spend counts as ten simulated ones, so a ratio of the pacing to pod start-up is taken at 1x
# (what a real control plane's clock is), and the 10x figure is printed beside it.
PACING_SPEED = 1.0


@dataclass
class SurgeArm:
    """One surge run: the night switch, then (unless refused) the day switch."""

    samples: list[dict[str, Any]]
    replicas: dict[str, int]
    start: float = 0.0
    night_end: float = 0.0
    day_start: float = 0.0
    end: float = 0.0
    night: Availability = field(default_factory=Availability)
    day: Availability = field(default_factory=Availability)
    result: str = ""
    reason: str = ""
    day_result: str = ""
    lowest_workload_percent: float = 100.0
    peak_extra: int = 0
    announced_extra: int = 0  # the plans' most GPUs held beyond the steady state
    plan_requests: int = 0
    requests: int = 0
    bound: Bound | None = None


@dataclass(frozen=True)
class Bound:
    """The least time any wave plan needs for one switch: every replica the destination must
    start is started at most `free` at a time, each round taking scheduling + pod start-up."""

    surge_gpus: int  # replicas (1 GPU each) the destination must start: the sources' shares
    free_gpus: int  # the destination's allocatable minus what it runs before the switch
    round_seconds: float  # scheduler latency + pod start-up

    @property
    def rounds(self) -> int:
        if self.surge_gpus <= 0:
            return 0
        return math.ceil(self.surge_gpus / max(self.free_gpus, 1))

    @property
    def seconds(self) -> float:
        return self.rounds * self.round_seconds


def night_bound(emu: Emulator, fleet: sc.Fleet) -> Bound:
    """The night switch's bound from the day split the emulator converged to."""
    current = emu.controllers.timeline.current()
    in_a = sum(a for (_, c), (a, _r) in current.items() if c == "cluster-a")
    in_b = sum(a for (_, c), (a, _r) in current.items() if c == "cluster-b")
    return Bound(in_a, fleet.gpu_b - in_b, fleet.scheduler_latency + fleet.startup_seconds)


def surge_schedule(workdir: Path, floors: list[dict[str, Any]]) -> Path:
    # cluster-a stays admitted (with no weight, so 0 replicas): identical for default Karmada,
    # and with empty-workload propagation the night bindings then list cluster-a with 0, which
    # is what tells the planner it can raise cluster-a on the day switch
    night = sc.static_placement({**NIGHT, "cluster-a": 0})
    windows = [
        patch_window("night", "inference-day", night, "touch"),
        patch_window("day", "inference-day", sc.static_placement(DAY), "touch"),
    ]
    rollout = {
        "waveSize": "25%",
        "pauseBetweenWaves": "2s",
        "waveTimeout": "2m",
        "floors": floors,
        "onFailure": "halt",
        "strategy": "surge",
    }
    return write_schedule(workdir, "inference-surge", windows, rollout)


GPU = "nvidia.com/gpu"


def announced_extra(client: Any, loaded: Any, window: str) -> int:
    """The most GPUs `tidal plan` announces its waves hold beyond the steady state."""
    from tidal.engine.planning import build_plan

    plan = build_plan(client, loaded.schedule, window).plan
    return int(
        max((sum(a.get(GPU, 0.0) for a in room.extra.values()) for room in plan.rooms), default=0.0)
    )


def _switch(emu: Emulator, loaded: Any, window: str, out: SurgeArm) -> tuple[str, str]:
    client = karmada_client(emu)
    try:
        before = int(emu.requests()["total"])
        out.announced_extra = max(out.announced_extra, announced_extra(client, loaded, window))
        out.plan_requests += int(emu.requests()["total"]) - before  # not the switch's own
        if window == "night":  # nor its time: the night is timed from the switch's start
            out.start = emu.clock.now()
        record = run_switch(
            client, loaded, window, clock=SimEngineClock(emu.clock), journal=InMemoryJournal()
        )
        return record.result, record.reason or ""
    except PlanRefused as exc:
        return "refused", f"{len(exc.problems)} problems, e.g. {exc.problems[0]}"
    finally:
        client.close()


def _settle(emu: Emulator, replicas: dict[str, int], speed: float) -> float:
    time.sleep(3.0 / speed)
    wait_until(lambda: settled(emu, replicas), 120)
    time.sleep(1.0 / speed)
    return emu.clock.now()


def run_surge_arm(
    fleet: sc.Fleet,
    floors: list[dict[str, Any]],
    workdir: Path,
    *,
    speed: float,
    floor: Floor,
    ewp: bool = False,
) -> SurgeArm:
    """Night then day with `strategy: surge` on a fresh emulator (`ewp`: karmada-scheduler
    with empty-workload propagation)."""
    replicas = fleet_replicas(fleet)
    day = sc.cpp("inference-day", sc.static_placement(DAY))
    emu = Emulator(
        sc.topology(fleet, [day], empty_workload_propagation=ewp), clock=ScaledClock(speed)
    ).start()
    try:
        if not wait_until(lambda: settled(emu, replicas), 120):
            raise RuntimeError("the day distribution did not converge in 120 s")
        loaded = load_one(surge_schedule(workdir, floors))
        out = SurgeArm([], replicas, bound=night_bound(emu, fleet))
        emu.reset_requests()
        out.start = emu.clock.now()
        out.result, out.reason = _switch(emu, loaded, "night", out)
        out.night_end = _settle(emu, replicas, speed)
        # the day window opens hours later: its plan reads a Cluster status refreshed since
        # the night settled (not one still counting the night's last leaving pods)
        time.sleep(emu.topology.settings.cluster_status_interval / speed)
        out.day_start = out.end = emu.clock.now()
        if out.result != "refused":
            out.day_result, reason = _switch(emu, loaded, "day", out)
            out.reason = out.reason or reason
            out.end = _settle(emu, replicas, speed)
        out.samples = emu.timeline()
        out.requests = int(emu.requests()["total"]) - out.plan_requests
        out.night = analyse(out.samples, replicas, out.start, out.night_end, floor)
        out.day = analyse(out.samples, replicas, out.day_start, out.end, floor)
        out.lowest_workload_percent = lowest_workload_percent(
            out.samples, replicas, out.start, out.end
        )
        out.peak_extra = peak_extra_held(out.samples, replicas, out.start, out.end)
        return out
    finally:
        emu.stop()


def zero_ready(arm: SurgeArm) -> int:
    """Workloads at zero ready at any moment of the night or the day switch."""
    return len(set(arm.night.zero_ready) | set(arm.day.zero_ready))


@dataclass
class SurgeArms:
    main: SurgeArm
    strict: SurgeArm
    small: SurgeArm
    small_ewp: SurgeArm
    main_fast: SurgeArm  # the main run again at the other runs' (faster) clock
    fast_speed: float = 10.0


SMALL_FLOOR = Floor((), 0, 50.0)  # no cluster part: 1-2 replica workloads have none in b by day


def run_all(
    fleet: sc.Fleet, small: sc.Fleet, work: Path, *, speed: float, floor: Floor, tiny: bool = False
) -> SurgeArms:
    """The five runs (the main one at PACING_SPEED and at `speed`, the others at `speed`);
    `tiny` (the smoke test) runs the 3-8 replica fleet once, under the 100% floor, and reports
    it as the main, fast and strict run (toy figures, less wall time)."""
    strict = run_surge_arm(fleet, STRICT_FLOORS, work / "surge-strict", speed=speed, floor=floor)
    fast = (
        strict
        if tiny
        else run_surge_arm(fleet, ISSUE_FLOORS, work / "surge-fast", speed=speed, floor=floor)
    )
    main = (
        strict
        if tiny
        else run_surge_arm(fleet, ISSUE_FLOORS, work / "surge", speed=PACING_SPEED, floor=floor)
    )
    return SurgeArms(
        main=main,
        main_fast=fast,
        fast_speed=speed,
        strict=strict,
        small=run_surge_arm(
            small, SMALL_FLOORS, work / "surge-small", speed=speed, floor=SMALL_FLOOR
        ),
        small_ewp=run_surge_arm(
            small, SMALL_FLOORS, work / "surge-small-ewp", speed=speed, floor=SMALL_FLOOR, ewp=True
        ),
    )


def _put_small(section: Any, prefix: str, arm: SurgeArm) -> None:
    section.put(f"{prefix}.tidal_refused", 1 if "refused" in (arm.result, arm.day_result) else 0)
    section.put(f"{prefix}.zero_ready_workloads", zero_ready(arm))
    section.put(f"{prefix}.lowest_available_percent", round(arm.lowest_workload_percent, 1))
    section.put(f"{prefix}.converge_seconds", round(arm.night.converge_seconds, 1))


def put_results(section: Any, arms: SurgeArms) -> float:
    """The b1.surge.* keys and b1.capacity_bound_seconds; returns converge / bound."""
    m = arms.main
    section.put(
        "surge.tidal.below_floor_workload_seconds", round(m.night.below_floor_workload_seconds, 1)
    )
    section.put("surge.tidal.zero_ready_workloads", len(m.night.zero_ready))
    section.put("surge.tidal.lowest_ready_fraction", round(m.night.lowest_ready_fraction, 4))
    section.put("surge.tidal.converge_seconds", round(m.night.converge_seconds, 1))
    section.put("surge.tidal.max_workloads_below_floor_at_once", m.night.max_below_at_once)
    section.put("surge.tidal.requests", m.requests)
    section.put(
        "surge.tidal.day.below_floor_workload_seconds", round(m.day.below_floor_workload_seconds, 1)
    )
    section.put("surge.tidal.day.zero_ready_workloads", len(m.day.zero_ready))
    section.put("surge.tidal.day.lowest_ready_fraction", round(m.day.lowest_ready_fraction, 4))
    section.put("surge.tidal.day.converge_seconds", round(m.day.converge_seconds, 1))
    section.put("surge.tidal.refused", 1 if "refused" in (m.result, m.day_result) else 0)
    _put_small(section, "surge.small", arms.small)
    _put_small(section, "surge.small_ewp", arms.small_ewp)
    section.put(
        "surge.strict.lowest_available_percent", round(arms.strict.lowest_workload_percent, 1)
    )
    section.put(
        "surge.strict.refused",
        1 if "refused" in (arms.strict.result, arms.strict.day_result) else 0,
    )
    section.put("surge.peak_extra_gpus", m.peak_extra)
    section.put("surge.plan_extra_gpus", m.announced_extra)
    bound = m.bound.seconds if m.bound else 0.0
    section.put("capacity_bound_seconds", round(bound, 2))
    ratio = m.night.converge_seconds / bound if bound > 0 else float("nan")
    section.put("surge.converge_over_bound", round(ratio, 2))
    fast = arms.main_fast.night.converge_seconds
    section.put("surge.tidal.converge_seconds_10x", round(fast, 1))
    section.put("surge.converge_over_bound_10x", round(fast / bound if bound > 0 else math.nan, 2))
    return ratio


def _outcome(arm: SurgeArm) -> str:
    night = arm.result or "done"
    if night == "refused":
        return f"night refused before any write ({arm.reason})"
    day = arm.day_result or "done"
    return f"night {night}, day {day}" + (f" ({arm.reason})" if arm.reason else "")


def markdown(arms: SurgeArms, fleet: sc.Fleet, ratio: float) -> list[str]:
    m, b = arms.main, arms.main.bound
    assert b is not None
    return [
        "",
        "### Third arm: tidal with make-before-break waves (`strategy: surge`)",
        "",
        "The same fleet and capacity (the clock: see the bound below); tidal patches the day "
        "policy to the night placement (touch trigger, waves of 25%, 2 s pauses) with "
        "`rollout.strategy: surge`, "
        "then back to the day placement. Floors: the issue's floor (1 ready in cluster-b and "
        "50% available per workload, the one the direct arm's plan refuses); a second run with "
        "`minAvailablePercent: 100`.",
        "",
        "| switch | workloads ever at zero ready | workload-seconds below floor | lowest total "
        "ready | seconds to converge | result |",
        "|---|---|---|---|---|---|",
        f"| night (80/20 -> 0/100) | {len(m.night.zero_ready)} | "
        f"{m.night.below_floor_workload_seconds:,.0f} | {m.night.lowest_ready_fraction:.0%} | "
        f"{m.night.converge_seconds:.0f} | {m.result or 'done'} |",
        f"| day (0/100 -> 80/20) | {len(m.day.zero_ready)} | "
        f"{m.day.below_floor_workload_seconds:,.0f} | {m.day.lowest_ready_fraction:.0%} | "
        f"{m.day.converge_seconds:.0f} | {m.day_result or 'done'} |",
        "",
        f"- Under a `minAvailablePercent: 100` floor, night and day: {_outcome(arms.strict)}; "
        f"the lowest availability of any one workload was "
        f"**{arms.strict.lowest_workload_percent:.0f}%**.",
        f"- Extra GPUs held beyond the steady state, at most (from the timeline's member "
        f"replicas, one GPU each): **{m.peak_extra}**; the plans announced at most "
        f"{m.announced_extra} (the 100% floor run: {arms.strict.peak_extra} held, "
        f"{arms.strict.announced_extra} announced).",
        f"- Capacity bound of the night: {b.surge_gpus} replicas to start in cluster-b, "
        f"{b.free_gpus} GPUs free there, so {b.rounds} round(s) of "
        f"{b.round_seconds:g} s (scheduling + start-up): **{b.seconds:g} s**. tidal converged "
        f"in {m.night.converge_seconds:.1f} s: **{ratio:.2f}x the bound** (the waves and their "
        "pauses are sequential; the bound assumes all surge starts at once). This run's clock "
        f"is at {PACING_SPEED:g}x; the same run at the other runs' {arms.fast_speed:g}x clock "
        f"converged in {arms.main_fast.night.converge_seconds:.1f} s "
        f"({arms.main_fast.night.converge_seconds / b.seconds:.2f}x): there every millisecond "
        f"of CPU the engine and the in-process emulator spend counts {arms.fast_speed:g} times.",
        f"- 1-{fleet.max_replicas} replica fleet, default Karmada (clusters given 0 replicas "
        f"get no Work; those with nothing in cluster-b are bridged): {_outcome(arms.small)}; "
        f"{zero_ready(arms.small)} workloads at zero ready, lowest availability of any "
        f"workload {arms.small.lowest_workload_percent:.0f}%.",
        "- The same with the scheduler's empty-workload propagation "
        f"(`emptyWorkloadPropagation: true`): {_outcome(arms.small_ewp)}; "
        f"{zero_ready(arms.small_ewp)} workloads at zero ready, lowest availability of any "
        f"workload {arms.small_ewp.lowest_workload_percent:.0f}%.",
    ]
