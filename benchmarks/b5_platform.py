"""B5: the platform-wide night. Many teams, each with its own schedule, all due at the same
minute; cluster-b has room for a fixed fraction of their surge at first and more as another
tenant (the filler) leaves it over the night. Two arms on identical fresh emulators:

- independent: each team's switch on its own (today's behaviour, with surge): each sizes and
  reserves its surge against what cluster-b says is free, unaware of the others;
- shared: the daemon's way: one SharedBudget (priority, turns by wave) and one SharedReads
  (one list and watch per kind) lent to every switch.

Measured on the emulator's clock: GPUs requested in cluster-b beyond its allocatable
(allocated plus pods pending for room), the makespan (first window start to last run
finished), each team's wait from window start to its first surge, the requests, and the
memory the shared arm's switches add to the process.
"""

from __future__ import annotations

import resource
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import scenario as sc
from benchmarks.harness import RunConfig, Section, SimEngineClock, karmada_client, wait_until
from benchmarks.schedules import load_one, write_schedule

SPEED = 5.0
GPU = "nvidia.com/gpu"
REPLICAS = 5  # per Deployment: 4 in cluster-a and 1 in cluster-b by day, 5 in cluster-b at night
ROOM_FRACTION = 0.1  # of the whole night's surge, free in cluster-b at the start
RELEASE_SECONDS = 60.0  # the filler leaves cluster-b over this long (simulated seconds)
RELEASE_STEPS = 12
STARTUP = 2.0
TERMINATION = 1.0


@dataclass(frozen=True)
class Night:
    teams: int
    per_team: int
    release_seconds: float = RELEASE_SECONDS  # the filler leaves cluster-b over this long

    @property
    def workloads(self) -> int:
        return self.teams * self.per_team

    @property
    def surge(self) -> int:
        """GPUs the night adds to cluster-b: 4 more replicas per workload."""
        return self.workloads * (REPLICAS - 1)

    @property
    def room(self) -> int:
        """Free in cluster-b at the start: a fraction of the night, and at least one team's
        whole night (so that each team's plan fits on its own, as each does today)."""
        return max(self.per_team * (REPLICAS - 1), int(self.surge * ROOM_FRACTION))

    @property
    def filler(self) -> int:
        return self.surge - self.room

    def capacity_bound(self) -> float:
        """The least time any schedule of waves could take: the last surge fits only once the
        filler has left entirely (room + filler = surge), then its pods terminate and the
        surged ones start."""
        return self.release_seconds + TERMINATION + STARTUP


def sizes(cfg: RunConfig) -> Night:
    if cfg.tiny:
        return Night(3, 2, release_seconds=20.0)
    return Night(10, 10) if cfg.quick else Night(100, 50)


def team_name(i: int) -> str:
    return f"t{i:03d}"


def topology(night: Night) -> list[dict[str, Any]]:
    fleet = sc.Fleet(workloads=0, startup_seconds=STARTUP, termination_seconds=TERMINATION,
                     gpu_a=night.workloads * REPLICAS + 16,
                     gpu_b=night.workloads + night.filler + night.room, scheduler_latency=0.05)
    docs = sc.topology(fleet, [])
    filler_policy = sc.cpp("filler", {"clusterAffinity": {"clusterNames": ["cluster-b"]}},
                           selector={"atms-app/teamid": "filler"})
    docs.append(filler_policy)
    docs.append(sc.deployment("filler", night.filler, "filler"))
    for i in range(night.teams):
        team = team_name(i)
        docs.append(sc.cpp(f"team-{team}", sc.static_placement({"cluster-a": 4, "cluster-b": 1}),
                           selector={"atms-app/teamid": team}))
        docs += [sc.deployment(f"{team}-w{j:02d}", REPLICAS, team)
                 for j in range(night.per_team)]
    return docs


