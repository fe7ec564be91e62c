"""B5: the platform-wide night. Many teams, each with its own schedule, all due at the same
minute; cluster-b has room for a fixed fraction of their surge at first and more as another
tenant (the filler) leaves it over the night. Three arms on identical fresh emulators:

- independent: each team's switch on its own (today's behaviour, with surge): each sizes and
  reserves its surge against what cluster-b says is free, unaware of the others;
- shared: the daemon's way: one SharedBudget (priority, turns by wave) and one SharedReads
  (one list and watch per kind) lent to every switch, free capacity read from the members'
  Nodes and Pods (the default capacity source);
- shared_status: the same, free capacity read from Karmada's Cluster status.

Measured on the emulator's clock: GPUs requested in cluster-b beyond its allocatable
(allocated plus pods pending for room), the makespan (first window start to last run
finished), each team's wait from window start to its first surge, the requests, and the
peak RSS of the daemon's process (the switches run in a process of their own).
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

from benchmarks import scenario as sc
from benchmarks.harness import RunConfig, Section, SimEngineClock, karmada_client, wait_until
from benchmarks.schedules import load_one, write_schedule
from tidal_sim.clock import Clock as SimClock

SPEED = 5.0
GPU = "nvidia.com/gpu"
REPLICAS = 5  # per Deployment: 4 in cluster-a and 1 in cluster-b by day, 5 in cluster-b at night
ROOM_FRACTION = 0.1  # of the whole night's surge, free in cluster-b at the start
RELEASE_SECONDS = 60.0  # the filler leaves cluster-b over this long (simulated seconds)
RELEASE_STEPS = 12
FULL_SPEED = 1.0  # at 5,000 workloads the emulator needs real time to keep up with its clock
INDEPENDENT_CAP_SECONDS = 420.0  # wall, full size: its overcommitted surges may never fit
SHARED_CAP_SECONDS = 1800.0  # wall: the shared arm is never meant to be cut off
STARTUP = 2.0
TERMINATION = 1.0


@dataclass(frozen=True)
class Night:
    teams: int
    per_team: int
    release_seconds: float = RELEASE_SECONDS  # the filler leaves cluster-b over this long
    speed: float = SPEED  # the emulator's clock against real time
    cap_seconds: float = 1800.0  # wall seconds an arm's switches get before it is cut off
    # Karmada's --cluster-status-update-frequency, and the budget's capacity settle (the
    # daemon's TIDAL_SCHEDULER__CAPACITY_SETTLE_SECONDS) that goes with it
    status_period: float = 10.0
    capacity_settle: float = 15.0
    # the daemon's scheduler.capacity_source: the members' Nodes and Pods watched through the
    # cluster proxy (auto, the default, with the shared watches the shared arm has), or
    # Karmada's Cluster status (the emulator then writes no member pods behind the proxy)
    capacity_source: Literal["auto", "cluster-status", "members"] = "auto"

    @property
    def reads_members(self) -> bool:
        return self.capacity_source != "cluster-status"

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
    if cfg.quick:
        return Night(10, 10)
    return Night(100, 50, speed=FULL_SPEED, cap_seconds=INDEPENDENT_CAP_SECONDS)


def team_name(i: int) -> str:
    return f"t{i:03d}"


def namespace_of(team: str) -> str:
    """Each team's Deployments live in the team's own namespace, as on a shared platform."""
    return f"team-{team}"


def topology(night: Night) -> list[dict[str, Any]]:
    fleet = sc.Fleet(
        workloads=0,
        startup_seconds=STARTUP,
        termination_seconds=TERMINATION,
        gpu_a=night.workloads * REPLICAS + 16,
        gpu_b=night.workloads + night.filler + night.room,
        scheduler_latency=0.05,
    )
    docs = sc.topology(fleet, [])
    docs[0]["spec"]["clusterStatusUpdateSeconds"] = night.status_period
    docs[0]["spec"]["memberPods"] = night.reads_members
    filler_policy = sc.cpp(
        "filler",
        {"clusterAffinity": {"clusterNames": ["cluster-b"]}},
        selector={"atms-app/teamid": "filler"},
    )
    docs.append(filler_policy)
    docs.append(sc.deployment("filler", night.filler, "filler"))
    for i in range(night.teams):
        team = team_name(i)
        docs.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_of(team)}}
        )
        docs.append(
            sc.cpp(
                f"team-{team}",
                sc.static_placement({"cluster-a": 4, "cluster-b": 1}),
                selector={"atms-app/teamid": team},
                namespace=namespace_of(team),
            )
        )
        docs += [
            sc.deployment(f"{team}-w{j:02d}", REPLICAS, team, namespace=namespace_of(team))
            for j in range(night.per_team)
        ]
    return docs


def schedules(night: Night, workdir: Path) -> list[Any]:
    out = []
    for i in range(night.teams):
        team = team_name(i)
        window = {
            "name": "night",
            "start": "23:00",
            "trigger": "touch",
            "policies": [
                {
                    "kind": "ClusterPropagationPolicy",
                    "name": f"team-{team}",
                    "patch": {"spec": {"placement": sc.static_placement({"cluster-b": 1})}},
                }
            ],
        }
        rollout = {
            "waveSize": "100%",
            "pauseBetweenWaves": "0s",
            "waveTimeout": "1h",
            "floors": [{"clusters": ["cluster-b"], "minReadyReplicas": 1}],
            "onFailure": "halt",
            "strategy": "surge",
            "surge": {"headroomPercent": 0, "whenNoRoom": "refuse"},
        }
        workloads = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": namespace_of(team),
                "labelSelector": {"matchLabels": {"atms-app/teamid": team}},
            }
        ]
        out.append(load_one(write_schedule(workdir, f"team-{team}", [window], rollout, workloads)))
    return out


class Overcommit:
    """Samples cluster-b's GPUs requested beyond allocatable (a thread, until stopped), and
    the simulated times at which its Cluster status changed (what the switches can see)."""

    def __init__(self, emu: Any, allocatable: int) -> None:
        self.emu, self.allocatable = emu, allocatable
        self.peak = 0.0
        self.at: tuple[float, dict[str, int], dict[str, int]] | None = None
        self.status_changes: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from benchmarks.harness import rtype

        cluster = rtype(self.emu, "cluster.karmada.io/v1alpha1", "Cluster")
        seen = ""
        while not self._stop.wait(0.05):
            used, pending = self.emu.controllers.members.cluster_usage("cluster-b")
            requested = used.get(GPU, 0) + pending.get(GPU, 0)
            over = float(requested - self.allocatable)
            if over > self.peak:
                self.peak = over
                self.at = (self.emu.clock.now(), dict(used), dict(pending))
            obj = self.emu.store.get(cluster, None, "cluster-b")
            summary = str((obj.get("status") or {}).get("resourceSummary"))
            if summary != seen:
                seen = summary
                self.status_changes.append(self.emu.clock.now())

    def __enter__(self) -> Overcommit:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def release_filler(emu: Any, night: Night, stop: threading.Event, done: list[float]) -> None:
    """Scale the filler down in steps over RELEASE_SECONDS of simulated time: step k at k
    twelfths of it after the start (not k waits, which would drift by each patch's latency
    and leave the filler in cluster-b after the capacity bound assumes it gone); `done`
    gets the simulated time of the last step."""
    client = karmada_client(emu, "filler")
    res = client.resource_for("apps/v1", "Deployment")
    step_seconds = night.release_seconds / RELEASE_STEPS / night.speed
    began = time.monotonic()
    for step in range(1, RELEASE_STEPS + 1):
        if stop.wait(max(0.0, began + step * step_seconds - time.monotonic())):
            return
        replicas = round(night.filler * (1 - step / RELEASE_STEPS))
        client.request(
            "patch",
            res,
            "PATCH",
            res.path(sc.NAMESPACE, "filler"),
            body={"spec": {"replicas": replicas}},
            content_type="application/merge-patch+json",
        )
        done.append(emu.clock.now())


@dataclass
class FirstSurge:
    """A team's view of a budget that notes when its first reservation was granted."""

    inner: Any
    now: Callable[[], float]
    first: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, holder: str, need: Any, free: Any, versions: Any = None) -> bool:
        granted = bool(self.inner.reserve(holder, need, free, versions))
        with self.lock:
            if granted and self.first is None:
                self.first = self.now()
        return granted

    def running(self, holder: str, versions: Any) -> None:
        self.inner.running(holder, versions)

    def release(self, holder: str, versions: Any = None) -> None:
        self.inner.release(holder, versions)


