"""Invariants checked continuously from one subscription to the emulator's store (every event in
resourceVersion order, so each check sees the control plane exactly as it was at that write),
plus end-of-soak checks over the request log and the final objects."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.soak.leftovers import LeftoverWatch
from benchmarks.soak.promises import Promise
from benchmarks.soak.scenario import (
    FLOOR_CLUSTER,
    FLOOR_MIN,
    FLOOR_PERCENT,
    NS,
    REPLICAS,
    STATE_NS,
    TEAMS,
    daemon_env,
)
from benchmarks.soak.writers import LeaseHistory, WriterReport, check_scope, check_writers
from tidal.engine.gates import ready_by_cluster
from tidal_sim.store import Gone, Store, WatchEvent

Obj = dict[str, Any]
WATCHED = {
    "configmaps",
    "leases",
    "resourcebindings",
    "deployments",
    "workloadrebalancers",
    "clusterpropagationpolicies",
    "clusters",
    "overridepolicies",
}
SWEEP_SECONDS = float(daemon_env("x")["TIDAL_SWEEPER__INTERVAL_SECONDS"])
CAP_GRACE_SECONDS = 15.0  # a move scheduled before its override is re-fitted (one settle pass)
LEADER_LEASE = "tidal-leader"
FINAL_RESULTS = {"succeeded", "failed", "rolledBack"}
# Outcomes that record a start that did not run; each must carry its reason.
NOT_RUN = {"missed", "skipped", "refused", "abandoned"}
LEASE_SECONDS = float(daemon_env("x")["TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS"])


def _assigned(binding: Obj) -> dict[str, int]:
    return {
        c["name"]: int(c.get("replicas") or 0)
        for c in (binding.get("spec") or {}).get("clusters") or []
        if c.get("name")
    }


def _where(assigned: dict[str, int]) -> frozenset[str]:
    """The clusters a workload runs in: a move changes this set (a scale only the counts)."""
    return frozenset(c for c, n in assigned.items() if n > 0)


def _rescheduled_for_replicas(old: dict[str, int], binding: Obj) -> bool:
    """The scheduler re-placed this binding because its replica count changed: the old
    assignment no longer adds up to spec.replicas (Karmada's replicas-changed rule). A scale
    is the user's template change, which also brings a Lazy policy's pending placement in."""
    replicas = int((binding.get("spec") or {}).get("replicas") or 0)
    if not old or all(n == replicas for n in old.values()):  # also Duplicated: each has all
        return False
    return sum(old.values()) != replicas


def _in_wave(state: Obj) -> bool:
    return state.get("phase") != "done" and any(
        w.get("startedAt") and not w.get("result") for w in state.get("waves") or []
    )


def _breaches(binding: Obj) -> list[str]:
    """The soak's floors broken by this binding's ready replicas."""
    ready = ready_by_cluster(binding)
    replicas = int((binding.get("spec") or {}).get("replicas") or 0)
    out = []
    if FLOOR_CLUSTER in _assigned(binding) and ready.get(FLOOR_CLUSTER, 0) < FLOOR_MIN:
        out.append(f"{FLOOR_CLUSTER}<{FLOOR_MIN}")
    if replicas and sum(ready.values()) * 100 < FLOOR_PERCENT * replicas:
        out.append(f"available<{FLOOR_PERCENT}%")
    return out


def _workload_of_binding(binding: Obj) -> str:
    return str(((binding.get("spec") or {}).get("resource") or {}).get("name", ""))


@dataclass
class Breach:
    """A workload below a floor while its run's wave was in flight, from `start` to `end`."""

    workload: str
    start: float
    end: float | None = None


@dataclass
class RunTrack:
    schedule: str
    run_id: str
    window: str
    first_seen: float
    last: Obj = field(default_factory=dict)
    moves: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    breaches: list[Breach] = field(default_factory=list)
    moves_by_wave: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    failed_at: float | None = None  # when a wave's failure was first journalled
    failed_version: int | None = None  # the run state's resourceVersion then (its writer)

    @property
    def floor_breaches(self) -> int:
        return len(self.breaches)


class Checker:
    """Subscribes to the store, keeps the history needed, appends violations as they happen."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.violations: list[str] = []
        self.runs: dict[str, RunTrack] = {}
        self.current_run: dict[str, str] = {}  # schedule -> run id of its latest run
        # every change of the leader Lease's holder, by time and by resourceVersion: an
        # acting write is judged against the holder at its own resourceVersion
        self.lease = LeaseHistory()
        self.leader_history = self.lease.times
        self.lease_versions = self.lease.versions
        self.by_promise: Counter[Promise] = Counter()
        self.writers = WriterReport()
        self.scope_checked = 0
        self.moves_in_rollback = 0
        self.starts: Counter[str] = Counter()  # how each checked start was handled
        self.lease_renewals: list[float] = []  # every write of the leader Lease naming a holder
        self.breaches_unled = 0  # breaches in waves while no replica held a live Lease
        self.metrics_unverified = 0  # failed waves whose replica died before a scrape
        self.metrics_checked = 0  # breaches whose failed wave's metric was checked
        self.retouches = 0  # triggers written again before the journal recorded them
        self._open: dict[str, Breach] = {}
        self.seen_at: dict[int, float] = {}  # when each resourceVersion was seen
        self.handled: list[dict[str, Any]] = []  # every handled record written, in order
        self.not_ready: set[str] = set()
        self.moves_checked = 0
        self.bindings: dict[str, Obj] = {}
        self.touches: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.touched_back: dict[str, set[str]] = defaultdict(set)  # run -> touched in rollback
        self.breaches_seen = 0
        self.moves_outside_runs = 0
        self.moves_by_scale = 0  # re-placed by the scheduler for a new replica count
        self._schedule_of = {w: t.schedule for t in TEAMS for w in t.workload_names()}
        self._team_workloads = {t.schedule: set(t.workload_names()) for t in TEAMS}
        self._breached: set[str] = set()
        self._held: set[str] = set()  # workloads seen at or above the floor
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-checker", daemon=True)
        self.events = 0
        # promise 9; the slack: a sweep of the leader after the interval, and one lease to
        # elect a new leader after a crash
        self.leftovers = LeftoverWatch(
            SWEEP_SECONDS + 2 * LEASE_SECONDS + 5.0,
            CAP_GRACE_SECONDS,
            lambda text: self.violation(text, Promise.LEFTOVERS),
        )

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> Checker:
        self._rv = self.store.resource_version
        self._sub = self.store.subscribe(self._accepts)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.store.unsubscribe(self._sub)

    def violation(self, text: str, promise: Promise = Promise.CHECKER) -> None:
        with self._lock:
            if text not in self.violations:
                self.violations.append(text)
                self.by_promise[promise] += 1

    @staticmethod
    def _accepts(event: WatchEvent) -> bool:
        return event.rtype.plural in WATCHED

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                event = self._sub.events.get(timeout=0.2)
            except Exception:  # queue.Empty
                continue
            if event is None:  # the store closed our subscription: pick up where we were
                try:
                    self._sub = self.store.subscribe(self._accepts, since=self._rv)
                except Gone:
                    self.violation("checker lost events (store history compacted)")
                    self._sub = self.store.subscribe(self._accepts)
                continue
            self._rv = event.resource_version
            self.events += 1
            try:
                self.observe(event)
            except Exception as exc:  # a checker bug must show, not stop the soak
                self.violation(f"checker error on {event.rtype.plural}: {exc!r}")

    # -- events ------------------------------------------------------------------------------
    def observe(self, event: WatchEvent, now: float | None = None) -> None:
        """One store event, in resourceVersion order (the subscription's, or a test's), seen
        at `now` (default: the wall clock)."""
        plural, obj = event.rtype.plural, event.obj
        meta = obj.get("metadata") or {}
        now = time.time() if now is None else now
        self.seen_at.setdefault(event.resource_version, now)
        if (
            plural == "leases"
            and meta.get("namespace") == STATE_NS
            and meta.get("name") == LEADER_LEASE
        ):
            holder = (
                None if event.type == "DELETED" else (obj.get("spec") or {}).get("holderIdentity")
            )
            if holder:
                self.lease_renewals.append(now)
            if not self.leader_history or self.leader_history[-1][1] != holder:
                self.leader_history.append((now, holder))
            if not self.lease_versions or self.lease_versions[-1][1] != holder:
                self.lease_versions.append((event.resource_version, holder))
        elif plural == "clusters":
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (obj.get("status") or {}).get("conditions") or []
            )
            (self.not_ready.discard if ready else self.not_ready.add)(str(meta.get("name")))
        elif (
            plural == "configmaps"
            and meta.get("namespace") == STATE_NS
            and str(meta.get("name", "")).startswith("tidal-sched-")
            and event.type != "DELETED"
        ):
            text = (obj.get("data") or {}).get("handled")
            if text:
                record = json.loads(text)
                record["schedule"] = str(meta["name"]).removeprefix("tidal-sched-")
                if not self.handled or self.handled[-1] != record:
                    self.handled.append(record)
        elif (
            plural == "configmaps"
            and meta.get("namespace") == STATE_NS
            and str(meta.get("name", "")).startswith("tidal-run-")
            and event.type != "DELETED"
        ):
            text = (obj.get("data") or {}).get("run")
            if text:
                self._on_run_state(json.loads(text), now, event.resource_version)
                self.leftovers.on_run_state(json.loads(text), now)
        elif plural == "resourcebindings" and meta.get("namespace") == NS:
            self._on_binding(event, now)
            self.leftovers.on_binding(
                _workload_of_binding(obj), None if event.type == "DELETED" else obj, now
            )
        elif plural == "overridepolicies" and meta.get("namespace") == NS:
            self.leftovers.on_override(event.type, obj, now)
        elif plural == "deployments" and meta.get("namespace") == NS:
            ann = meta.get("annotations") or {}
            stamp, run = ann.get("tidal.io/switched-at"), ann.get("tidal.io/switch-run")
            if stamp and run:
                self._on_touch(run, str(meta.get("name")), stamp)

    def _on_run_state(self, state: Obj, now: float, version: int = 0) -> None:
        schedule, run_id = state["schedule"], state["runId"]
        track = self.runs.get(run_id)
        if track is None:
            previous = self.runs.get(self.current_run.get(schedule, ""))
            if (
                previous is not None
                and previous.last.get("phase") != "done"
                and not _never_acted(previous.last)
            ):
                self.violation(
                    f"{schedule}: run {run_id} started while run {previous.run_id} "
                    f"was unfinished (phase {previous.last.get('phase')})",
                    Promise.RESUME,
                )
            track = self.runs[run_id] = RunTrack(schedule, run_id, state["window"], now)
            self.current_run[schedule] = run_id
        before = track.last
        track.last = state
        waves = state.get("waves") or []
        if track.failed_at is None and any(w.get("result") == "failed" for w in waves):
            track.failed_at, track.failed_version = now, version
        old_started = {w["index"] for w in before.get("waves") or [] if w.get("startedAt")}
        for i, wave in enumerate(waves):
            if not wave.get("startedAt") or wave["index"] in old_started or i == 0:
                continue
            prev = waves[i - 1]
            if prev.get("result") != "succeeded":
                self.violation(
                    f"{schedule} run {run_id}: wave {wave['index']} started while "
                    f"wave {prev['index']} was {prev.get('result') or 'unfinished'}",
                    Promise.FLOORS,
                )
                continue
            behind = [
                w
                for w in prev.get("workloads", [])
                if not self._converged(w) and not self._scaled(w)
            ]
            if behind:
                self.violation(
                    f"{schedule} run {run_id}: wave {wave['index']} started while "
                    f"{', '.join(sorted(behind))} of wave {prev['index']} had not "
                    "converged",
                    Promise.FLOORS,
                )

    def _scaled(self, workload: str) -> bool:
        """Scaled by the chaos since (its convergence is then the floors' business)."""
        binding = self.bindings.get(workload.rsplit("/", 1)[-1]) or {}
        return int((binding.get("spec") or {}).get("replicas") or 0) != REPLICAS

    def _converged(self, workload: str) -> bool:
        name = workload.rsplit("/", 1)[-1]
        binding = self.bindings.get(name)
        if binding is None:
            return False
        ready = ready_by_cluster(binding)
        return all(ready.get(c, 0) >= n for c, n in _assigned(binding).items())

    def _on_binding(self, event: WatchEvent, now: float) -> None:
        name = _workload_of_binding(event.obj)
        schedule = self._schedule_of.get(name)
        if schedule is None:
            return
        if event.type == "DELETED":
            self.bindings.pop(name, None)
            return
        self.bindings[name] = event.obj
        old = _assigned(event.old) if event.old is not None else None
        new = _assigned(event.obj)
        run = self.runs.get(self.current_run.get(schedule, ""))
        active = run is not None and run.last.get("phase") != "done"
        if old and new and _where(old) != _where(new):
            if _rescheduled_for_replicas(old, event.obj):
                self.moves_by_scale += 1  # Karmada's own, after a scale: no wave's, no run's
            elif active and run is not None:
                run.moves[name] += 1
                self._move_in_wave(run, name, _where(new) - _where(old))
            else:
                self.moves_outside_runs += 1
        broken = _breaches(event.obj)
        if not broken:
            self._held.add(name)
            self._breached.discard(name)
            if name in self._open:
                self._open.pop(name).end = now
        elif name in self._held and name not in self._breached:
            self._breached.add(name)
            self.breaches_seen += 1
            if run is not None and _in_wave(run.last):
                breach = Breach(name, now)  # the wave in flight must fail for it
                run.breaches.append(breach)
                self._open[name] = breach

    def _on_touch(self, run_id: str, name: str, stamp: str) -> None:
        """A trigger written for a run: written again only while the journal does not yet
        record it (a writer stopped between the touch and its save), never after."""
        stamps = self.touches[(run_id, name)]
        if stamp in stamps:
            return
        stamps.add(stamp)
        run = self.runs.get(run_id)
        if run is not None and run.last.get("phase") == "rollback":
            self.touched_back[run_id].add(name)  # the move it causes may precede its journal
        if run is None or len(stamps) == 1:
            return
        key = f"{NS}/Deployment/{name}"
        field_ = "rollbackTriggered" if run.last.get("phase") == "rollback" else "triggered"
        recorded = [
            w
            for w in run.last.get("waves") or []
            if key in (w.get("workloads") or []) and name in (w.get(field_) or [])
        ]
        if recorded:
            self.violation(
                f"{run.schedule} run {run_id}: {name} touched again after wave "
                f"{recorded[0]['index']} recorded its touch ({field_})",
                Promise.RESUME,
            )
        else:
            self.retouches += 1

    def _move_in_wave(self, run: RunTrack, name: str, into: frozenset[str]) -> None:
        """A move during a run belongs to the wave in flight that lists the workload (or to
        the rollback of a wave that did), and never goes into a NotReady cluster."""
        self.moves_checked += 1
        state = run.last
        key = f"{NS}/Deployment/{name}"
        label = f"{run.schedule} run {run.run_id}"
        if into & self.not_ready:
            self.violation(
                f"{label}: {name} moved into NotReady {sorted(into & self.not_ready)}",
                Promise.FLOORS,
            )
        if self.not_ready:
            return  # Karmada reschedules on its own then (filtered clusters)
        waves = state.get("waves") or []
        rollback = state.get("phase") == "rollback"
        if rollback:
            # The rollback moves back every wave whose trigger was written (touched or
            # rebalanced), last first; it journals its own triggers only after writing them.
            # A wave never triggered is moved back only where Karmada moved it (a user's
            # scale): then the rollback's own touch of that template comes first.
            touched = name in self.touched_back[run.run_id]
            owners = [
                w
                for w in waves
                if key in (w.get("workloads") or [])
                and (
                    w.get("triggered")
                    or w.get("rebalancers")
                    or w.get("rollbackTriggered")
                    or touched
                )
            ]
        else:
            owners = [
                w
                for w in waves
                if w.get("startedAt") and not w.get("result") and key in (w.get("workloads") or [])
            ]
        if owners:
            run.moves_by_wave[int(owners[0]["index"])] += 1
            self.moves_in_rollback += rollback
        elif state.get("phase") in ("waves", "rollback"):
            self.violation(
                f"{label}: {name} moved while no wave listing it was in flight "
                f"(phase {state.get('phase')})",
                Promise.FLOORS,
            )

    # -- checks at the end -------------------------------------------------------------------
    def leader_at(self, t: float) -> set[str | None]:
        """Who held the leader lease at any time in [t - slack, t]."""
        return self.lease.holders_near(t)

    def holder_at_version(self, version: int) -> str | None:
        """Who held the leader Lease when the store was at `version`."""
        return self.lease.holder_at_version(version)

    def check_writers(self, records: list[Any]) -> int:
        """Every acting write came from the Lease holder, or was the one write in flight of a
        worker of a replica just deposed (benchmarks.soak.writers); returns writes seen."""
        self.writers = check_writers(
            records,
            self.lease,
            lambda text: self.violation(text, Promise.SINGLE_WRITER),
            self.seen_at,
        )
        return self.writers.writes

    def check_scope(self, records: list[Any]) -> int:
        """The daemons write only what the schedules name; returns writes checked."""
        self.scope_checked = check_scope(records, lambda text: self.violation(text, Promise.SCOPE))
        return self.scope_checked

    def led(self, start: float, end: float | None) -> bool:
        """Some replica held a live Lease (renewed less than a lease ago) in [start, end]."""
        stop = end if end is not None else float("inf")
        return any(r <= stop and r + LEASE_SECONDS > start for r in self.lease_renewals)

    def check_runs(
        self,
        metrics_breaches: float | None,
        metrics_wave_failures: float | None = None,
        scraped_after: Callable[[float, int | None], bool] = lambda t, v: True,
    ) -> None:
        """Each run ended, moved nothing twice, and failed loudly when a floor broke while a
        replica led (a breach that came and went while no replica held a live Lease is
        seen by none): a wave failed by the breach raises the floor metric; one that failed
        first for another reason (timeout, API error) raises the wave-failure metric, when
        the replica that failed it (the writer of that run state) lived to be scraped."""
        by_floor = by_other = 0
        for track in self.runs.values():
            state = track.last
            label = f"{track.schedule} run {track.run_id} ({track.window})"
            if state.get("phase") != "done" or state.get("result") not in FINAL_RESULTS:
                if not _never_acted(state):
                    self.violation(
                        f"{label} did not end: phase {state.get('phase')}, result "
                        f"{state.get('result')}",
                        Promise.RESUME,
                    )
                continue
            rolled = state.get("result") == "rolledBack" or any(
                w.get("rollbackTriggered") or w.get("rolledBack") for w in state.get("waves") or []
            )
            allowed = 2 if rolled else 1  # there and back, even when the rollback then failed
            twice = {w: n for w, n in track.moves.items() if n > allowed}
            if twice:
                self.violation(f"{label}: moved more than {allowed}x: {twice}", Promise.RESUME)
            breaches = [b for b in track.breaches if self.led(b.start, b.end)]
            self.breaches_unled += track.floor_breaches - len(breaches)
            if breaches and state.get("result") == "succeeded":
                self.violation(
                    f"{label}: {len(breaches)} floor breach(es) and yet "
                    "the run succeeded (a silent breach)",
                    Promise.FLOORS,
                )
            elif (
                breaches
                and track.failed_at is not None
                and not scraped_after(track.failed_at, track.failed_version)
            ):
                self.metrics_unverified += len(breaches)
            elif breaches:
                reasons = [str(w.get("reason") or "") for w in state.get("waves") or []]
                if any("floor breached" in r for r in reasons):  # also in a rollback
                    by_floor += len(breaches)
                else:
                    by_other += len(breaches)
        self.metrics_checked = by_floor + by_other
        if by_floor and not metrics_breaches:
            self.violation(
                f"{by_floor} floor breach(es) failed waves, tidal_floor_breaches_total stayed 0",
                Promise.FLOORS,
            )
        if by_other and not metrics_wave_failures:
            self.violation(
                f"{by_other} floor breach(es) in waves that failed otherwise, "
                "tidal_wave_failures_total stayed 0",
                Promise.FLOORS,
            )

    def check_starts(self, first: float, last: float) -> int:
        """Each window start in (first, last) ran exactly once (one run id made for it: a
        run journalled, or a run with nothing to move, which only the handled record shows)
        or was recorded as not run with a reason; returns the starts checked."""
        checked = 0
        minute = int(first // 60 + 1) * 60
        while minute < last:
            at = time.strftime("%Y%m%d-%H%M%S", time.gmtime(minute))
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(minute))
            window = "night" if (minute // 60) % 2 == 0 else "day"
            for team in TEAMS:
                checked += 1
                label = f"{team.schedule} {window} start {at}"
                records = [
                    h
                    for h in self.handled
                    if h["schedule"] == team.schedule and str(h.get("at", "")).startswith(stamp)
                ]
                journalled = {
                    r.run_id
                    for r in self.runs.values()
                    if r.schedule == team.schedule and r.run_id.endswith(at)
                }
                ended = {
                    str(h["runId"])
                    for h in records
                    if h.get("outcome") in FINAL_RESULTS and h.get("runId")
                }
                runs = journalled | ended
                if len(runs) > 1:
                    self.violation(
                        f"{label} ran {len(runs)} times: {sorted(runs)}", Promise.WINDOWS
                    )
                    continue
                if runs:
                    self.starts["ran" if journalled else "ran (nothing to move)"] += 1
                    continue
                not_run = [h for h in records if h.get("outcome") in NOT_RUN]
                if not not_run:
                    self.violation(
                        f"{label} neither ran nor was recorded as not run", Promise.WINDOWS
                    )
                elif not any(h.get("reason") for h in not_run):
                    self.violation(
                        f"{label} recorded {not_run[-1].get('outcome')} without a reason",
                        Promise.WINDOWS,
                    )
                else:
                    self.starts[str(not_run[-1].get("outcome"))] += 1
            minute += 60
        if not self.runs:  # only runs that moved something make the soak worth reading
            self.violation("the soak made no run at all", Promise.WINDOWS)
        return checked

    def breaches_in_waves(self) -> int:
        return sum(t.floor_breaches for t in self.runs.values())

    def results(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for track in self.runs.values():
            out[str(track.last.get("result") or track.last.get("phase"))] += 1
        return dict(out)


def _never_acted(state: Obj) -> bool:
    """A run that was claimed but did nothing yet (the daemon may restart such a run)."""
    return not any(p.get("applied") for p in state.get("policies") or []) and not any(
        w.get("startedAt") for w in state.get("waves") or []
    )