def schedules(night: Night, workdir: Path) -> list[Any]:
    out = []
    for i in range(night.teams):
        team = team_name(i)
        window = {"name": "night", "start": "23:00", "trigger": "touch", "policies": [
            {"kind": "ClusterPropagationPolicy", "name": f"team-{team}",
             "patch": {"spec": {"placement": sc.static_placement({"cluster-b": 1})}}}]}
        rollout = {"waveSize": "100%", "pauseBetweenWaves": "0s", "waveTimeout": "1h",
                   "floors": [{"clusters": ["cluster-b"], "minReadyReplicas": 1}],
                   "onFailure": "halt", "strategy": "surge",
                   "surge": {"headroomPercent": 0, "whenNoRoom": "refuse"}}
        workloads = [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": sc.NAMESPACE,
                      "labelSelector": {"matchLabels": {"atms-app/teamid": team}}}]
        out.append(load_one(write_schedule(workdir, f"team-{team}", [window], rollout,
                                           workloads)))
    return out


class Overcommit:
    """Samples cluster-b's GPUs requested beyond allocatable (a thread, until stopped)."""

    def __init__(self, emu: Any, allocatable: int) -> None:
        self.emu, self.allocatable = emu, allocatable
        self.peak = 0.0
        self.at: tuple[float, dict[str, int], dict[str, int]] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            used, pending = self.emu.controllers.members.cluster_usage("cluster-b")
            requested = used.get(GPU, 0) + pending.get(GPU, 0)
            over = float(requested - self.allocatable)
            if over > self.peak:
                self.peak = over
                self.at = (self.emu.clock.now(), dict(used), dict(pending))

    def __enter__(self) -> Overcommit:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def release_filler(emu: Any, night: Night, stop: threading.Event) -> None:
    """Scale the filler down in steps over RELEASE_SECONDS of simulated time."""
    client = karmada_client(emu, "filler")
    res = client.resource_for("apps/v1", "Deployment")
    step_seconds = night.release_seconds / RELEASE_STEPS / SPEED
    for step in range(1, RELEASE_STEPS + 1):
        if stop.wait(step_seconds):
            return
        replicas = round(night.filler * (1 - step / RELEASE_STEPS))
        client.request("patch", res, "PATCH", res.path(sc.NAMESPACE, "filler"),
                       body={"spec": {"replicas": replicas}},
                       content_type="application/merge-patch+json")


@dataclass
class FirstSurge:
    """A team's view of a budget that notes when its first reservation was granted."""

    inner: Any
    now: Callable[[], float]
    first: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, holder: str, need: Any, free: Any) -> bool:
        granted = bool(self.inner.reserve(holder, need, free))
        with self.lock:
            if granted and self.first is None:
                self.first = self.now()
        return granted

    def release(self, holder: str) -> None:
        self.inner.release(holder)


def arm(night: Night, workdir: Path, shared: bool) -> dict[str, float]:
    from tidal.daemon.budget import SharedBudget
    from tidal.engine.budget import OwnBudget
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.switch import run_switch
    from tidal.karmada.informer import SharedReads
    from tidal_sim.clock import ScaledClock
    from tidal_sim.emulator import Emulator

    emu = Emulator(topology(night), clock=ScaledClock(SPEED)).start()
    try:
        if not wait_until(lambda: _day_settled(emu, night), 600, interval=0.2):
            raise RuntimeError("the day distribution did not converge")
        loaded = schedules(night, workdir / ("shared" if shared else "independent"))
        clock = SimEngineClock(emu.clock)
        client = karmada_client(emu)
        shared_budget = SharedBudget(clock)
        reads = SharedReads(client) if shared else None
        views = {s.schedule.name: FirstSurge(
            shared_budget.for_schedule(s.schedule.name) if shared else OwnBudget(),
            emu.clock.now) for s in loaded}
        results: dict[str, str] = {}
        emu.reset_requests()
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = emu.clock.now()
        stop = threading.Event()

        def one(s: Any) -> None:
            name = s.schedule.name
            try:
                kw: dict[str, Any] = {"budget": views[name]}
                if reads is not None:
                    kw["reads"] = reads
                record = run_switch(client, s, "night", clock=clock, journal=InMemoryJournal(),
                                    **kw)
                results[name] = str(record.result)
            except Exception as exc:  # a refused or failed team is a result, not a crash
                results[name] = f"{type(exc).__name__}: {exc}"[:200]
            finally:
                if shared:
                    shared_budget.end_run(name)

        releaser = threading.Thread(target=release_filler, args=(emu, night, stop), daemon=True)
        threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in loaded]
        allocatable = night.workloads + night.filler + night.room
        with Overcommit(emu, allocatable) as over, \
                (reads.in_use() if reads is not None else _nothing()):
            releaser.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join(3600)
        end = emu.clock.now()
        stop.set()
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        waits = [v.first - start for v in views.values() if v.first is not None]
        ok = sum(1 for r in results.values() if r == "succeeded")
        failures = sorted({r for r in results.values() if r != "succeeded"})
        if failures:
            print(f"  b5 {'shared' if shared else 'independent'}: {failures[:3]}", flush=True)
        return {"peak_overcommit_gpus": over.peak, "makespan_seconds": end - start,
                "requests": float(emu.requests()["total"]), "succeeded": float(ok),
                "max_wait_seconds": max(waits) if waits else -1.0,
                "min_wait_seconds": min(waits) if waits else -1.0,
                "rss_added_mb": max(0.0, (rss1 - rss0) / 1024.0)}
    finally:
        emu.stop()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _day_settled(emu: Any, night: Night) -> bool:
    current = emu.controllers.timeline.current()
    if len(current) < night.workloads * 2 + 1:
        return False
    return all(assigned == ready for assigned, ready in current.values()) and \
        bool(emu.bindings_report_ready())