class SyncedClock(SimClock):
    """The emulator's scaled clock, read from another process: the same speed and origin
    (CLOCK_MONOTONIC is system-wide), no timers of its own."""

    def __init__(self, speed: float, sim0: float, real0: float) -> None:
        super().__init__()
        self.speed, self._sim0, self._real0 = speed, sim0, real0

    def now(self) -> float:
        return self._sim0 + (time.monotonic() - self._real0) * self.speed


@dataclass(frozen=True)
class DaemonArm:
    """What the daemon process needs: where the emulator is, its clock, the arm."""

    url: str
    speed: float
    sim0: float
    real0: float
    night: Night
    workdir: Path
    shared: bool
    cap_seconds: float  # wall seconds the switches get before the arm is cut off


def _daemon(conn: Connection, spec: DaemonArm) -> None:
    """The daemon's side of one arm, in a process of its own: the switches of every team (one
    budget and one set of informers when shared), so this process's peak RSS is theirs."""
    from kubernetes import client as kube

    from tidal.daemon.budget import SharedBudget
    from tidal.engine.budget import OwnBudget
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.switch import run_switch
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.informer import SharedReads
    from tidal.logs import configure_logging

    log_file = (spec.workdir / f"daemon-{'shared' if spec.shared else 'independent'}.log").open(
        "w", encoding="utf-8"
    )
    configure_logging("json", "INFO", stream=log_file)  # as the daemon logs, to a file
    config = kube.Configuration()
    config.host = spec.url
    config.api_key = {"authorization": "Bearer sim:tidal"}
    config.connection_pool_maxsize = 32
    client = KarmadaClient(kube.ApiClient(config))
    sim = SyncedClock(spec.speed, spec.sim0, spec.real0)
    clock = SimEngineClock(sim)
    loaded = schedules(spec.night, spec.workdir / ("shared" if spec.shared else "independent"))
    shared_budget = SharedBudget(clock, settle_seconds=spec.night.capacity_settle)
    members = spec.night.reads_members
    reads = SharedReads(client, member_capacity=members) if spec.shared else None
    views = {
        s.schedule.name: FirstSurge(
            shared_budget.for_schedule(s.schedule.name) if spec.shared else OwnBudget(), sim.now
        )
        for s in loaded
    }
    results: dict[str, str] = {}

    def one(s: Any) -> None:
        name = s.schedule.name
        try:
            kw: dict[str, Any] = {"budget": views[name]}
            if reads is not None:
                kw["reads"] = reads
            record = run_switch(client, s, "night", clock=clock, journal=InMemoryJournal(), **kw)
            results[name] = str(record.result)
        except Exception as exc:  # a refused or failed team is a result, not a crash
            results[name] = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            if spec.shared:
                shared_budget.end_run(name)

    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in loaded]
    conn.send("ready")
    start = float(conn.recv())
    with reads.in_use() if reads is not None else _nothing():
        for t in threads:
            t.start()
        cutoff = time.monotonic() + spec.cap_seconds
        for t in threads:
            t.join(max(0.0, cutoff - time.monotonic()))
    conn.send(
        {
            "results": dict(results),
            "finished": sim.now(),
            "waits": [v.first - start for v in views.values() if v.first is not None],
            "peak_rss_mb": peak_rss_mb(),
            "cut_off": any(t.is_alive() for t in threads),
        }
    )


