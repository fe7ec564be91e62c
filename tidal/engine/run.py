"""A switch as an object: `prepare` (resume, plan, preflight, no-op) returns a PreparedRun, a
Refusal or a NoOp; a PreparedRun executes the phase table until the run is done.

Each phase has one handler that does the phase's work and returns the next phase
(`PHASE_HANDLERS`); the journal is saved at every move (tidal.engine.states lists the legal
ones) and before every side effect. A Conflict on save means another writer took over:
FencedOut, stop at once."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from tidal.domain.clock import Clock
from tidal.domain.placement import Placement
from tidal.domain.plan import PlannedWorkload
from tidal.domain.schedule import TidalSchedule
from tidal.domain.team_capacity import TeamEstimate
from tidal.engine import bridging, cleanup, pacing, policy_change, surging, wave_checks
from tidal.engine.budget import OwnBudget, SurgeBudget
from tidal.engine.cleanup import Stop
from tidal.engine.detector_settle import let_detector_settle
from tidal.engine.events import (
    Emitter,
    EventBase,
    PolicyChanged,
    RunFinished,
    RunStarted,
    RunWarning,
    WaveFinished,
    policy_ref,
)
from tidal.engine.inflight import SwitchContext, iso_now, leave_out
from tidal.engine.journal import FencedOut, Journal, PolicyRecord, RunState, WaveState
from tidal.engine.outcome import WaveOutcome
from tidal.engine.patience import patiently
from tidal.engine.planning import SwitchPlan, build_plan
from tidal.engine.preflight import ready_field_of
from tidal.engine.record import RunRecord
from tidal.engine.refusal import PlanRefused, refusal_problems
from tidal.engine.resolve import Workload
from tidal.engine.rollback import roll_back
from tidal.engine.snapshot import ScheduleSource, schedule_hash, schedule_of, snapshot_of
from tidal.engine.snapshot import restore as restore_schedule
from tidal.engine.states import (
    FailureReason,
    LazyMark,
    Phase,
    PolicyAction,
    RunResult,
    Strategy,
    WaveResult,
)
from tidal.engine.strategies import strategy_for
from tidal.engine.wave import gone_reason, run_wave
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import Conflict, KarmadaError, LeaseLost
from tidal.karmada.informer import SharedReads

ALREADY_IN_FORCE: Final = "already in force"


def new_run_id(clock: Clock) -> str:
    return clock.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass(frozen=True)
class Refusal:
    """The switch must not start (an unsafe plan): nothing was written."""

    error: PlanRefused


@dataclass(frozen=True)
class NoOp:
    """The window is in force already: nothing to write."""

    plan: SwitchPlan
    base: EventBase
    started_at: str

    def report(self, emitter: Emitter, clock: Clock) -> RunRecord:
        emitter.emit(RunStarted(**self.base, workloads=0, waves=0, trigger=self.plan.trigger))
        emitter.emit(
            RunFinished(**self.base, result=RunResult.SUCCEEDED, reason=ALREADY_IN_FORCE, noop=True)
        )
        return RunRecord(
            self.base["schedule"],
            self.base["window"],
            self.base["run_id"],
            RunResult.SUCCEEDED,
            self.started_at,
            clock.now().isoformat(),
            [],
            list(self.plan.warnings),
            ALREADY_IN_FORCE,
            noop=True,
        )


def carried_over(previous: RunState | None, window: str) -> list[PolicyRecord]:
    """After a halted run of the same window, its policy records (pre-images, Lazy added and
    the original activationPreference) stay valid: the new run restores and rolls back from
    them, not from the half-switched policy it finds. (A Lazy a run of another window left is
    found from its marks on the policy, by whichever window names that policy next.)"""
    if previous is None or previous.result is not RunResult.FAILED or previous.window != window:
        return []
    out = []
    for record in previous.policies:
        if not record.applied or record.restored:
            continue
        copy_ = PolicyRecord.from_dict(record.to_dict())
        if copy_.lazy is LazyMark.LIFTED:
            copy_.lazy = LazyMark.ADDED
        out.append(copy_)
    return out


def prepare(
    client: KarmadaClient,
    source: ScheduleSource,
    window: str,
    *,
    clock: Clock,
    journal: Journal,
    emitter: Emitter,
    run_id: str | None = None,
    resume: RunState | None = None,
    budget: SurgeBudget | None = None,
    reads: SharedReads | None = None,
    policy_settle: float = 0.0,
    interlude: Interlude | None = None,
    team: TeamEstimate | None = None,
) -> PreparedRun | Refusal | NoOp:
    """Resume the window's unfinished run (`resume`, else the journal's; with `run_id`, only
    that run) or plan a new one; `policy_settle`: detector_settle.py; `interlude`: what
    happens between two waves (default: the rollout's pause); `team`: a deployed team
    estimator's answers, which the plan's dynamic splits take into account."""
    previous = resume if resume is not None else journal.load(schedule_of(source).name)
    resuming = (
        previous is not None
        and not previous.finished
        and previous.window == window
        and (run_id is None or previous.run_id == run_id)
    )
    schedule, notes = _schedule_of_run(source, previous if resuming else None)
    # a crash may have left a bridge placement (a run alone reads its own informer, which
    # lists the policies here: the plan then reads the same cache, unless one was restored)
    restored = bridging.restore_marked(
        client, schedule, reads.find_policy if reads is not None and reads.private else None
    )
    sp = build_plan(
        client,
        schedule,
        window,
        trigger=previous.trigger if resuming and previous else None,
        reads=reads,
        team=team,
        cached_policies=not restored,
    )
    ready_field = ready_field_of(sp)
    if resuming and previous is not None:
        state = previous
    else:
        started = _start_new(client, sp, previous, run_id, clock, ready_field)
        if not isinstance(started, RunState):
            return started
        state = started
    return PreparedRun(
        sp,
        state,
        journal,
        resuming,
        notes,
        client,
        clock,
        emitter,
        ready_field,
        budget or OwnBudget(),
        reads,
        policy_settle,
        interlude,
        policy_cache=not restored,
    )


def _schedule_of_run(
    source: ScheduleSource, previous: RunState | None
) -> tuple[TidalSchedule, list[str]]:
    """The schedule a run goes by: a resumed run's own snapshot when the file was edited
    since it started (with a note saying so), else the file's."""
    schedule = schedule_of(source)
    if (
        previous is None
        or previous.schedule_snapshot is None
        or previous.schedule_hash == schedule_hash(schedule)
    ):
        return schedule, []
    return restore_schedule(previous.schedule_snapshot), [
        f"schedule {schedule.name} was edited during the run: this run finishes against the "
        f"version it started with ({previous.schedule_hash}); the edit applies from the next "
        "start"
    ]


def _start_new(
    client: KarmadaClient,
    sp: SwitchPlan,
    previous: RunState | None,
    run_id: str | None,
    clock: Clock,
    ready_field: str | None,
) -> RunState | Refusal | NoOp:
    """A new run's state, planned waves and all; or its refusal, or a no-op."""
    schedule, window = sp.schedule, sp.window.name
    state = RunState(
        schedule.name,
        window,
        run_id or new_run_id(clock),
        trigger=sp.trigger,
        journal_token=previous.journal_token if previous else None,
    )
    state.policies = carried_over(previous, window)
    state.schedule_hash, state.schedule_snapshot = schedule_hash(schedule), snapshot_of(schedule)
    state.strategy = sp.plan.strategy
    problems = refusal_problems(sp, ready_field)
    if problems:
        return Refusal(PlanRefused(sp, problems))
    # in force already, unless another run left overrides of this schedule behind (then
    # the run goes through its phases, writing nothing but their removal)
    if sp.noop and not surging.leftovers_exist(client, schedule.name):
        base = EventBase(schedule=schedule.name, window=window, run_id=state.run_id, wave=None)
        return NoOp(sp, base, clock.now().isoformat())
    state.started_at = iso_now(clock)
    state.waves = [WaveState(number, [w.key for w in wave]) for number, wave in sp.plan.numbered()]
    state.warnings = list(sp.warnings)
    return state


# Between two waves: (run id, index of the wave just done, the rollout's pause in seconds)
# -> None to go on, or why the run stops (tidal.daemon.interlude: the operator's controls).
Interlude = Callable[[str, int, float], str | None]


@dataclass
class PreparedRun:
    """A run ready to execute (new or resumed)."""

    plan: SwitchPlan
    state: RunState
    journal: Journal
    resuming: bool
    notes: list[str]  # warnings to report when the run (re)starts
    client: KarmadaClient
    clock: Clock
    emitter: Emitter
    ready_field: str | None
    budget: SurgeBudget = field(default_factory=OwnBudget)
    reads: SharedReads | None = None  # the daemon's shared informers (alone: none)
    policy_settle: float = 0.0  # seconds a policy must be unchanged before a run patches it
    interlude: Interlude | None = None  # between two waves (None: the rollout's pause)
    policy_cache: bool = True  # False: a policy was written before the plan (a restore)
    started: float = 0.0
    ctx: SwitchContext = field(init=False)

    def __post_init__(self) -> None:
        sp, state = self.plan, self.state
        surge = state.strategy is Strategy.SURGE
        self.ctx = SwitchContext(
            client=self.client,
            clock=self.clock,
            emitter=self.emitter,
            state=state,
            save=self.save,
            may_save=self.journal.may_save,
            strategy=strategy_for(state.trigger, surge=surge),
            floors=sp.floors,
            everyone=list(sp.selection.workloads),
            before={w.name: w.current for w in sp.selection.workloads},
            ready_field=self.ready_field,
            wave_timeout=sp.rollout.wave_timeout.total_seconds(),
            surges={w.name: w.surge() for w in sp.plan.workloads if w.surged} if surge else {},
            bridges={w.name: w.bridge_shares() for w in sp.plan.workloads if w.bridged}
            if surge
            else {},
            budget=self.budget,
            headroom_percent=sp.rollout.surge.headroom_percent,
            reads=self.reads,
            policy_cache=self.policy_cache,
            selectors={
                t.key: t.target_spec.get("resourceSelectors") for t in sp.selection.policies
            },
            raised_to={}
            if self.resuming or not surge
            else {n: room.raised_to for n, room in enumerate(sp.plan.rooms, start=1)},
        )

    def save(self) -> None:
        state = self.state
        try:
            self.journal.save(state)
        except LeaseLost as exc:
            raise FencedOut(f"run state of {state.schedule} not saved: {exc}") from exc
        except Conflict as exc:
            if exc.reason == "NotLeader":  # our own lease lapsed: no other writer is implied
                raise FencedOut(
                    f"run state of {state.schedule} not saved: this replica no "
                    "longer holds the lease; stopping"
                ) from exc
            raise FencedOut(
                f"run state of {state.schedule} was written by another writer; stopping"
            ) from exc

    def execute(self) -> RunRecord:
        state, ctx = self.state, self.ctx
        base = ctx.event_base(None)
        self.save()
        self.started = ctx.clock.monotonic()
        ctx.emitter.emit(
            RunStarted(
                **base,
                workloads=sum(len(w.workloads) for w in state.waves),
                waves=len(state.waves),
                trigger=state.trigger,
                resumed=self.resuming,
            )
        )
        for warning in state.warnings:
            ctx.emitter.emit(RunWarning(**base, code="selection", message=warning))
        for note in self.notes:
            ctx.emitter.emit(RunWarning(**base, code="schedule_edited", message=note))
        try:
            while state.phase is not Phase.DONE:
                self.move(PHASE_HANDLERS[state.phase](self))
        except LeaseLost as exc:  # nothing more may be written, not even the failure
            raise FencedOut(f"{state.schedule}: {exc}") from exc
        except KarmadaError as exc:
            self._api_failure(exc)
        ctx.emitter.emit(
            RunFinished(
                **base,
                result=state.result or RunResult.FAILED,
                reason="" if state.result is RunResult.SUCCEEDED else state.reason,
                duration_seconds=ctx.clock.monotonic() - self.started,
            )
        )
        return RunRecord.from_state(state)

    def move(self, phase: Phase) -> None:
        """Advance the state machine and journal the move."""
        self.state.advance(phase)
        if phase is Phase.DONE:
            self.state.finished_at = iso_now(self.ctx.clock)
        self.save()

    def fail(self, reason: str, *, halt: bool = False) -> Phase:
        """A wave failed: roll back (onFailure: rollback, unless `halt`), or halt."""
        self.state.reason = reason
        if self.plan.rollout.on_failure == "rollback" and not halt:
            return Phase.ROLLBACK
        self.state.result = RunResult.FAILED
        # no trigger objects, nor surges (unless removing one would break a floor: then it
        # says so), nor bridges
        cleanup.clean_up(self.ctx, Stop.HALT)
        return Phase.DONE

    def _api_failure(self, exc: KarmadaError) -> None:
        state, ctx = self.state, self.ctx
        state.result, state.reason = RunResult.FAILED, f"API error: {exc}"
        in_flight = [w for w in state.waves if w.started_at and not w.result]
        for wave in in_flight:  # a failed wave, like any other (its metric and alert)
            wave.result, wave.reason = WaveResult.FAILED, state.reason
            wave.finished_at = iso_now(ctx.clock)
        state.advance(Phase.DONE)  # from any phase: an API error ends the run
        state.finished_at = iso_now(ctx.clock)
        self.save()
        cleanup.clean_up(ctx, Stop.API_ERROR)  # best effort: the next run finds what stays
        for wave in in_flight:
            ctx.emitter.emit(
                WaveFinished(
                    **ctx.event_base(wave.index),
                    result=WaveResult.FAILED,
                    reason=state.reason,
                    failure=FailureReason.API_ERROR,
                )
            )


# ---- the phase handlers: each does its phase's work and names the next phase ----


def _planned(run: PreparedRun) -> Phase:
    """Nothing of this run is written yet: remove overrides an earlier run left behind."""
    run.ctx.leftovers_kept = surging.remove_leftovers(run.ctx)
    return Phase.POLICIES


def _policies(run: PreparedRun) -> Phase:
    """Change the window's policies (with the temporary Lazy the strategy needs)."""
    ctx, state, sp = run.ctx, run.state, run.plan
    base = ctx.event_base(None)
    records = {r.key: r for r in state.policies}
    for target in sp.selection.policies:
        record = records.get(target.key) or policy_change.record_for(target)
        if target.key not in records:
            state.policies.append(record)
            records[target.key] = record
        if sp.lazy:  # the waves rely on Lazy: no template may still carry an older change
            let_detector_settle(
                ctx.client,
                target,
                clock=ctx.clock,
                emitter=ctx.emitter,
                settle_seconds=run.policy_settle,
                base=base,
            )
        written, action = policy_change.apply(
            ctx.client,
            target,
            record,
            policy_change.RunWrite(ctx.window, ctx.run_id, sp.lazy, run.save),
            cached=ctx.own_policy_cache(),
        )
        if written is not None and ctx.reads is not None:
            ctx.reads.wrote_policy(written)  # the drift check before wave 1 reads it there
        keep = bool(sp.selection.excluded_claimed.get(target.key)) and ctx.strategy.marks_lazy
        record.keep_lazy(keep)
        run.save()
        ctx.emitter.emit(
            PolicyChanged(
                **base,
                kind=target.kind,
                policy=policy_ref(target.namespace, target.name),
                action=action,
                lazy_added=record.lazy.added,
            )
        )
        if record.lazy is LazyMark.KEPT:
            note = (
                f"{target.key} stays Lazy after the switch: it claims excluded "
                "templates that would otherwise move at once"
            )
            if note not in state.warnings:
                state.warnings.append(note)
    return Phase.WAVES


@dataclass(frozen=True)
class _WaveInputs:
    """What every wave of a run looks its workloads up in."""

    placements: dict[str, Placement | None]  # policy key -> the window's placement
    by_name: dict[str, Workload]
    planned_by_name: dict[str, PlannedWorkload]
    why_gone: dict[str, str]  # left out at planning: why
    api_versions: dict[str, str]  # kind -> apiVersion

    @classmethod
    def of(cls, sp: SwitchPlan) -> _WaveInputs:
        return cls(
            {t.key: Placement(t.target_placement) for t in sp.selection.policies},
            sp.by_name,
            {w.name: w for w in sp.plan.workloads},
            {s.workload: s.reason for s in sp.selection.skipped},
            {w.key.kind: w.key.api_version for w in sp.selection.workloads},
        )


def _waves(run: PreparedRun) -> Phase:
    """Each wave not yet succeeded, in order: checks, trigger, gates."""
    inputs = _WaveInputs.of(run.plan)
    waves = run.state.waves
    clean = 0  # waves in a row that succeeded in this process (tidal.engine.pacing)
    for i, wave in enumerate(waves):
        if wave.result is WaveResult.SUCCEEDED:
            continue
        ended = _one_wave(run, wave, inputs)
        if isinstance(ended, Phase):
            return ended
        clean += 1
        if i < len(waves) - 1:
            pause = pacing.pause_after(
                run.ctx,
                run.plan.rollout.pause_between_waves.total_seconds(),
                clean,
                ended.settled_at,
            )
            if run.interlude is None:
                run.ctx.clock.sleep(pause)
            elif stop := run.interlude(run.state.run_id, wave.index, pause):
                return run.fail(stop)  # an operator's abort: rolled back or halted (onFailure)
    return Phase.FINISHING


def _one_wave(run: PreparedRun, wave: WaveState, inputs: _WaveInputs) -> Phase | WaveOutcome:
    """Run one wave to its end (journalled, reported); the run's next phase if it failed,
    else its outcome."""
    ctx = run.ctx
    clock, emitter = ctx.clock, ctx.emitter
    if wave.started_at is None:
        wave.started_at = iso_now(clock)
    run.save()
    started = clock.monotonic()
    names = [str(key) for key in wave.workloads]
    workloads = [inputs.by_name[n] for n in names if n in inputs.by_name]
    for name in names:  # journalled, gone since (a resume): deleted or no longer selected
        if name not in inputs.by_name and name not in ctx.skipped:
            leave_out(
                ctx,
                wave.index,
                name,
                inputs.why_gone.get(name) or gone_reason(ctx, name, inputs.api_versions),
            )
    planned = [inputs.planned_by_name[n] for n in names if n in inputs.planned_by_name]
    # the policies it wrote read afresh, the Clusters from the run's informers (a run alone's
    # or the daemon's), which list afresh while their watch is not open
    reads = ctx.reads
    outcome = wave_checks.before_wave(
        ctx.client,
        run.state.policies,
        planned,
        None if reads is None else reads.list_clusters,
    ) or run_wave(
        ctx,
        wave,
        workloads,
        placements=inputs.placements,
        destinations=wave_checks.destinations(planned),
    )
    wave.finished_at = iso_now(clock)
    wbase = ctx.event_base(wave.index)
    if not outcome.ok:
        wave.result, wave.reason = WaveResult.FAILED, outcome.reason
        run.save()
        emitter.emit(
            WaveFinished(
                **wbase,
                result=WaveResult.FAILED,
                reason=outcome.reason,
                failure=outcome.failure,
                duration_seconds=clock.monotonic() - started,
            )
        )
        return run.fail(outcome.reason, halt=outcome.failure is FailureReason.POLICY_DRIFT)
    wave.result = WaveResult.SUCCEEDED
    run.save()
    emitter.emit(
        WaveFinished(
            **wbase, result=WaveResult.SUCCEEDED, duration_seconds=clock.monotonic() - started
        )
    )
    return outcome


def _finishing(run: PreparedRun) -> Phase:
    """Lift the temporary Lazy, mark the policies completed, remove the rebalancers."""
    ctx = run.ctx
    for record in run.state.policies:
        action = patiently(
            ctx.client,
            ctx.clock,
            ctx.wave_timeout,
            functools.partial(
                policy_change.finish,
                ctx.client,
                record,
                run_id=ctx.run_id,
                save=run.save,
                cached=ctx.own_policy_cache(),
            ),
        )
        if action is PolicyAction.LAZY_RESTORED:
            ctx.emitter.emit(
                PolicyChanged(
                    **ctx.event_base(None),
                    kind=record.kind,
                    policy=policy_ref(record.namespace, record.name),
                    action=action,
                )
            )
    surging.release_parked(ctx)  # the overrides of parked waves (an error fails the run)
    cleanup.clean_up(ctx, Stop.FINISHED)  # the rebalancers; what else is left, if anything
    if ctx.leftovers_kept != 0:  # kept at the start (or not known: a resume) may go now
        surging.remove_leftovers(ctx)
    run.state.result = RunResult.SUCCEEDED
    return Phase.DONE


def _rollback(run: PreparedRun) -> Phase:
    """Restore the policies and move the switched waves back."""
    state = run.state
    # forward surges and bridges go before moving back (a bridge placement left on a policy
    # would read as a hand edit)
    cleanup.clean_up(run.ctx, Stop.ROLLBACK_STARTS)
    targets: dict[str, Placement | None] = {
        t.key: Placement(t.target_placement) for t in run.plan.selection.policies
    }
    ok, why = roll_back(run.ctx, run.plan.by_name, targets)
    state.result = RunResult.ROLLED_BACK if ok else RunResult.FAILED
    if not ok:
        state.reason = why
    # no trigger objects either; a failed rollback keeps what holds a floor, as a halt does
    cleanup.clean_up(run.ctx, Stop.ROLLED_BACK if ok else Stop.ROLLBACK_FAILED)
    return Phase.DONE


PHASE_HANDLERS: Final[dict[Phase, Callable[[PreparedRun], Phase]]] = {
    Phase.PLANNED: _planned,
    Phase.POLICIES: _policies,
    Phase.WAVES: _waves,
    Phase.FINISHING: _finishing,
    Phase.ROLLBACK: _rollback,
}
