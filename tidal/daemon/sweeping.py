"""The sweep of leftovers (tidal.engine.sweeper) as the daemon and `tidal cleanup` run it.

A leftover's run is active while its schedule's run lock (Lease `tidal-run-<schedule>`) is
held and not expired: whoever holds it (the daemon's run, a `tidal switch`) finishes or undoes
its own objects. In the daemon, a run it will resume itself (its schedule loaded, the journal's
run of that schedule unfinished with the same run id) is also left to it. Everything else is
swept. Each sweep that acts is journalled in ConfigMap `tidal-sweep` of the state namespace
(key `lastSweep`: when, by whom, what was done, what is left) and logged.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from tidal.daemon.lease import run_lock_name
from tidal.daemon.state import StateStore
from tidal.domain.clock import Clock
from tidal.engine.journal import RunState
from tidal.engine.sweeper import (
    Leftover,
    LeftoverKind,
    SweepAction,
    SweepResult,
    find_leftovers,
    sweep,
)
from tidal.karmada import state_objects as cm
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import AlreadyExists, Conflict, KarmadaError, LeaseLost
from tidal.karmada.leases import get_lease
from tidal.karmada.views import LeaseView, parse_time
from tidal.metrics import DaemonMetrics
from tidal.settings import SweeperSettings

log = structlog.get_logger("tidal.sweeper")
SWEEP_OBJECT = "tidal-sweep"


def run_active(client: KarmadaClient, namespace: str, schedule: str, now: datetime) -> bool:
    """The schedule's run lock is held and not expired."""
    lease = LeaseView.of(get_lease(client, namespace, run_lock_name(schedule)))
    renewed = parse_time(lease.spec.get("renewTime"))
    if lease.holder is None or renewed is None:
        return False
    return renewed + timedelta(seconds=lease.duration_seconds or 0.0) > now


@dataclass
class SweepReport:
    at: datetime
    actions: list[SweepAction] = field(default_factory=list)
    left: list[Leftover] = field(default_factory=list)  # still there (active runs' included)

    @property
    def idle(self) -> list[Leftover]:
        """Leftovers of runs not active that are still there (kept, or a dry run's)."""
        return [
            a.leftover
            for a in self.actions
            if a.result in (SweepResult.KEPT, SweepResult.WOULD_SWEEP)
        ]

    def counts(
        self, alert_age: float, loaded: Collection[str] = ()
    ) -> dict[tuple[str, str], tuple[int, int]]:
        """(kind, schedule) -> (idle leftovers, those older than `alert_age` seconds). A
        temporary Lazy of a schedule in `loaded` is never overdue: a run of its window lifts
        it (a halt holds it on purpose; `tidal status` shows it held)."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for x in self.idle:
            key = (x.kind.value, x.schedule)
            count, overdue = out.get(key, (0, 0))
            age = x.age_seconds(self.at)
            late = (
                age is not None
                and age > alert_age
                and not (x.kind is LeftoverKind.LAZY and x.schedule in loaded)
            )
            out[key] = (count + 1, overdue + int(late))
        return out

    @property
    def acted(self) -> bool:
        return any(a.result in (SweepResult.REMOVED, SweepResult.RESTORED) for a in self.actions)

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at.isoformat(),
            "actions": [a.to_json(self.at) for a in self.actions],
            "left": [x.to_json(self.at) for x in self.left],
        }


def owners_of(runs: dict[str, RunState]) -> dict[str, str]:
    """Run id -> schedule of each schedule's last run."""
    return {run.run_id: name for name, run in runs.items()}