def arm(night: Night, workdir: Path, shared: bool, cap_seconds: float) -> dict[str, float]:
    from tidal_sim.clock import ScaledClock
    from tidal_sim.emulator import Emulator

    speed = night.speed
    emu = Emulator(topology(night), clock=ScaledClock(speed)).start()
    proc: Any = None
    try:
        if not wait_until(lambda: _day_settled(emu, night), 600, interval=0.2):
            raise RuntimeError("the day distribution did not converge")
        real0 = time.monotonic()
        spec = DaemonArm(
            emu.url, speed, emu.clock.now(), real0, night, workdir, shared, cap_seconds
        )
        ctx = mp.get_context("spawn")
        conn, child = ctx.Pipe()
        proc = ctx.Process(target=_daemon, args=(child, spec), daemon=True)
        proc.start()
        if conn.recv() != "ready":
            raise RuntimeError("the daemon process did not start")
        allocatable = night.workloads + night.filler + night.room
        stop = threading.Event()
        steps: list[float] = []
        releaser = threading.Thread(
            target=release_filler, args=(emu, night, stop, steps), daemon=True
        )
        with Overcommit(emu, allocatable) as over:
            emu.reset_requests()
            start = emu.clock.now()
            conn.send(start)
            releaser.start()
            if not conn.poll(cap_seconds + 120):
                raise RuntimeError("the daemon process did not report")
            got = conn.recv()
            stop.set()
        results: dict[str, str] = got["results"]
        waits: list[float] = got["waits"]
        ok = sum(1 for r in results.values() if r == "succeeded")
        gone = steps[-1] - start if len(steps) == RELEASE_STEPS else -1.0
        # the first refresh of cluster-b's status once the filler's last pods had terminated:
        # from then on the switches can see all the room (Karmada refreshes it every 10 s)
        seen = next(
            (
                t - start
                for t in over.status_changes
                if gone >= 0 and t - start >= gone + TERMINATION
            ),
            -1.0,
        )
        failures = sorted({r for r in results.values() if r != "succeeded"})
        if failures:
            print(f"  b5 {'shared' if shared else 'independent'}: {failures[:3]}", flush=True)
        return {
            "peak_overcommit_gpus": over.peak,
            "makespan_seconds": got["finished"] - start,
            "requests": float(emu.requests()["total"]),
            "succeeded": float(ok),
            "max_wait_seconds": max(waits) if waits else -1.0,
            "min_wait_seconds": min(waits) if waits else -1.0,
            "peak_rss_mb": float(got["peak_rss_mb"]),
            "cut_off": float(got["cut_off"]),
            "filler_gone_seconds": gone,
            "room_seen_seconds": seen,
        }
    finally:
        if proc is not None:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        emu.stop()


