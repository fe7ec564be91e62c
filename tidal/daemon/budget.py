"""The daemon's one capacity budget: surge room leased to the waves of all concurrent switches.

Each surging wave reserves its surge (cluster -> resource -> amount) before it surges and
releases it once its override is gone; a reservation fits only if it fits what is free minus
what every other wave holds, so no combination of teams overruns a cluster because of tidal.

What is free: the caller reads it from Cluster status, or from the members' own Nodes and Pods
(tidal.karmada.member_capacity); either counts a held surge once its pods exist, and not before
(nor while the status lags). Subtracting every hold from it would count a running surge twice
and leave room unused. So per (cluster, resource) the room left is the better of two safe
estimates:
- the free reported minus every hold the report cannot include yet: a wave says when its
  replicas exist (else when it releases), with the versions read then; a report of a later
  version counts them (resourceVersions compared as the integers Kubernetes issues; anything
  else counts as earlier), and every other hold counts in full. This sees room that appears
  (another tenant left) at the first status refresh, or at once from the members;
- the free seen when the first of the current holds was granted (its anchor; lowered by each
  hold forgotten, whose replicas stay as the new steady state) minus all holds, capped by the
  free reported: right while they all run and the status shows them.
A released hold is forgotten `settle_seconds` after its grant at the latest (Karmada refreshes
Cluster status every 10 s). Only a consumer outside tidal that takes room while a hold's pods do
not exist yet can make an estimate too high.

Order among the waves that wait: higher schedule `priority` first; within a priority, the
schedule granted the fewest waves in its current run first (round-robin by wave: one large
team gets one turn per round), then whoever waits longest. A waiter keeps its place: nothing
ranked below it may take any (cluster, resource) it asks for, even if that would fit now; so
its resources only drain and it is served once enough is released (no starvation). A waiter
that could not fit even with nothing held (the cluster itself is too small) blocks no one.
Waves poll (`reserve` again until True); a waiter that stopped polling for `stale_after`
seconds is dropped, and a run that ends (any result) gives back everything it held.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from tidal.domain.clock import Clock
from tidal.engine.budget import Need, Versions

log = structlog.get_logger("tidal.daemon.budget")

Pair = tuple[str, str]  # (cluster, resource)


def _amounts(need: Need) -> dict[Pair, float]:
    return {
        (cluster, resource): float(amount)
        for cluster, amounts in need.items()
        for resource, amount in amounts.items()
        if amount > 0
    }


@dataclass
class Waiter:
    """A wave waiting for room."""

    holder: str
    schedule: str
    priority: int
    need: dict[Pair, float]
    since: datetime
    seq: int
    polled: float  # clock.monotonic() of its last reserve call
    short: dict[Pair, float] = field(default_factory=dict)  # what it lacked at its last poll


@dataclass
class Hold:
    holder: str
    schedule: str
    amounts: dict[Pair, float]
    granted: float = 0.0  # clock.monotonic() of the grant
    # versions read once its replicas existed (at `running`, else at the release)
    versions: dict[str, int] = field(default_factory=dict)
    ran: bool = False  # `running` was told (once: reading versions may cost a request)

    def seen_by(self, cluster: str, reported: Mapping[str, int]) -> bool:
        """The hold's replicas are in a Cluster status newer than the moment they ran."""
        at_release, now = self.versions.get(cluster), reported.get(cluster)
        return at_release is not None and now is not None and now > at_release


@dataclass(frozen=True)
class CapacityWait:
    """One schedule's oldest waiting wave, for status."""

    schedule: str
    holder: str
    since: datetime
    short: dict[str, dict[str, float]]