def sweep_leftovers(
    client: KarmadaClient,
    namespace: str,
    clock: Clock,
    *,
    by: str,
    dry_run: bool = False,
    loaded: Collection[str] = (),
    budget_seconds: float = 30.0,
) -> SweepReport:
    """Find every leftover and sweep those of runs not active; `loaded`: the schedules this
    daemon runs (it resumes their unfinished runs itself)."""
    _states, runs, _corrupt = StateStore(client, namespace).list_all()
    leftovers = find_leftovers(client, owners_of(runs))
    now = clock.now()
    active = _activity(client, namespace, now, runs, loaded)
    actions = sweep(
        client, clock, leftovers, active=active, dry_run=dry_run, budget_seconds=budget_seconds
    )
    gone = {a.leftover for a in actions if a.result in (SweepResult.REMOVED, SweepResult.RESTORED)}
    report = SweepReport(now, actions, [x for x in leftovers if x not in gone])
    for action in actions:
        log.info(
            "leftover_swept" if action.leftover in gone else "leftover_kept",
            kind=action.leftover.kind.value,
            object=action.leftover.ref,
            schedule=action.leftover.schedule,
            run_id=action.leftover.run_id,
            result=action.result.value,
            reason=action.reason,
            dry_run=dry_run,
        )
    if report.acted and not dry_run:
        _journal(client, namespace, report, by)
    return report


def _activity(
    client: KarmadaClient,
    namespace: str,
    now: datetime,
    runs: dict[str, RunState],
    loaded: Collection[str],
) -> Callable[[Leftover], bool]:
    locks: dict[str, bool] = {}

    def active(leftover: Leftover) -> bool:
        schedule = leftover.schedule
        if not schedule:
            return False
        if schedule not in locks:
            locks[schedule] = run_active(client, namespace, schedule, now)
        if locks[schedule]:
            return True
        run = runs.get(schedule)
        return (
            schedule in loaded
            and run is not None
            and not run.finished
            and run.run_id == leftover.run_id
        )

    return active


def _journal(client: KarmadaClient, namespace: str, report: SweepReport, by: str) -> None:
    """ConfigMap tidal-sweep: the last sweep that acted (best effort: a lost write is logged;
    the objects themselves are the truth the next sweep reads)."""
    data = {"lastSweep": json.dumps({"by": by, **report.to_json()}, sort_keys=True)}
    try:
        current = cm.get_configmap(client, namespace, SWEEP_OBJECT)
        if current is None:
            cm.create_configmap(client, namespace, SWEEP_OBJECT, data)
        else:
            cm.update_configmap(client, {**current, "data": data})
    except (AlreadyExists, Conflict, KarmadaError) as exc:
        log.warning("sweep_journal_failed", error=str(exc))


class SweepLoop:
    """The daemon's sweeper thread: as soon as this replica leads (and again each time it
    gains the lease) and then every interval, while it leads; its writes pass the leader's
    write gate like every acting write (fenced by the lease). Publishes the metrics."""

    def __init__(
        self,
        client: KarmadaClient,
        namespace: str,
        clock: Clock,
        settings: SweeperSettings,
        *,
        identity: str,
        may_act: Callable[[], bool],
        loaded: Callable[[], Collection[str]],
        metrics: DaemonMetrics,
        stop: threading.Event,
        poll_seconds: float = 0.5,
    ) -> None:
        self.client, self.namespace, self.clock = client, namespace, clock
        self.settings, self.identity = settings, identity
        self.may_act, self.loaded, self.metrics = may_act, loaded, metrics
        self._stop, self._poll = stop, poll_seconds
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tidal-sweeper", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self) -> SweepReport | None:
        """One sweep if this replica may act (None otherwise, or when it failed: logged)."""
        if not self.may_act():
            return None
        try:
            report = sweep_leftovers(
                self.client,
                self.namespace,
                self.clock,
                by=f"daemon:{self.identity}",
                loaded=self.loaded(),
                budget_seconds=self.settings.budget_seconds,
            )
        except (KarmadaError, LeaseLost) as exc:
            log.warning("sweep_failed", error=str(exc), error_class=type(exc).__name__)
            return None
        self.metrics.set_leftovers(report.counts(self.settings.alert_age_seconds, self.loaded()))
        return report

    def _loop(self) -> None:
        due, leading = 0.0, False
        while not self._stop.wait(self._poll):
            now_leading = self.may_act()
            if now_leading and (not leading or self.clock.monotonic() >= due):
                self.run_once()
                due = self.clock.monotonic() + self.settings.interval_seconds
            leading = now_leading
