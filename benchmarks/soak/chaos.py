"""Random faults, seeded: API faults through the emulator's fault injection, member faults on
Cluster objects, signals to the leader, and schedule edits good and broken. Every fault that
lasts is undone at its due time; `drain()` undoes everything at once."""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.soak.fleet import Fleet
from benchmarks.soak.scenario import (
    BROKEN_TEXTS,
    CLUSTERS,
    NS,
    REPLICAS,
    TEAMS,
    schedule_text,
)

API_RESOURCES = (
    "clusterpropagationpolicies",
    "deployments",
    "resourcebindings",
    "workloadrebalancers",
    "configmaps",
    "leases",
    "clusters",
    "*",
)
STOP_SECONDS = 6.0  # past the 4 s lease: the standby takes over while the leader is frozen
LONG_RETRY_AFTER = 10  # seconds: longer than the lease


class Chaos:
    def __init__(
        self, emu: Any, fleet: Fleet, schedules: Path, seed: int, leader: Callable[[], str | None]
    ) -> None:
        self.emu, self.fleet, self.schedules = emu, fleet, schedules
        self.random = random.Random(seed)
        self.leader = leader
        self.injected: Counter[str] = Counter()
        self.undo: list[tuple[float, str, Callable[[], None]]] = []
        self.wave_size = {t.schedule: "50%" for t in TEAMS}
        self.log: list[tuple[float, str]] = []
        self.long_retry_after = 0  # 429s whose Retry-After outlives the Lease

    # -- the loop's two calls ----------------------------------------------------------------
    def act(self) -> str:
        actions: list[tuple[str, Callable[[], str | None], int]] = [
            ("api_500", self._api_500, 3),
            ("api_429", self._api_429, 3),
            ("api_409", self._api_409, 3),
            ("latency", self._latency, 2),
            ("drop_watch", self._drop_watch, 2),
            ("watch_410", self._watch_410, 1),
            ("cluster_notready", self._cluster_notready, 2),
            ("pods_fail", self._pods_fail, 3),
            ("sigkill_leader", self._kill_leader, 1),
            ("sigstop_leader", self._stop_leader, 1),
            ("schedule_edit", self._good_edit, 1),
            ("schedule_broken", self._broken_edit, 1),
            ("scale_past_capacity", self._scale_up, 2),
        ]
        names = [a[0] for a in actions]
        weights = [a[2] for a in actions]
        index = self.random.choices(range(len(actions)), weights)[0]
        detail = actions[index][1]()
        if detail is None:
            return ""
        self.injected[names[index]] += 1
        self.log.append((time.time(), f"{names[index]}: {detail}"))
        return f"{names[index]}: {detail}"

    def due(self) -> None:
        now = time.time()
        due = [u for u in self.undo if u[0] <= now]
        self.undo = [u for u in self.undo if u[0] > now]
        for _at, _what, fn in due:
            fn()

    def drain(self) -> None:
        for _at, _what, fn in self.undo:
            fn()
        self.undo = []
        self.emu.faults.clear()
        for name in CLUSTERS:
            self.emu.set_cluster_ready(name, True)
            self.emu.set_pods_fail(name, False)

    def _later(self, seconds: float, what: str, fn: Callable[[], None]) -> None:
        self.undo.append((time.time() + seconds, what, fn))

    # -- API faults --------------------------------------------------------------------------
    def _api_fault(self, **spec: Any) -> str:
        fault = self.emu.faults.inject(**spec)
        self._later(self.random.uniform(3, 8), "clear", lambda: self.emu.faults.clear(fault.id))
        return f"{spec.get('verb', '*')} {spec.get('resource', '*')}"

    def _api_500(self) -> str:
        return self._api_fault(
            type="error",
            verb=self.random.choice(["get", "list", "patch", "update", "create", "delete", "*"]),
            resource=self.random.choice(API_RESOURCES),
            probability=0.3,
            count=6,
        )

    def _api_429(self) -> str:
        # Mostly short waits; now and then one longer than the 4 s lease, so a leader whose
        # write is throttled must give up that write rather than land it after a failover.
        retry_after = self.random.choice([1, 1, 2, LONG_RETRY_AFTER])
        self.long_retry_after += retry_after == LONG_RETRY_AFTER
        detail = self._api_fault(
            type="throttle",
            verb=self.random.choice(["patch", "list", "*"]),
            resource=self.random.choice(API_RESOURCES),
            retry_after=retry_after,
            probability=0.5,
            count=4,
        )
        return f"{detail} Retry-After {retry_after}s"

    def _api_409(self) -> str:
        return self._api_fault(
            type="conflict",
            verb=self.random.choice(["patch", "update"]),
            resource=self.random.choice(API_RESOURCES),
            probability=0.5,
            count=3,
        )

    def _latency(self) -> str:
        return self._api_fault(
            type="latency",
            verb="*",
            resource=self.random.choice(API_RESOURCES),
            seconds=round(self.random.uniform(0.2, 1.5), 2),
            probability=0.5,
            count=10,
        )

    def _drop_watch(self) -> str:
        self.emu.faults.inject(
            type="drop-watch",
            resource=self.random.choice(["resourcebindings", "leases", "*"]),
            count=1,
            seconds=1.0,
        )
        return "open watches cut"

    def _watch_410(self) -> str:
        self.emu.faults.inject(type="drop-watch", resource="*", compact=True)
        return "watches cut and history compacted"

    # -- member faults -----------------------------------------------------------------------
    def _cluster_notready(self) -> str:
        name = self.random.choice(CLUSTERS)
        self.emu.set_cluster_ready(name, False)
        seconds = self.random.uniform(3, 10)
        self._later(seconds, "ready", lambda: self.emu.set_cluster_ready(name, True))
        return f"{name} for {seconds:.0f}s"

    def _pods_fail(self) -> str:
        """Pods stop starting in one cluster, often from just before the next window start
        and for longer than a waveTimeout, so that waves fail (halt or rollback)."""
        name = self.random.choice(CLUSTERS)
        seconds = self.random.uniform(8, 30)
        delay = 0.0
        if self.random.random() < 0.6:
            delay = max(60.0 - time.time() % 60.0 - 1.0, 0.0)
        self._later(delay, "pods-fail", lambda: self.emu.set_pods_fail(name, True))
        self._later(delay + seconds, "pods", lambda: self.emu.set_pods_fail(name, False))
        return f"{name} in {delay:.0f}s for {seconds:.0f}s"

    def _scale_up(self) -> str:
        """A team scales one workload far past both clusters' pod capacity: its available
        share drops under the percentage floor (a breach tidal must stop for, not cause)."""
        team = self.random.choice(TEAMS)
        name = self.random.choice(team.workload_names())
        rtype = self.emu.kinds.by_kind("apps/v1", "Deployment")

        def scale(replicas: int) -> None:
            self.emu.store.mutate(rtype, NS, name, lambda o: o["spec"].update(replicas=replicas))

        seconds = self.random.uniform(8, 25)
        delay = 0.0
        if self.random.random() < 0.6:  # just after the next window start: inside a wave
            delay = 60.0 - time.time() % 60.0 + self.random.uniform(0.3, 2.5)
        self._later(delay, "scale-up", lambda: scale(REPLICAS * 200))
        self._later(delay + seconds, "scale", lambda: scale(REPLICAS))
        return f"{name} to {REPLICAS * 200} in {delay:.0f}s for {seconds:.0f}s"

    # -- the leader --------------------------------------------------------------------------
    def _kill_leader(self) -> str | None:
        inc = self.fleet.by_identity(self.leader())
        if inc is None or inc.stopped:
            return None
        self.fleet.signal(inc, signal.SIGKILL)
        return inc.who  # the fleet's supervision restarts it

    def _stop_leader(self) -> str | None:
        inc = self.fleet.by_identity(self.leader())
        if inc is None or inc.stopped:
            return None
        self.fleet.signal(inc, signal.SIGSTOP)
        self._later(STOP_SECONDS, "cont", lambda: self.fleet.signal(inc, signal.SIGCONT))
        return f"{inc.who} for {STOP_SECONDS:.0f}s"

    # -- schedule edits ----------------------------------------------------------------------
    def write_schedule(self, team_index: int, *, suspend: bool = False) -> None:
        team = TEAMS[team_index]
        path = self.schedules / f"{team.schedule}.yaml"
        text = schedule_text(team, wave_size=self.wave_size[team.schedule], suspend=suspend)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.rename(path)

    def _good_edit(self) -> str:
        index = self.random.randrange(len(TEAMS))
        schedule = TEAMS[index].schedule
        self.wave_size[schedule] = "34%" if self.wave_size[schedule] == "50%" else "50%"
        self.write_schedule(index)
        return f"{schedule} waveSize {self.wave_size[schedule]}"

    def _broken_edit(self) -> str:
        index = self.random.randrange(len(TEAMS))
        team = TEAMS[index]
        (self.schedules / f"{team.schedule}.yaml").write_text(self.random.choice(BROKEN_TEXTS))
        seconds = self.random.uniform(3, 10)
        self._later(seconds, "restore", lambda: self.write_schedule(index))
        return f"{team.schedule} for {seconds:.0f}s"