def run(cfg: RunConfig) -> Section:
    section = Section("b5", "B5: the platform-wide night")
    night = sizes(cfg)
    workdir = Path(tempfile.mkdtemp(prefix="tidal-b5-"))
    t0 = time.monotonic()
    independent = arm(night, workdir, shared=False)
    shared = arm(night, workdir, shared=True)
    bound = night.capacity_bound()
    section.put("workloads", night.workloads)
    section.put("schedules", night.teams)
    section.put("independent.peak_overcommit_gpus", independent["peak_overcommit_gpus"])
    section.put("shared.peak_overcommit_gpus", shared["peak_overcommit_gpus"])
    section.put("shared.makespan_seconds", round(shared["makespan_seconds"], 1))
    section.put("capacity_bound_seconds", round(bound, 1))
    section.put("shared.requests", shared["requests"])
    section.put("shared.peak_rss_mb", round(shared["rss_added_mb"], 1))
    section.put("shared.max_wait_seconds", round(shared["max_wait_seconds"], 1))
    section.put("shared.min_wait_seconds", round(shared["min_wait_seconds"], 1))
    section.say(
        f"{night.teams} schedules of {night.per_team} Deployments ({night.workloads:,} "
        f"workloads, {REPLICAS} replicas of 1 GPU each, 4:1 by day, all in cluster-b at night), "
        f"all due at the same minute, `strategy: surge`. cluster-b has room for "
        f"{ROOM_FRACTION:.0%} of the night's surge ({night.room} of {night.surge} GPUs) at the "
        f"start; another tenant leaves it in {RELEASE_STEPS} steps over "
        f"{night.release_seconds:g} s. Pods start in {STARTUP:g} s; emulator clock at {SPEED:g}x; "
        f"both arms ran in {time.monotonic() - t0:.0f} s of wall time.",
        "",
        "| arm | teams switched | peak GPUs requested beyond cluster-b's allocatable | "
        "makespan (s) | requests | wait to first surge, min-max (s) |",
        "|---|---|---|---|---|---|",
        *(f"| {label} | {int(r['succeeded'])}/{night.teams} | {r['peak_overcommit_gpus']:g} | "
          f"{r['makespan_seconds']:.1f} | {int(r['requests']):,} | "
          f"{r['min_wait_seconds']:.1f}-{r['max_wait_seconds']:.1f} |"
          for label, r in (("independent", independent), ("shared budget", shared))),
        "",
        f"API requests per workload moved: independent "
        f"{independent['requests'] / night.workloads:.1f}, shared "
        f"{shared['requests'] / night.workloads:.1f} (B3 reports one switch's requests for "
        "1,000 workloads; divide by 1,000 to compare).",
        "",
        f"Capacity bound: {bound:.1f} s (the filler's release, one termination, one start-up);"
        f" makespan / bound = {shared['makespan_seconds'] / bound:.2f}. Memory: "
        f"`b5.shared.peak_rss_mb` is what the shared arm added to this process's peak RSS "
        f"({shared['rss_added_mb']:.1f} MB); the emulator runs in the same process, so this "
        "is the switches' share only when the arm raises the peak.",
    )
    return section
