"""One pass for one schedule: resume a half-finished run, or work out the window in force and
run it / record it missed / record it skipped. Called on start-up, after reloads, after
regaining leadership, on each window's trigger and on a periodic resync; always on the
schedule's own worker (one pass at a time per schedule), so each start is handled once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import structlog

from tidal.daemon.lease import RunLock
from tidal.daemon.refusal import explain
from tidal.daemon.state import CorruptState, DaemonOutcome, HandledRecord, ScheduleState, StateStore
from tidal.domain.clock import Clock
from tidal.domain.outcomes import RunResult
from tidal.domain.windows import (
    Action,
    Decision,
    WindowStart,
    WindowTimes,
    decide,
    next_start,
    start_in_force,
    times_of,
)
from tidal.engine.budget import SurgeBudget
from tidal.engine.events import OnEvent
from tidal.engine.journal import FencedOut, Interrupted, Journal, JournalLost, RunState
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import Conflict, KarmadaError, LeaseLost
from tidal.karmada.informer import SharedReads
from tidal.loading.loader import LoadedSchedule
from tidal.metrics import DaemonMetrics, NullMetrics

log = structlog.get_logger("tidal.daemon.reconcile")

# A trigger may fire a hair before the start on an offset clock: snap to it.
SNAP = timedelta(seconds=2)


class RunOutcome(Protocol):
    """What the daemon needs of a finished run (a RunRecord, or the run's journalled state)."""

    @property
    def result(self) -> RunResult | None: ...


class RunSwitch(Protocol):
    """tidal.engine.switch.run_switch, or a stand-in."""

    def __call__(
        self,
        client: KarmadaClient,
        loaded: LoadedSchedule,
        window_name: str,
        *,
        clock: Clock,
        journal: Journal,
        on_event: OnEvent,
        run_id: str | None = None,
        resume: RunState | None = None,
        budget: SurgeBudget | None = None,
        reads: SharedReads | None = None,
    ) -> RunOutcome: ...


@dataclass(frozen=True)
class RunShare:
    """What the daemon lends one run: its view of the shared capacity budget, and the shared
    informers (None: the run lists and watches on its own)."""

    budget: SurgeBudget
    reads: SharedReads | None = None


@dataclass(frozen=True)
class PassView:
    """What one pass over a schedule read, and the time it decides at: shared by the steps
    that act on its decision."""

    name: str
    loaded: LoadedSchedule
    seen: ScheduleState
    unfinished: RunState | None
    now: datetime
    reason: str  # what triggered the pass


def run_id_for(schedule: str, start: WindowStart, due: datetime | None = None) -> str:
    """Deterministic, DNS-safe: the same start always gets the same run id; a start due
    again later (a hold over it ended) gets its own, suffixed with the minutes it was due
    after the start."""
    base = f"{schedule}-{start.window}-{start.at.astimezone(UTC):%Y%m%d-%H%M%S}".lower()
    if due is not None and due - start.at > SNAP:
        base += f"-{int((due - start.at).total_seconds()) // 60}m"
    return base


def started_at(run: RunState | None) -> datetime | None:
    """When a finished run began (None: unfinished, or no readable time)."""
    if run is None or not run.finished or not run.started_at:
        return None
    try:
        started = datetime.fromisoformat(run.started_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return started if started.tzinfo is not None else started.replace(tzinfo=UTC)


def ran_by_hand(run: RunState | None, start: WindowStart) -> bool:
    """A finished run of the start's window that began after the start (`tidal switch`)
    carried that start out: it is neither missed nor to be run again."""
    started = started_at(run)
    return (
        started is not None
        and run is not None
        and run.window == start.window
        and started >= start.at
    )


def overtaken_by_hand(run: RunState | None, start: WindowStart) -> datetime | None:
    """A finished run of another window that `tidal switch` began after the start is the
    operator's intent: the start is neither missed nor run over it. When it began, else None.
    A daemon's own run that began late (a catch-up, a retry) overtakes nothing."""
    started = started_at(run)
    if (
        started is None
        or run is None
        or run.window == start.window
        or started < start.at
        or (run.started_by or "").startswith("daemon:")
    ):
        return None
    return started


def result_of(record: RunOutcome) -> DaemonOutcome:
    return DaemonOutcome(record.result) if record.result is not None else DaemonOutcome.UNKNOWN


class Reconciler:
    def __init__(
        self,
        *,
        client: KarmadaClient,
        state: StateStore,
        run_switch: RunSwitch,
        clock: Clock,
        get_schedule: Callable[[str], LoadedSchedule | None],
        is_leader: Callable[[], bool],
        on_event: OnEvent,
        on_fenced: Callable[[str], None],
        metrics: DaemonMetrics | None = None,
        lock_for: Callable[[str], RunLock] | None = None,
        max_clock_skew: float | None = None,
        shared_for: Callable[[LoadedSchedule], contextlib.AbstractContextManager[RunShare]]
        | None = None,
    ) -> None:
        self.client = client
        self.state = state
        self.run_switch = run_switch
        self.clock = clock
        self.get_schedule = get_schedule
        self.is_leader = is_leader
        self.on_event = on_event
        self.on_fenced = on_fenced
        self.metrics: DaemonMetrics = metrics if metrics is not None else NullMetrics()
        self.lock_for = lock_for
        self.max_clock_skew = max_clock_skew
        self.shared_for = shared_for
        self.last_decisions: dict[str, str] = {}
        self.handled_at: dict[str, datetime] = {}  # the last start each pass saw handled
        self.drift: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, name: str, reason: str) -> None:
        if not self.is_leader():
            return
        loaded = self.get_schedule(name)
        if loaded is None:
            return
        try:
            self._pass(name, loaded, reason)
        except CorruptState as exc:
            log.error(
                "state_corrupt",
                schedule=name,
                object=exc.object,
                error=exc.detail,
                repair=exc.repair,
            )
            self.metrics.state_corrupt(name)
            return
        except Interrupted as exc:  # stopping, or the lease lost: the journal has the run
            log.warning("switch_interrupted", schedule=name, error=str(exc))
            self.on_fenced(f"{name}: {exc}")
        except (Conflict, FencedOut, LeaseLost) as exc:
            own_lease = any(
                isinstance(e, LeaseLost) or (isinstance(e, Conflict) and e.reason == "NotLeader")
                for e in (exc, exc.__cause__)
            )
            log.error(
                "fenced_out",
                schedule=name,
                error=str(exc),
                reason="lease_lost" if own_lease else "another_writer",
            )
            self.on_fenced(f"{name}: {exc}")
        except JournalLost as exc:
            # The claim ("started") stays: the next pass finds the run from its policies' marks.
            log.error("journal_lost", schedule=name, reason="journal_lost", error=str(exc))
            self.metrics.journal_lost(name)
        self.metrics.schedule_unblocked(name)

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[bool]:
        """Hold the schedule's run lock (shared with `tidal switch`) around one run."""
        if self.lock_for is None:
            yield True
            return
        lock = self.lock_for(name)
        with lock.holding() as held:
            if not held:
                log.info("schedule_busy", schedule=name, holder=lock.holder)
            yield held

    @contextlib.contextmanager
    def _shared(self, loaded: LoadedSchedule) -> Iterator[dict[str, Any]]:
        """The run_switch keywords lending the daemon's budget and informers to one run (none
        without them), given back when the run ends."""
        if self.shared_for is None:
            yield {}
            return
        with self.shared_for(loaded) as share:
            yield {"budget": share.budget, "reads": share.reads}

    def _switch(self, loaded: LoadedSchedule, window: str, **options: Any) -> RunOutcome:
        """One run of the window (`options`: its run id, the journal it resumes), with what
        the daemon lends it."""
        with self._shared(loaded) as shared:
            return self.run_switch(
                self.client,
                loaded,
                window_name=window,
                clock=self.clock,
                journal=self.state,
                on_event=self.on_event,
                **options,
                **shared,
            )

    def _now(self, times: WindowTimes, reason: str) -> datetime:
        now = self.clock.now()
        if reason.startswith("window:"):
            upcoming = next_start(times, now)
            if upcoming is not None and upcoming.at - now <= SNAP:
                now = upcoming.at
        return now

    def _pass(self, name: str, loaded: LoadedSchedule, reason: str) -> None:
        times = times_of(loaded.schedule)
        seen = self.state.read(name)
        if seen.handled is not None:
            self.handled_at[name] = seen.handled.at
        unfinished = self.state.load(name)
        if self._clock_skewed(name):
            return
        if unfinished is not None:
            self.metrics.restore_last_run(unfinished)  # also a run `tidal switch` made
        if unfinished is not None and not unfinished.finished:
            self._resume(name, loaded, seen, unfinished)
            return
        if seen.controls.retry_run is not None:
            self._retry(name, loaded, seen, unfinished)
            return
        now = self._now(times, reason)
        view = PassView(name, loaded, seen, unfinished, now, reason)
        claimed = seen.handled
        if claimed is not None and claimed.outcome is DaemonOutcome.STARTED and claimed.run_id:
            self._claimed(view)
            return
        decision = decide(
            times,
            now,
            seen.handled.handled if seen.handled else None,
            seen.controls,
            suspended_in_spec=loaded.schedule.spec.suspend,
        )
        self.last_decisions[name] = f"{decision.action.value}: {decision.reason}"
        if decision.start is not None:
            self._act(view, decision)

    def _act(self, view: PassView, decision: Decision) -> None:
        """Carry the decision about a start out: run, miss, skip it, or watch for drift."""
        name, seen, unfinished, now = view.name, view.seen, view.unfinished, view.now
        start = decision.start
        assert start is not None
        if decision.action in (Action.RUN, Action.MISSED, Action.SKIP):
            self.handled_at[name] = start.at  # dealt with in this pass, one way or another
        if decision.action in (Action.RUN, Action.MISSED) and self._handled_by_hand(view, decision):
            return
        if decision.action is Action.RUN:
            self._run_due(view, decision)
        elif decision.action is Action.MISSED:
            self._missed(view, start, decision)
        elif (
            decision.action is Action.NOTHING
            and unfinished is not None
            and unfinished.window == start.window
        ):
            self._check_drift(name, unfinished)
        elif decision.action is Action.SKIP:
            log.info(
                "window_skipped", schedule=name, window=start.window, start=start.at.isoformat()
            )
            self.state.record_handled(
                seen,
                HandledRecord(
                    start.window, start.at, DaemonOutcome.SKIPPED, None, now, reason=decision.reason
                ),
            )
            self.state.update_controls(name, lambda c: replace(c, skip_start=None))

    def _resume(
        self, name: str, loaded: LoadedSchedule, seen: ScheduleState, unfinished: RunState
    ) -> None:
        """Carry an unfinished run on from its journal, under the schedule's run lock."""
        with self._locked(name) as ok:
            if not ok:
                return
            log.info(
                "run_resuming",
                schedule=name,
                window=unfinished.window,
                run_id=unfinished.run_id,
                phase=unfinished.phase,
            )
            record = self._switch(
                loaded, unfinished.window, run_id=unfinished.run_id, resume=unfinished
            )
            self._finish(seen, name, unfinished.window, record, unfinished.run_id)

    def _claimed(self, view: PassView) -> None:
        """A start claimed ("started") by a pass: record its finished run, restart it when the
        claimant died before its first step and it is still due, else abandon it."""
        name, loaded, seen, now = view.name, view.loaded, view.seen, view.now
        claimed, unfinished = seen.handled, view.unfinished
        assert claimed is not None and claimed.run_id is not None
        if unfinished is not None and unfinished.run_id == claimed.run_id:
            # The run finished but its outcome was never recorded (crash in between).
            self._finish(seen, name, unfinished.window, unfinished, claimed.run_id)
            return
        # Claimed, but the engine wrote nothing: the claimant died before its first step.
        times = times_of(loaded.schedule)
        in_force = start_in_force(times, now)
        still_due = (
            in_force is not None and (in_force.window, in_force.at) == (claimed.window, claimed.at)
        ) or now - claimed.at <= times.catch_up_window
        if still_due or self._under_way(loaded, claimed.window, claimed.run_id):
            log.info(
                "run_restarting",
                schedule=name,
                window=claimed.window,
                run_id=claimed.run_id,
                reason="claimed but never started",
            )
            restart = WindowStart(
                at=claimed.at, window=claimed.window, local=claimed.at.replace(tzinfo=None)
            )
            self._start(name, loaded, seen, seen, restart, claimed.run_id)
            return
        self.state.record_handled(
            seen,
            HandledRecord(
                claimed.window,
                claimed.at,
                DaemonOutcome.ABANDONED,
                claimed.run_id,
                now,
                reason="claimed, but the claimant died before its first step and the start "
                "is no longer due",
            ),
        )

    def _handled_by_hand(self, view: PassView, decision: Decision) -> bool:
        """A due or missed start that `tidal switch` carried out, or overtook with another
        window: recorded as such (True), never run over it."""
        name, seen, unfinished, now = view.name, view.seen, view.unfinished, view.now
        start = decision.start
        if start is None or unfinished is None:
            return False
        if ran_by_hand(unfinished, start):
            log.info(
                "window_run_by_hand",
                schedule=name,
                window=start.window,
                run_id=unfinished.run_id,
                result=unfinished.result,
                start=start.at.isoformat(),
            )
            self.state.record_handled(
                seen,
                HandledRecord(
                    start.window, start.at, result_of(unfinished), unfinished.run_id, now
                ),
            )
            return True
        overtaken = overtaken_by_hand(unfinished, start) if decision.reason != "hold" else None
        if overtaken is None:
            return False
        log.info(
            "window_overtaken_by_hand",
            schedule=name,
            window=start.window,
            start=start.at.isoformat(),
            by_window=unfinished.window,
            run_id=unfinished.run_id,
            result=unfinished.result,
        )
        self.state.record_handled(
            seen,
            HandledRecord(
                unfinished.window, overtaken, result_of(unfinished), unfinished.run_id, now
            ),
        )
        return True

    def _run_due(self, view: PassView, decision: Decision) -> None:
        """Claim the due start ("started", under the run lock), then run it."""
        name, loaded, seen, now = view.name, view.loaded, view.seen, view.now
        start = decision.start
        assert start is not None
        run_id = run_id_for(name, start, due=now - decision.late_by)
        log.info(
            "window_due",
            schedule=name,
            window=start.window,
            run_id=run_id,
            start=start.at.isoformat(),
            reason=decision.reason,
            late_seconds=decision.late_by.total_seconds(),
            trigger=view.reason,
        )
        with self._locked(name) as ok:
            if not ok:
                return
            claim = self.state.record_handled(
                seen, HandledRecord(start.window, start.at, DaemonOutcome.STARTED, run_id, now)
            )
            self._start(name, loaded, seen, claim, start, run_id)

    def _missed(self, view: PassView, start: WindowStart, decision: Decision) -> None:
        """A start too late to run: missed (counted), or, for a schedule tidal never ran,
        a start before its first run."""
        name, seen, now = view.name, view.seen, view.now
        if seen.handled is None and view.unfinished is None:
            # A schedule tidal never ran: its last start was before tidal managed it.
            log.info(
                "window_before_first_run",
                schedule=name,
                window=start.window,
                start=start.at.isoformat(),
            )
            self.state.record_handled(
                seen,
                HandledRecord(start.window, start.at, DaemonOutcome.BEFORE_FIRST_RUN, None, now),
            )
            return
        log.warning(
            "window_missed",
            schedule=name,
            window=start.window,
            start=start.at.isoformat(),
            late_seconds=decision.late_by.total_seconds(),
        )
        self.state.record_handled(
            seen,
            HandledRecord(
                start.window, start.at, DaemonOutcome.MISSED, None, now, reason=decision.reason
            ),
        )
        self.metrics.window_missed(name, start.window)

    def _start(
        self,
        name: str,
        loaded: LoadedSchedule,
        before: ScheduleState,
        seen: ScheduleState,
        start: WindowStart,
        run_id: str,
    ) -> None:
        """Run the claimed start; `before` is the state read before the claim."""
        try:
            record = self._switch(loaded, start.window, run_id=run_id)
        except (Conflict, FencedOut, LeaseLost, JournalLost):
            raise
        except KarmadaError as exc:
            if exc.retryable and self._untouched(name, run_id):
                # Nothing written yet: give the start back, the next pass retries it.
                log.warning(
                    "switch_retry_later",
                    schedule=name,
                    window=start.window,
                    run_id=run_id,
                    error=str(exc),
                )
                self.state.record_handled(
                    seen,
                    before.handled
                    or HandledRecord("", datetime(1970, 1, 1, tzinfo=UTC), DaemonOutcome.RETRY),
                )
                return
            self._refused(seen, name, loaded, start, run_id, exc)
            return
        except Exception as exc:  # a refused plan, a bug: recorded, never retried blindly
            self._refused(seen, name, loaded, start, run_id, exc)
            return
        self._finish(seen, name, start.window, record, run_id)

    def _retry(
        self, name: str, loaded: LoadedSchedule, seen: ScheduleState, failed: RunState | None
    ) -> None:
        """`retry` through the daemon (controls.retry_run): the failed run's window again, from
        the wave that failed; the request is cleared first, so it runs once at most."""
        wanted = seen.controls.retry_run
        self.state.update_controls(name, lambda c: replace(c, retry_run=None))
        if failed is None or failed.run_id != wanted or failed.result is not RunResult.FAILED:
            log.warning(
                "retry_dropped",
                schedule=name,
                run_id=wanted,
                reason="that run is no longer the last failed run",
            )
            return
        with self._locked(name) as ok:
            if not ok:
                return
            log.info("run_retrying", schedule=name, window=failed.window, failed_run=wanted)
            try:
                record = self._switch(loaded, failed.window)
            except (Conflict, FencedOut, LeaseLost, JournalLost):
                raise
            except Exception as exc:  # a refused plan: logged, the failed run stays the last
                log.error(
                    "retry_not_started",
                    schedule=name,
                    window=failed.window,
                    error_class=type(exc).__name__,
                    error=str(exc).splitlines()[0][:300] if str(exc) else "",
                )
                return
            run = self.state.load(name)
            handled = self.state.read(name)
            if run is not None and handled.handled is not None and handled.handled.run_id == wanted:
                done = handled.handled
                self.state.record_handled(
                    handled,
                    HandledRecord(
                        done.window, done.at, result_of(record), run.run_id, self.clock.now()
                    ),
                )
            log.info(
                "window_done",
                schedule=name,
                window=failed.window,
                run_id=run.run_id if run else None,
                result=result_of(record),
            )

    def _check_drift(self, name: str, run: RunState) -> None:
        """Report (never revert) policies edited since the window in force wrote them."""
        from tidal.daemon.status import policy_drift

        try:
            drift = policy_drift(self.client, run)
        except KarmadaError as exc:
            log.warning("drift_check_failed", schedule=name, error=str(exc))
            return
        if drift != self.drift.get(name, []):
            for item in drift:
                log.warning(
                    "policy_drift",
                    schedule=name,
                    window=run.window,
                    run_id=run.run_id,
                    policy=item["policy"],
                    reason=item["reason"],
                )
            if not drift:
                log.info("policy_drift_cleared", schedule=name)
        self.drift[name] = drift
        self.metrics.set_policy_drift(name, len(drift))

    def _clock_skewed(self, name: str) -> bool:
        """Refuse to act while our clock and the API server's disagree by more than the limit:
        windows would start early or late, and deadlines would lie."""
        measure = getattr(self.client, "clock_offset", None)
        skew = measure() if measure is not None and self.max_clock_skew is not None else None
        if skew is None or self.max_clock_skew is None:
            return False
        self.metrics.set_clock_skew(skew, self.max_clock_skew)
        if abs(skew) <= self.max_clock_skew:
            return False
        log.error(
            "clock_skew",
            schedule=name,
            reason="clock_skew",
            skew_seconds=round(skew, 1),
            max_skew_seconds=self.max_clock_skew,
            fix="synchronise this node's clock (NTP) with the API server's",
        )
        return True

    def _under_way(self, loaded: LoadedSchedule, window: str, run_id: str) -> bool:
        """A policy of the window carries the run's marks and not its completion: the run
        changed it and never finished (its journal was lost), so it must be carried on."""
        from tidal.engine.policy_change import run_under_way

        try:
            return run_under_way(self.client, loaded.schedule, window, run_id)
        except KarmadaError as exc:
            log.warning("run_marks_unreadable", schedule=loaded.schedule.name, error=str(exc))
            return False

    def _untouched(self, name: str, run_id: str) -> bool:
        run = self.state.load(name)
        return run is None or run.run_id != run_id

    def _refused(
        self,
        seen: ScheduleState,
        name: str,
        loaded: LoadedSchedule,
        start: WindowStart,
        run_id: str,
        exc: Exception,
    ) -> None:
        reason, lines = explain(exc, loaded, start.window)
        log.error(
            "switch_not_started",
            schedule=name,
            window=start.window,
            run_id=run_id,
            reason=reason.value,
            error_class=type(exc).__name__,
            errors=lines,
        )
        now = self.clock.now()
        summary = lines[0] if lines else type(exc).__name__
        self.state.record_handled(
            seen,
            HandledRecord(
                start.window,
                start.at,
                DaemonOutcome.REFUSED,
                run_id,
                now,
                reason=f"{reason.value}: {summary}"[:500],
            ),
        )
        self.metrics.switch_refused(name, start.window, reason.value, now.timestamp())

    def _finish(
        self, seen: ScheduleState, name: str, window: str, record: RunOutcome, run_id: str
    ) -> None:
        result = result_of(record)
        handled = seen.handled
        at = handled.at if handled is not None and handled.run_id == run_id else self.clock.now()
        self.state.record_handled(seen, HandledRecord(window, at, result, run_id, self.clock.now()))
        log.info("window_done", schedule=name, window=window, run_id=run_id, result=result)