def peak_rss_mb() -> float:
    """This process's peak resident set since it started its program: VmHWM (Linux). Not
    getrusage's ru_maxrss: across fork and exec it keeps the parent's size at the fork (the
    emulator's, here), as the child mapped the parent's pages until its exec."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _day_settled(emu: Any, night: Night) -> bool:
    """Every day replica ready and reported, and cluster-b's Cluster status counting them and
    the filler (a night started before that refresh would size its surges on room the filler
    takes: the day, as Karmada reports it, is where every arm starts)."""
    from benchmarks.harness import rtype

    current = emu.controllers.timeline.current()
    if len(current) < night.workloads * 2 + 1:
        return False
    if not all(assigned == ready for assigned, ready in current.values()):
        return False
    cluster = emu.store.get(rtype(emu, "cluster.karmada.io/v1alpha1", "Cluster"), None, "cluster-b")
    allocated = ((cluster.get("status") or {}).get("resourceSummary") or {}).get("allocated") or {}
    day_and_filler = night.workloads * (REPLICAS - 4) + night.filler
    return str(allocated.get(GPU)) == str(day_and_filler) and bool(emu.bindings_report_ready())


def run(cfg: RunConfig) -> Section:
    section = Section("b5", "B5: the platform-wide night")
    night = sizes(cfg)
    workdir = Path(tempfile.mkdtemp(prefix="tidal-b5-"))
    t0 = time.monotonic()
    independent = arm(night, workdir, shared=False, cap_seconds=night.cap_seconds)
    shared = arm(night, workdir, shared=True, cap_seconds=SHARED_CAP_SECONDS)
    # the same shared arm with the daemon reading Karmada's Cluster status
    # (TIDAL_SCHEDULER__CAPACITY_SOURCE=cluster-status) instead of the members' capacity
    status_night = dataclasses.replace(night, capacity_source="cluster-status")
    (workdir / "status").mkdir()
    status = arm(status_night, workdir / "status", shared=True, cap_seconds=SHARED_CAP_SECONDS)
    bound = night.capacity_bound()
    section.put("workloads", night.workloads)
    section.put("schedules", night.teams)
    section.put("independent.peak_overcommit_gpus", independent["peak_overcommit_gpus"])
    section.put("shared.peak_overcommit_gpus", shared["peak_overcommit_gpus"])
    section.put("shared.makespan_seconds", round(shared["makespan_seconds"], 1))
    section.put("capacity_bound_seconds", round(bound, 1))
    section.put(
        "shared.makespan_over_bound",
        round(shared["makespan_seconds"] / bound, 2) if bound > 0 else 0.0,
    )
    section.put("shared.requests", shared["requests"])
    section.put("shared.peak_rss_mb", round(shared["peak_rss_mb"], 1))
    section.put("shared.max_wait_seconds", round(shared["max_wait_seconds"], 1))
    section.put("shared.min_wait_seconds", round(shared["min_wait_seconds"], 1))
    section.put(
        "shared_status.makespan_over_bound",
        round(status["makespan_seconds"] / bound, 2) if bound > 0 else 0.0,
    )
    section.put("shared_status.makespan_seconds", round(status["makespan_seconds"], 1))
    section.put("shared_status.peak_overcommit_gpus", status["peak_overcommit_gpus"])
    section.put("shared_status.peak_rss_mb", round(status["peak_rss_mb"], 1))
    section.put("shared_status.requests", status["requests"])
    # where the status arm's makespan above the bound goes: until Cluster status shows the
    # last room, and from then to the last team's end
    seen = status["room_seen_seconds"]
    section.put("shared.filler_gone_seconds", round(shared["filler_gone_seconds"], 1))
    section.put("shared_status.room_seen_seconds", round(seen, 1))
    section.put(
        "shared_status.status_lag_seconds",
        round(seen - status["filler_gone_seconds"] - TERMINATION, 1) if seen >= 0 else -1.0,
    )
    section.put(
        "shared_status.after_room_seen_seconds",
        round(status["makespan_seconds"] - seen, 1) if seen >= 0 else -1.0,
    )
    section.say(
        f"{night.teams} schedules of {night.per_team} Deployments ({night.workloads:,} "
        f"workloads, {REPLICAS} replicas of 1 GPU each, 4:1 by day, all in cluster-b at night), "
        f"all due at the same minute, `strategy: surge`. cluster-b has room for "
        f"{ROOM_FRACTION:.0%} of the night's surge ({night.room} of {night.surge} GPUs) at the "
        f"start; another tenant leaves it in {RELEASE_STEPS} steps over "
        f"{night.release_seconds:g} s. Pods start in {STARTUP:g} s; emulator clock at "
        f"{night.speed:g}x; "
        f"the three arms ran in {time.monotonic() - t0:.0f} s of wall time.",
        "",
        "| arm | teams switched | peak GPUs requested beyond cluster-b's allocatable | "
        "makespan (s) | requests | wait to first surge, min-max (s) |",
        "|---|---|---|---|---|---|",
        *(
            f"| {label} | {int(r['succeeded'])}/{night.teams} | {r['peak_overcommit_gpus']:g} | "
            f"{r['makespan_seconds']:.1f} | {int(r['requests']):,} | "
            f"{r['min_wait_seconds']:.1f}-{r['max_wait_seconds']:.1f} |"
            for label, r in (
                ("independent", independent),
                ("shared budget, members' capacity (default)", shared),
                ("shared budget, Cluster status", status),
            )
        ),
        "",
        f"API requests per workload moved: independent "
        f"{independent['requests'] / night.workloads:.1f}, shared "
        f"{shared['requests'] / night.workloads:.1f} (B3 reports one switch's requests for "
        "1,000 workloads; divide by 1,000 to compare).",
        "",
        f"Capacity bound: {bound:.1f} s (the filler's release, one termination, one start-up);"
        f" makespan / bound = {shared['makespan_seconds'] / bound:.2f} "
        f"(`b5.shared.makespan_over_bound`), the daemon reading the members' capacity as it "
        f"does by default (`TIDAL_SCHEDULER__CAPACITY_SOURCE=auto`: their Nodes and Pods "
        f"watched through the cluster proxy, so the room the filler leaves is seen as its pods "
        f"go). The filler's last step came at {shared['filler_gone_seconds']:.1f} s.",
        "",
        f"Reading Karmada's Cluster status instead (`=cluster-status`, refreshed by Karmada "
        f"every 10 s): makespan / bound = {status['makespan_seconds'] / bound:.2f} "
        f"(`b5.shared_status.makespan_over_bound`), {status['peak_overcommit_gpus']:g} GPUs "
        f"over-committed; its status first showed the filler's pods gone at {seen:.1f} s, "
        f"{seen - status['filler_gone_seconds'] - TERMINATION:.1f} s after they terminated; the "
        f"last team finished {status['makespan_seconds'] - seen:.1f} s after that.",
        "",
        f"Memory: `b5.shared.peak_rss_mb` is the peak RSS of the daemon's process (every "
        f"team's switch, the shared budget and informers; the emulator runs in another "
        f"process): {shared['peak_rss_mb']:.1f} MB (independent arm's: "
        f"{independent['peak_rss_mb']:.1f} MB; reading Cluster status: "
        f"{status['peak_rss_mb']:.1f} MB).",
        *(
            [
                "",
                f"**The independent arm was cut off** after {night.cap_seconds:g} s of wall "
                f"time with teams still switching (surges overcommitted past cluster-b wait for "
                f"room); its peak overcommit is the peak up to then, makespan not comparable.",
            ]
            if independent["cut_off"]
            else []
        ),
        *(
            ["", "**The shared arm was cut off** before every team finished."]
            if shared["cut_off"] or status["cut_off"]
            else []
        ),
    )
    return section


def what_if(argv: list[str] | None = None) -> dict[str, float]:
    """B5's shared arm alone at full size, with another Cluster status period, capacity
    settle or capacity source: `python -m benchmarks.b5_platform --status-period 0.5
    --capacity-settle 1.5` prints its figures as JSON (docs/benchmarks.md, "Issue 26, seventh
    pass"; `--capacity-source cluster-status`: the Cluster status arm)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.b5_platform")
    parser.add_argument("--status-period", type=float, default=10.0)
    parser.add_argument("--capacity-settle", type=float, default=15.0)
    parser.add_argument(
        "--capacity-source", choices=("auto", "cluster-status", "members"), default="auto"
    )
    parser.add_argument("--quick", action="store_true", help="10 teams of 10 at a 5x clock")
    parser.add_argument("--workdir", type=Path, help="keep the schedules and daemon log here")
    args = parser.parse_args(argv)
    night = dataclasses.replace(
        sizes(RunConfig(Path("."), quick=args.quick)),
        status_period=args.status_period,
        capacity_settle=args.capacity_settle,
        capacity_source=args.capacity_source,
    )
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        out = arm(night, args.workdir, True, SHARED_CAP_SECONDS)
    else:
        with tempfile.TemporaryDirectory(prefix="tidal-b5-") as tmp:
            out = arm(night, Path(tmp), True, SHARED_CAP_SECONDS)
    out["capacity_bound_seconds"] = night.capacity_bound()
    out["makespan_over_bound"] = out["makespan_seconds"] / night.capacity_bound()
    print(json.dumps(out, indent=1, sort_keys=True))
    return out


if __name__ == "__main__":
    what_if()
