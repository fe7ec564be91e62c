"""The demo, wired: emulator on an accelerated clock, the examples brought forward, the real
daemon (scheduler, reconcile, state, run lock, engine, metrics/Events observer), and a main
loop that waits for each switch and fast-forwards the idle time between windows.

Why this way: the daemon's own path decides and runs every window (desired state: at each
resync the window in force that has not been handled is run), so the demo exercises what
production runs; only the starts are rewritten and the clock is fast.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, TextIO

import structlog

from tidal.domain.floors import FloorRule
from tidal.engine.events import EngineEvent
from tidal_sim.demo.clock import DaemonClock, DemoClock
from tidal_sim.demo.picture import TeamSplit, draw_demo, team_splits
from tidal_sim.demo.scenario import (
    DemoWindow,
    ScenarioError,
    bring_forward,
    examples_dir,
    first_start,
    original_moment,
)
from tidal_sim.demo.tracking import Tracker, WindowRun, cluster_totals

STATE_NAMESPACE = "tidal-system"
# Simulated seconds between the clock's start and the first window (pods come up meanwhile).
LEAD_SECONDS = 30.0
FAST_FORWARD_MARGIN = 2.0  # simulated seconds left before a start when fast-forwarding


class DemoError(Exception):
    """The demo could not be set up; the message says why and what to do."""


class Progress(Protocol):
    def start(self, tracker: Tracker) -> None: ...
    def note(self, text: str) -> None: ...
    def on_run(self, run: WindowRun, event: EngineEvent | None, note: str) -> None: ...
    def stop(self) -> None: ...


@dataclass
class DemoOptions:
    cwd: Path
    speed: float = 10.0
    gap: timedelta = timedelta(minutes=10)  # simulated time between the windows
    time_limit: float = 110.0  # wall seconds for the switches
    workdir: Path | None = None


@dataclass
class DemoResult:
    tracker: Tracker
    source: str
    workdir: Path
    kubeconfig: Path
    log: Path
    speed: float
    wall_seconds: float
    emulator: Any = None
    interrupted: bool = False
    splits: list[TeamSplit] = field(default_factory=list)
    clock_end: float = 0.0  # simulated time when the last switch ended

    def picture(self, path: Path) -> Path:
        """The demo's picture at `path` (tidal.plot.PlotUnavailable without matplotlib)."""
        samples = (
            self.emulator.controllers.timeline.samples()
            if self.emulator is not None and self.emulator.controllers is not None
            else []
        )
        return draw_demo(path, self.tracker, samples, self.clock_end)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.tracker.runs)

    @property
    def refused(self) -> bool:
        """A switch the daemon would not start (a plan or preflight that failed)."""
        return any(r.state == "refused" for r in self.tracker.runs)

    def to_json(self, *, kept: bool = False) -> dict[str, Any]:
        """`kept`: the work directory (kubeconfig, daemon log) outlives the command."""
        return {
            "result": "succeeded" if self.ok else "failed",
            "switches": [r.to_json() for r in self.tracker.runs],
            "schedules": self.source,
            "speed": self.speed,
            "wallSeconds": round(self.wall_seconds, 1),
            "kubeconfig": str(self.kubeconfig) if kept else None,
            "log": str(self.log) if kept else None,
            "splits": [s.to_json() for s in self.splits],
        }


def _deployments_ready(emulator: Any) -> bool:
    rtype = emulator.kinds.by_kind("apps/v1", "Deployment")
    items, _ = emulator.store.list(rtype, copy_=False)
    return bool(items) and all(
        int((d.get("status") or {}).get("readyReplicas") or 0)
        >= int((d.get("spec") or {}).get("replicas") or 0)
        for d in items
    )


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _observed_run_switch(tracker: Tracker) -> Callable[..., Any]:
    """The engine's run_switch, telling the tracker when the daemon could not start it."""
    from tidal.engine.switch import run_switch
    from tidal.karmada.errors import KarmadaError

    def run(client: Any, loaded: Any, window_name: str, **kwargs: Any) -> Any:
        try:
            return run_switch(client, loaded, window_name, **kwargs)
        except Exception as exc:
            if not (isinstance(exc, KarmadaError) and exc.retryable):  # retried by the daemon
                tracker.refused(loaded.schedule.name, window_name, exc)
            raise

    return run


