"""Invariants checked continuously from one subscription to the emulator's store (every event in
resourceVersion order, so each check sees the control plane exactly as it was at that write),
plus end-of-soak checks over the request log and the final objects."""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from benchmarks.soak.scenario import (
    FLOOR_CLUSTER,
    FLOOR_MIN,
    FLOOR_PERCENT,
    NS,
    REPLICAS,
    STATE_NS,
    TEAMS,
)
from tidal.engine.gates import ready_by_cluster
from tidal.sim.store import Gone, Store, WatchEvent

Obj = dict[str, Any]
WATCHED = {"configmaps", "leases", "resourcebindings", "deployments", "workloadrebalancers",
           "clusterpropagationpolicies", "clusters"}
# Writes that act on the control plane on a schedule's behalf (Events are best-effort,
# Leases are how replicas compete for the right to act: both excluded).
ACTING = {"clusterpropagationpolicies", "propagationpolicies", "deployments",
          "workloadrebalancers", "configmaps"}
LEADER_LEASE = "tidal-leader"
FINAL_RESULTS = {"succeeded", "failed", "rolledBack"}
# Outcomes that record a start that did not run; each must carry its reason.
NOT_RUN = {"missed", "skipped", "refused", "abandoned"}
LEADER_SLACK_SECONDS = 1.0


def _assigned(binding: Obj) -> dict[str, int]:
    return {c["name"]: int(c.get("replicas") or 0)
            for c in (binding.get("spec") or {}).get("clusters") or [] if c.get("name")}


def _where(assigned: dict[str, int]) -> frozenset[str]:
    """The clusters a workload runs in: a move changes this set (a scale only the counts)."""
    return frozenset(c for c, n in assigned.items() if n > 0)


def _in_wave(state: Obj) -> bool:
    return state.get("phase") != "done" and any(
        w.get("startedAt") and not w.get("result") for w in state.get("waves") or [])


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
class RunTrack:
    schedule: str
    run_id: str
    window: str
    first_seen: float
    last: Obj = field(default_factory=dict)
    moves: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    floor_breaches: int = 0
    moves_by_wave: dict[int, int] = field(default_factory=lambda: defaultdict(int))