class SharedBudget:
    """The SurgeBudget of every switch of one daemon (thread-safe); hand each run
    `for_schedule(name, priority)`."""

    def __init__(
        self,
        clock: Clock,
        *,
        stale_after: float = 120.0,
        settle_seconds: float = 15.0,
        on_change: Callable[[SharedBudget], None] | None = None,
    ) -> None:
        self.clock = clock
        self.stale_after = stale_after
        self.settle_seconds = settle_seconds
        self.on_change = on_change
        self._lock = threading.Lock()
        self._holds: dict[str, Hold] = {}
        self._settling: list[tuple[float, Hold]] = []  # released, until the status shows them
        self._waiters: dict[str, Waiter] = {}
        self._grants: dict[str, int] = {}  # schedule -> waves granted in its current run
        self._anchor: dict[Pair, float] = {}  # free when the first current hold was granted
        self._seq = 0

    def for_schedule(self, schedule: str, priority: int = 0) -> ScheduleBudget:
        return ScheduleBudget(self, schedule, priority)

    # --- the SurgeBudget operations, tagged with the schedule -----------------------------
    def reserve(
        self,
        schedule: str,
        priority: int,
        holder: str,
        need: Need,
        free: Need,
        versions: Versions | None = None,
    ) -> bool:
        amounts = _amounts(need)
        free_pairs = _amounts(free)
        reported = _integers(versions or {})
        with self._lock:
            now = self.clock.monotonic()
            self._drop_stale(now)
            self._settle(now)
            self._holds.pop(holder, None)  # reserving again replaces the earlier hold
            waiter = self._waiters.get(holder)
            if waiter is None:
                self._seq += 1
                waiter = Waiter(
                    holder, schedule, priority, amounts, self.clock.now(), self._seq, now
                )
                self._waiters[holder] = waiter
            waiter.need, waiter.priority, waiter.polled = amounts, priority, now
            granted = self._decide(waiter, free_pairs, reported)
            if granted:
                del self._waiters[holder]
                held = self._held()
                for pair in amounts:
                    if held.get(pair, 0.0) <= 0:
                        self._anchor[pair] = free_pairs.get(pair, 0.0)
                self._holds[holder] = Hold(holder, schedule, amounts, now)
                self._grants[schedule] = self._grants.get(schedule, 0) + 1
        if granted:
            log.info("capacity_leased", schedule=schedule, holder=holder, need=_nested(amounts))
        self._changed()
        return granted

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        with self._lock:
            hold = self._holds.get(holder)
            if hold is None or hold.ran:
                return
            hold.ran = True
        seen = _integers(versions())
        with self._lock:
            hold = self._holds.get(holder)
            if hold is not None and not hold.versions:
                hold.versions = seen
        self._changed()

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        with self._lock:
            hold = self._holds.get(holder)
            unknown = hold is not None and not hold.versions
        seen = _integers(versions()) if versions is not None and unknown else {}
        with self._lock:
            hold = self._holds.pop(holder, None)
            waiter = self._waiters.pop(holder, None)
            if hold is not None:
                hold.versions = hold.versions or seen
                self._released(hold)
        if hold is not None:
            log.info("capacity_released", schedule=hold.schedule, holder=holder)
        if hold is not None or waiter is not None:
            self._changed()

    def end_run(self, schedule: str) -> None:
        """The schedule's run ended (finished, failed, halted, crashed out): give back all it
        held or waited for, and start its round-robin count afresh for its next run."""
        with self._lock:
            gone = [h for h, hold in self._holds.items() if hold.schedule == schedule]
            gone += [h for h, w in self._waiters.items() if w.schedule == schedule]
            for holder in gone:
                hold = self._holds.pop(holder, None)
                if hold is not None:
                    self._released(hold)
                self._waiters.pop(holder, None)
            self._grants.pop(schedule, None)
        if gone:
            log.info("capacity_released", schedule=schedule, holders=len(gone), reason="run_ended")
            self._changed()

    # --- what status and metrics read -------------------------------------------------------
    def leased(self) -> dict[str, dict[str, float]]:
        """cluster -> resource -> amount held by all waves now."""
        total: dict[Pair, float] = {}
        with self._lock:
            for hold in self._holds.values():
                for pair, amount in hold.amounts.items():
                    total[pair] = total.get(pair, 0.0) + amount
        return _nested(total)

    def waiting(self) -> dict[str, CapacityWait]:
        """schedule -> its longest-waiting wave."""
        out: dict[str, CapacityWait] = {}
        with self._lock:
            for w in sorted(self._waiters.values(), key=lambda w: w.seq):
                if w.schedule not in out:
                    out[w.schedule] = CapacityWait(w.schedule, w.holder, w.since, _nested(w.short))
        return out

    # --- the decision -----------------------------------------------------------------------
    def _released(self, hold: Hold) -> None:
        """Count a released hold until the status has had time to show it (the lock is
        held)."""
        until = hold.granted + self.settle_seconds
        if until <= self.clock.monotonic():
            self._forget(hold)
        else:
            self._settling.append((until, hold))

    def _settle(self, now: float) -> None:
        due = [hold for until, hold in self._settling if until <= now]
        self._settling = [(until, hold) for until, hold in self._settling if until > now]
        for hold in due:
            self._forget(hold)

    def _held(self, reported: Mapping[str, int] | None = None) -> dict[Pair, float]:
        """What every hold counts for now: those held, and those released but settling; with
        `reported` (Cluster versions), not those that ran before that status was written."""
        total: dict[Pair, float] = {}
        for hold in [*self._holds.values(), *(h for _, h in self._settling)]:
            for pair, amount in hold.amounts.items():
                if reported is None or not hold.seen_by(pair[0], reported):
                    total[pair] = total.get(pair, 0.0) + amount
        return total

    def _forget(self, hold: Hold) -> None:
        """A released hold's replicas stay (the wave moved): its room is gone from the anchor;
        with no hold left on a pair, the next grant anchors afresh (the lock is held)."""
        held = self._held()
        for pair, amount in hold.amounts.items():
            if held.get(pair, 0.0) <= 0:
                self._anchor.pop(pair, None)
            elif pair in self._anchor:
                self._anchor[pair] -= amount

    def _left(self, free: Mapping[Pair, float], reported: Mapping[str, int]) -> dict[Pair, float]:
        """Room per pair: the better of the two safe estimates (see the module's doc)."""
        left = dict(free)
        unseen = self._held(reported)
        for pair, amount in self._held().items():
            now = free.get(pair, 0.0)
            anchor = self._anchor.get(pair, now)
            left[pair] = max(now - unseen.get(pair, 0.0), min(now, anchor - amount))
        return left

    def _rank(self, w: Waiter) -> tuple[int, int, int]:
        return (-w.priority, self._grants.get(w.schedule, 0), w.seq)

    def _decide(
        self, asking: Waiter, free: Mapping[Pair, float], reported: Mapping[str, int]
    ) -> bool:
        """Walk the waiters in rank order as if each were asking now: one that fits takes its
        room (on paper), one that does not fit claims all it asks for; `asking` is granted iff
        it fits what is left and touches nothing claimed above it."""
        left = self._left(free, reported)
        claimed: set[Pair] = set()
        for w in sorted(self._waiters.values(), key=self._rank):
            short = {
                p: a - left.get(p, 0.0) for p, a in w.need.items() if a > left.get(p, 0.0) + 1e-9
            }
            touches = bool(claimed.intersection(w.need))
            if w is asking:
                asking.short = short
                if touches and not short:
                    asking.short = {p: 0.0 for p in claimed.intersection(w.need)}
                return not short and not touches
            if short or touches:
                if all(a <= free.get(p, 0.0) + 1e-9 for p, a in w.need.items()):
                    claimed.update(w.need)  # releases can make it fit: keep its place
                continue
            for pair, amount in w.need.items():
                left[pair] = left.get(pair, 0.0) - amount
        return False  # unreachable: `asking` is among the waiters

    def _drop_stale(self, now: float) -> None:
        for holder, w in list(self._waiters.items()):
            if now - w.polled > self.stale_after:
                del self._waiters[holder]
                log.warning(
                    "capacity_waiter_dropped",
                    schedule=w.schedule,
                    holder=holder,
                    reason="stopped asking",
                )

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self)
            except Exception as exc:  # a metric or status hook never breaks a switch
                log.warning("budget_observer_failed", error=str(exc))


@dataclass(frozen=True)
class ScheduleBudget:
    """The shared budget as one schedule's runs see it (a SurgeBudget)."""

    shared: SharedBudget
    schedule: str
    priority: int = 0

    def reserve(
        self, holder: str, need: Need, free: Need, versions: Versions | None = None
    ) -> bool:
        return self.shared.reserve(self.schedule, self.priority, holder, need, free, versions)

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        self.shared.running(holder, versions)

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        self.shared.release(holder, versions)


def _nested(pairs: Mapping[Pair, float]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (cluster, resource), amount in sorted(pairs.items()):
        out.setdefault(cluster, {})[resource] = amount
    return out


def _integers(versions: Versions) -> dict[str, int]:
    """cluster -> resourceVersion as an integer; one that is not one is left out (unknown)."""
    return {cluster: int(v) for cluster, v in versions.items() if str(v).isdigit()}