class Demo:
    """One demo run. `run()` returns when every switch finished (or the time limit passed);
    the emulator is still up then (for --keep): call `close()`."""

    def __init__(
        self,
        options: DemoOptions,
        make_progress: Callable[
            [Callable[[str], dict[str, tuple[int, int]]], Callable[[], float]], Progress
        ],
    ) -> None:
        self.options = options
        self.make_progress = make_progress
        self.workdir = options.workdir or Path(tempfile.mkdtemp(prefix="tidal-demo-"))
        self.clock: DemoClock | None = None
        self.emulator: Any = None
        self.members: dict[str, set[str]] = {}
        self._log_file: TextIO | None = None
        self.interrupted = False

    # --- set-up ---------------------------------------------------------------------------
    def _schedules(self, first: Any) -> tuple[list[DemoWindow], list[Any], str]:
        from tidal.loading import load_schedules

        source, label = examples_dir(self.options.cwd)
        target = self.workdir / "schedules"
        try:
            windows = bring_forward(source, target, first=first, gap=self.options.gap)
        except ScenarioError as exc:
            raise DemoError(str(exc)) from None
        result = load_schedules([target])
        if result.errors:
            where = "; ".join(str(e) for e in result.errors[:3])
            raise DemoError(
                f"the example schedules from {label} do not validate: {where}; "
                "fix them (tidal validate) or run the demo outside the checkout"
            )
        return windows, list(result.schedules), label

    def _start_emulator(self, start: float) -> Any:
        from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator

        self.clock = DemoClock(self.options.speed, start=start)
        try:
            emulator = Emulator(DEFAULT_TOPOLOGY, clock=self.clock)
            # The workloads start spread by the general estimator alone; each team's capacity
            # is pinned once its schedules are read (_pin_before_first_windows).
            emulator.topology.settings.team_estimator.suspended = True
            if emulator.validator.source.notice:
                sys.stderr.write(f"tidal demo: {emulator.validator.source.notice}\n")
            self.emulator = emulator.start()
        except OSError as exc:
            raise DemoError(f"cannot start the emulator on loopback: {exc}") from None
        if not _wait(lambda: _deployments_ready(self.emulator), 30.0):
            raise DemoError(
                "the emulator's Deployments did not become ready within 30 s; "
                "is the machine overloaded? try again"
            )
        return self.emulator

    def totals(self, schedule: str) -> dict[str, tuple[int, int]]:
        if self.emulator is None or self.emulator.controllers is None:
            return {}
        return cluster_totals(
            self.emulator.controllers.timeline.current(), self.members.get(schedule, set())
        )

    def sim_now(self) -> float:
        return self.clock.now() if self.clock is not None else time.time()

    # --- the run --------------------------------------------------------------------------
    def run(self) -> DemoResult:
        from tidal.daemon.app import Daemon, Wiring
        from tidal.karmada.client import KarmadaClient
        from tidal.logs import configure_logging
        from tidal.metrics import Metrics
        from tidal.settings import SettingsError

        began = time.monotonic()
        real_now = time.time()
        first = first_start(real_now, LEAD_SECONDS)
        windows, loaded, label = self._schedules(first)
        log_path = self.workdir / "daemon.log"
        # The daemon's and engine's JSON log lines go to a file (open until close()): the
        # terminal shows the rendered progress instead.
        self._log_file = log_path.open("w", encoding="utf-8")
        configure_logging("json", "INFO", stream=self._log_file)
        logging.getLogger("apscheduler").setLevel(logging.WARNING)

        emulator = self._start_emulator(first.timestamp() - LEAD_SECONDS)
        assert self.clock is not None
        kubeconfig = emulator.write_kubeconfig(self.workdir / "kubeconfig")
        metrics = Metrics()
        client = KarmadaClient.from_kubeconfig(kubeconfig, on_request=metrics.on_request)
        floors = self._read_teams(client, loaded, windows)
        start_split = {
            name: {c: ready for c, (ready, _) in self.totals(name).items()} for name in self.members
        }
        self._pin_before_first_windows(windows)
        progress = self.make_progress(self.totals, self.sim_now)
        tracker = Tracker(
            windows,
            floors,
            self.members,
            self.sim_now,
            listener=progress.on_run,
            totals=self.totals,
        )
        try:
            settings = self._settings()
        except SettingsError as exc:
            raise DemoError(str(exc)) from None
        wiring = Wiring(
            clock=DaemonClock(self.clock),
            run_switch=_observed_run_switch(tracker),
            metrics=metrics,
            on_event=tracker.on_event,
            watch=False,
        )
        daemon = Daemon(settings, client=client, wiring=wiring)
        progress.start(tracker)
        progress.note(
            f"emulator up at {emulator.url} (simulated clock x{self.options.speed:g});"
            f" schedules from {label}"
        )
        for w in windows:
            progress.note(
                f"{w.schedule} {w.window}: start {w.original!r} ({w.time_zone}) "
                f"brought forward to {w.at:%H:%M:%S}Z"
            )
        try:
            daemon.start(serve_http=False)
            self._loop(tracker, daemon, progress, began)
        finally:
            daemon.shutdown(grace_seconds=10)
            progress.stop()
        tracker.judge(
            emulator.controllers.timeline.samples() if emulator.controllers is not None else []
        )
        splits = team_splits(
            tracker,
            start_split,
            self._dynamic(),
            {name: bool(self._team_limits(m)) for name, m in self.members.items()},
        )
        return DemoResult(
            tracker,
            label,
            self.workdir,
            kubeconfig,
            log_path,
            self.options.speed,
            time.monotonic() - began,
            emulator,
            interrupted=self.interrupted,
            splits=splits,
            clock_end=self.sim_now(),
        )

    def _dynamic(self) -> dict[str, bool]:
        """Each team whose bindings divide by free capacity (dynamicWeight) now."""
        if self.emulator is None:
            return {}
        rtype = self.emulator.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
        items, _ = self.emulator.store.list(rtype, copy_=False)
        dynamic: set[str] = set()
        for item in items:
            spec = item.get("spec") or {}
            weights = ((spec.get("placement") or {}).get("replicaScheduling") or {}).get(
                "weightPreference"
            ) or {}
            if weights.get("dynamicWeight"):
                ref = spec.get("resource") or {}
                dynamic.add(f"{ref.get('namespace')}/{ref.get('kind')}/{ref.get('name')}")
        return {name: bool(members & dynamic) for name, members in self.members.items()}

    def _team_limits(self, members: set[str]) -> list[Any]:
        """The team estimator's entries for these workloads (none: no team estimate)."""
        if self.emulator is None or not self.emulator.team_capacity():
            return []
        return list(
            self.emulator.topology.settings.team_estimator.teams_of(
                self.emulator._template_labels(members)
            )
        )

    def _read_teams(
        self, client: Any, loaded: list[Any], windows: list[DemoWindow]
    ) -> dict[tuple[str, str], list[FloorRule]]:
        """Each window's floors, and each team's workloads (as its first window selects them:
        the rows of the ready-replica display and the workloads the floors are judged on)."""
        from tidal.engine.planning import build_plan
        from tidal.karmada.errors import KarmadaError

        floors: dict[tuple[str, str], list[FloorRule]] = {}
        try:
            for item in loaded:
                schedule = item.schedule
                for w in schedule.spec.windows:
                    floors[(schedule.name, w.name)] = [
                        FloorRule.from_model(f) for f in schedule.rollout_for(w.name).floors
                    ]
                first_window = next(d.window for d in windows if d.schedule == schedule.name)
                plan = build_plan(client, schedule, first_window)
                self.members[schedule.name] = {w.name for w in plan.selection.workloads}
        except KarmadaError as exc:
            raise DemoError(f"reading the emulator failed: {exc}") from None
        return floors

    def _settings(self) -> Any:
        from tidal.settings import load_settings

        return load_settings(
            schedules=self.workdir / "schedules",
            port=0,
            state_namespace=STATE_NAMESPACE,
            identity="tidal-demo",
            # One replica: no election. Lease timings are simulated seconds on a fast clock,
            # so they are generous; renewals happen every retry period of real time.
            leader_election={
                "enabled": False,
                "lease_duration_seconds": 900,
                "renew_deadline_seconds": 600,
                "retry_period_seconds": 1,
            },
            # Both teams switch at once; resync often so a start is picked up promptly.
            scheduler={
                "max_concurrent_switches": 2,
                "resync_seconds": 1,
                "misfire_grace_seconds": 3600,
            },
        )

    def _loop(self, tracker: Tracker, daemon: Any, progress: Progress, began: float) -> None:
        try:
            self._wait_for_runs(tracker, daemon, progress, began)
        except KeyboardInterrupt:
            self.interrupted = True
            tracker.interrupt()
            progress.note("interrupted: the daemon finishes its in-flight step and stops")

    def _wait_for_runs(
        self, tracker: Tracker, daemon: Any, progress: Progress, began: float
    ) -> None:
        assert self.clock is not None
        poked: set[tuple[str, str]] = set()
        while not tracker.all_done():
            if time.monotonic() - began > self.options.time_limit:
                tracker.time_out()
                progress.note("time limit reached: stopping the daemon")
                return
            now = self.clock.now()
            due = [
                r
                for r in tracker.runs
                if r.state == "waiting" and r.planned.at.timestamp() <= now and r.key not in poked
            ]
            if due:
                poked.update(r.key for r in due)
                for run in due:
                    self._capacity_for(run.planned, progress)
                daemon.resync("window start")  # the periodic resync would too, a bit later
            elif not tracker.busy(now) and not daemon.dispatcher.busy():
                upcoming = tracker.next_waiting()
                if upcoming is not None:
                    skip = upcoming.planned.at.timestamp() - now - FAST_FORWARD_MARGIN
                    if skip > 1.0:
                        progress.note(
                            f"nothing runs until {upcoming.planned.window} at "
                            f"{upcoming.planned.at:%H:%M:%S}Z: fast-forward "
                            f"{skip:.0f}s of simulated time"
                        )
                        self.clock.fast_forward(skip)
            time.sleep(0.05)

    def _pin_before_first_windows(self, windows: list[DemoWindow]) -> None:
        """Each team's capacity as it is a minute before its schedule's first window."""
        if self.emulator is None:
            return
        estimator = self.emulator.topology.settings.team_estimator
        seen: set[str] = set()
        for window in windows:
            moment = original_moment(window)
            if window.schedule in seen or moment is None:
                continue
            seen.add(window.schedule)
            self.emulator.follow_time_of_day(
                moment - timedelta(minutes=1), self.members.get(window.schedule, set())
            )
        estimator.suspended = False

    def _capacity_for(self, window: DemoWindow, progress: Progress) -> None:
        """The team estimator's capacities follow the time of day the window was written for
        (at night cluster-a's GPUs belong to training), not the brought-forward clock."""
        moment = original_moment(window)
        if moment is None or self.emulator is None or not self.emulator.team_capacity():
            return
        members = self.members.get(window.schedule, set())
        state = self.emulator.follow_time_of_day(moment, members)
        mine = self.emulator.topology.settings.team_estimator.teams_of(
            self.emulator._template_labels(members)
        )
        shown = ", ".join(f"{t['name']}={t['replicas']}" for t in state if t["name"] in mine)
        if shown:
            progress.note(
                f"team estimator at {moment:%H:%M} {window.time_zone} "
                f"({window.schedule} {window.window}): {shown}"
            )

    def close(self, *, remove: bool = True) -> None:
        if self.emulator is not None:
            self.emulator.stop()
            self.emulator = None
        if self._log_file is not None:
            root = logging.getLogger()
            root.handlers[:] = [h for h in root.handlers if h.get_name() != "tidal"]
            structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
            self._log_file.close()
            self._log_file = None
        if remove:
            shutil.rmtree(self.workdir, ignore_errors=True)