class Checker:
    """Subscribes to the store, keeps the history needed, appends violations as they happen."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.violations: list[str] = []
        self.runs: dict[str, RunTrack] = {}
        self.current_run: dict[str, str] = {}  # schedule -> run id of its latest run
        self.leader_history: list[tuple[float, str | None]] = []
        # (resourceVersion, holder) of every change of the leader Lease's holder: an acting
        # write is judged against the holder at its own resourceVersion
        self.lease_versions: list[tuple[int, str | None]] = []
        self.handled: list[dict[str, Any]] = []  # every handled record written, in order
        self.not_ready: set[str] = set()
        self.moves_checked = 0
        self.bindings: dict[str, Obj] = {}
        self.touches: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.breaches_seen = 0
        self.moves_outside_runs = 0
        self._schedule_of = {w: t.schedule for t in TEAMS for w in t.workload_names()}
        self._team_workloads = {t.schedule: set(t.workload_names()) for t in TEAMS}
        self._breached: set[str] = set()
        self._held: set[str] = set()  # workloads seen at or above the floor
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-checker", daemon=True)
        self.events = 0

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

    def violation(self, text: str) -> None:
        with self._lock:
            if text not in self.violations:
                self.violations.append(text)

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
                self._on_event(event)
            except Exception as exc:  # a checker bug must show, not stop the soak
                self.violation(f"checker error on {event.rtype.plural}: {exc!r}")

    # -- events ------------------------------------------------------------------------------
    def _on_event(self, event: WatchEvent) -> None:
        plural, obj = event.rtype.plural, event.obj
        meta = obj.get("metadata") or {}
        now = time.time()
        if plural == "leases" and meta.get("namespace") == STATE_NS \
                and meta.get("name") == LEADER_LEASE:
            holder = None if event.type == "DELETED" else \
                (obj.get("spec") or {}).get("holderIdentity")
            if not self.leader_history or self.leader_history[-1][1] != holder:
                self.leader_history.append((now, holder))
            if not self.lease_versions or self.lease_versions[-1][1] != holder:
                self.lease_versions.append((event.resource_version, holder))
        elif plural == "clusters":
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (obj.get("status") or {}).get("conditions") or [])
            (self.not_ready.discard if ready else self.not_ready.add)(str(meta.get("name")))
        elif plural == "configmaps" and meta.get("namespace") == STATE_NS \
                and str(meta.get("name", "")).startswith("tidal-sched-") \
                and event.type != "DELETED":
            text = (obj.get("data") or {}).get("handled")
            if text:
                record = json.loads(text)
                record["schedule"] = str(meta["name"]).removeprefix("tidal-sched-")
                if not self.handled or self.handled[-1] != record:
                    self.handled.append(record)
        elif plural == "configmaps" and meta.get("namespace") == STATE_NS \
                and str(meta.get("name", "")).startswith("tidal-run-") and event.type != "DELETED":
            text = (obj.get("data") or {}).get("run")
            if text:
                self._on_run_state(json.loads(text), now)
        elif plural == "resourcebindings" and meta.get("namespace") == NS:
            self._on_binding(event, now)
        elif plural == "deployments" and meta.get("namespace") == NS:
            ann = meta.get("annotations") or {}
            stamp, run = ann.get("tidal.io/switched-at"), ann.get("tidal.io/switch-run")
            if stamp and run:
                self.touches[(run, str(meta.get("name")))].add(stamp)

    def _on_run_state(self, state: Obj, now: float) -> None:
        schedule, run_id = state["schedule"], state["runId"]
        track = self.runs.get(run_id)
        if track is None:
            previous = self.runs.get(self.current_run.get(schedule, ""))
            if previous is not None and previous.last.get("phase") != "done" \
                    and not _never_acted(previous.last):
                self.violation(f"{schedule}: run {run_id} started while run {previous.run_id} "
                               f"was unfinished (phase {previous.last.get('phase')})")
            track = self.runs[run_id] = RunTrack(schedule, run_id, state["window"], now)
            self.current_run[schedule] = run_id
        before = track.last
        track.last = state
        waves = state.get("waves") or []
        old_started = {w["index"] for w in before.get("waves") or [] if w.get("startedAt")}
        for i, wave in enumerate(waves):
            if not wave.get("startedAt") or wave["index"] in old_started or i == 0:
                continue
            prev = waves[i - 1]
            if prev.get("result") != "succeeded":
                self.violation(f"{schedule} run {run_id}: wave {wave['index']} started while "
                               f"wave {prev['index']} was {prev.get('result') or 'unfinished'}")
                continue
            behind = [w for w in prev.get("workloads", []) if not self._converged(w)
                      and not self._scaled(w)]
            if behind:
                self.violation(f"{schedule} run {run_id}: wave {wave['index']} started while "
                               f"{', '.join(sorted(behind))} of wave {prev['index']} had not "
                               "converged")

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
            if active and run is not None:
                run.moves[name] += 1
                self._move_in_wave(run, name, _where(new) - _where(old))
            else:
                self.moves_outside_runs += 1
        broken = _breaches(event.obj)
        if not broken:
            self._held.add(name)
            self._breached.discard(name)
        elif name in self._held and name not in self._breached:
            self._breached.add(name)
            self.breaches_seen += 1
            if run is not None and _in_wave(run.last):
                run.floor_breaches += 1  # the wave in flight must fail for it

    def _move_in_wave(self, run: RunTrack, name: str, into: frozenset[str]) -> None:
        """A move during a run belongs to the wave in flight that lists the workload (or to
        the rollback of a wave that did), and never goes into a NotReady cluster."""
        self.moves_checked += 1
        state = run.last
        key = f"{NS}/Deployment/{name}"
        label = f"{run.schedule} run {run.run_id}"
        if into & self.not_ready:
            self.violation(f"{label}: {name} moved into NotReady {sorted(into & self.not_ready)}")
        if self.not_ready or self._scaled(key):
            return  # Karmada reschedules on its own then (filtered clusters, new replicas)
        waves = state.get("waves") or []
        if state.get("phase") == "rollback":
            owners = [w for w in waves if key in (w.get("workloads") or [])
                      and (w.get("rollbackTriggered") or w.get("rebalancers"))]
        else:
            owners = [w for w in waves if w.get("startedAt") and not w.get("result")
                      and key in (w.get("workloads") or [])]
        if owners:
            run.moves_by_wave[int(owners[0]["index"])] += 1
        elif state.get("phase") in ("waves", "rollback"):
            self.violation(f"{label}: {name} moved while no wave listing it was in flight "
                           f"(phase {state.get('phase')})")

    # -- checks at the end -------------------------------------------------------------------
    def leader_at(self, t: float) -> set[str | None]:
        """Who held the leader lease at any time in [t - slack, t]."""
        holders: set[str | None] = set()
        current: str | None = None
        for when, holder in self.leader_history:
            if when <= t - LEADER_SLACK_SECONDS:
                current = holder
            elif when <= t + 0.2:
                holders.add(holder)
        holders.add(current)
        return holders

    def holder_at_version(self, version: int) -> str | None:
        """Who held the leader Lease when the store was at `version`."""
        index = bisect.bisect_left([v for v, _ in self.lease_versions], version) - 1
        return self.lease_versions[index][1] if index >= 0 else None

    def check_writers(self, records: list[Any]) -> int:
        """Every acting write came from the replica holding the Lease at that moment: at the
        write's own resourceVersion when the store gave it one (creates, updates, patches),
        else at its time; returns writes seen."""
        writes = 0
        for r in records:
            if r.verb in ("get", "list", "watch") or r.code >= 400 or r.dry_run \
                    or r.resource.split("/")[0] not in ACTING or r.identity in ("", "soak"):
                continue
            writes += 1
            version = getattr(r, "resource_version", None)
            if version is not None and self.lease_versions:
                holder = self.holder_at_version(version)
                if r.identity != holder:
                    self.violation(f"{r.verb} {r.resource} {r.name} by {r.identity} at "
                                   f"resourceVersion {version}: the Lease was held by "
                                   f"{holder}")
            elif r.identity not in self.leader_at(r.time):
                self.violation(f"{r.verb} {r.resource} {r.name} by {r.identity} at "
                               f"{time.strftime('%H:%M:%S', time.gmtime(r.time))}: "
                               "not the leader")
        return writes

    def check_scope(self, records: list[Any]) -> int:
        """The daemons write only what the schedules name (plus their own state, Lease,
        run locks, Events, and their surge waves' overrides); returns how many writes were
        checked."""
        policies = {t.policy for t in TEAMS}
        workloads = set(self._schedule_of)
        checked = 0
        for r in records:
            if r.verb in ("get", "list", "watch") or r.code >= 400 or not r.identity:
                continue
            checked += 1
            plural = r.resource.split("/")[0]
            ok = (
                (plural == "clusterpropagationpolicies" and r.name in policies)
                or (plural == "deployments" and r.namespace == NS and r.name in workloads)
                or (plural == "workloadrebalancers" and str(r.name or "").startswith("tidal-"))
                or (plural == "workloadrebalancers" and r.verb == "create")
                # surge waves: the runs' own overrides (POSTs carry no name)
                or (plural == "overridepolicies" and r.namespace == NS
                    and (r.verb == "create" or str(r.name or "").startswith("tidal-")))
                or (plural in ("configmaps", "leases") and r.namespace == STATE_NS)
                or (plural == "namespaces" and r.verb == "create")
                or plural == "events"
            )
            if not ok:
                self.violation(f"{r.identity} wrote outside the schedules: {r.verb} "
                               f"{r.resource} {r.namespace or ''}/{r.name or ''}")
        return checked

    def check_runs(self, metrics_breaches: float | None,
                   metrics_wave_failures: float | None = None) -> None:
        """Each run ended, moved nothing twice, and failed loudly when a floor broke: a
        wave failed by the breach raises the floor metric; one that failed first for
        another reason (timeout, API error) raises the wave-failure metric."""
        by_floor = by_other = 0
        for track in self.runs.values():
            state = track.last
            label = f"{track.schedule} run {track.run_id} ({track.window})"
            if state.get("phase") != "done" or state.get("result") not in FINAL_RESULTS:
                if not _never_acted(state):
                    self.violation(f"{label} did not end: phase {state.get('phase')}, result "
                                   f"{state.get('result')}")
                continue
            rolled = state.get("result") == "rolledBack" or any(
                w.get("rollbackTriggered") or w.get("rolledBack") for w in state.get("waves") or [])
            allowed = 2 if rolled else 1  # there and back, even when the rollback then failed
            twice = {w: n for w, n in track.moves.items() if n > allowed}
            if twice:
                self.violation(f"{label}: moved more than {allowed}x: {twice}")
            for (run, workload), stamps in self.touches.items():
                if run == track.run_id and len(stamps) > allowed:
                    self.violation(f"{label}: {workload} touched {len(stamps)}x")
            if track.floor_breaches and state.get("result") == "succeeded":
                self.violation(f"{label}: {track.floor_breaches} floor breach(es) and yet "
                               "the run succeeded (a silent breach)")
            elif track.floor_breaches:
                reasons = [str(w.get("reason") or "") for w in state.get("waves") or []]
                if any(r.startswith("floor breached") for r in reasons):
                    by_floor += track.floor_breaches
                else:
                    by_other += track.floor_breaches
        if by_floor and not metrics_breaches:
            self.violation(f"{by_floor} floor breach(es) failed waves, "
                           "tidal_floor_breaches_total stayed 0")
        if by_other and not metrics_wave_failures:
            self.violation(f"{by_other} floor breach(es) in waves that failed otherwise, "
                           "tidal_wave_failures_total stayed 0")

    def check_starts(self, first: float, last: float) -> int:
        """Each window start in (first, last) ran exactly once (one run id made for it) or
        was recorded as not run with a reason; returns the starts checked."""
        checked = 0
        minute = int(first // 60 + 1) * 60
        while minute < last:
            at = time.strftime("%Y%m%d-%H%M%S", time.gmtime(minute))
            window = "night" if (minute // 60) % 2 == 0 else "day"
            for team in TEAMS:
                checked += 1
                label = f"{team.schedule} {window} start {at}"
                runs = [r.run_id for r in self.runs.values() if r.schedule == team.schedule
                        and r.run_id.endswith(at)]
                if len(runs) > 1:
                    self.violation(f"{label} ran {len(runs)} times")
                    continue
                if runs:
                    continue
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(minute))
                records = [h for h in self.handled if h["schedule"] == team.schedule
                           and str(h.get("at", "")).startswith(stamp)
                           and h.get("outcome") in NOT_RUN]
                if not records:
                    self.violation(f"{label} neither ran nor was recorded as not run")
                elif not any(h.get("reason") for h in records):
                    self.violation(f"{label} recorded {records[-1].get('outcome')} without "
                                   "a reason")
            minute += 60
        if not self.runs:
            self.violation("the soak made no run at all")
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
    return not any(p.get("applied") for p in state.get("policies") or []) \
        and not any(w.get("startedAt") for w in state.get("waves") or [])
