"""One switch, start to finish: plan, preflight, change the policies, run the waves, finish
or fail (halt / rollback), and return the run record. The journal is saved before every
side effect; a Conflict there means another writer took over: FencedOut, stop at once."""

from __future__ import annotations

import secrets
from typing import Any

from tidal.domain.clock import Clock
from tidal.domain.schedule import TidalSchedule
from tidal.engine import policy_change, wave_checks
from tidal.engine.events import (
    Emitter,
    EventBase,
    OnEvent,
    PolicyChanged,
    RunFinished,
    RunStarted,
    RunWarning,
    WaveFinished,
    policy_ref,
)
from tidal.engine.journal import FencedOut, Journal, PolicyRecord, RunState, WaveState
from tidal.engine.planning import SwitchPlan, build_plan
from tidal.engine.preflight import preflight, ready_field_of, unusable_floor_clusters
from tidal.engine.record import RunRecord
from tidal.engine.rollback import roll_back
from tidal.engine.snapshot import restore as restore_schedule
from tidal.engine.snapshot import schedule_hash, snapshot_of
from tidal.engine.triggers import normalize_placement
from tidal.engine.wave import SwitchContext, iso_now, run_wave
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import Conflict, KarmadaError, LeaseLost
from tidal.karmada.rebalancers import delete_rebalancer


class PlanRefused(Exception):
    """The plan would break a floor (or cannot be scheduled): nothing was written."""

    def __init__(self, plan: SwitchPlan, problems: list[str]) -> None:
        more = f"; ... and {len(problems) - 5} more" if len(problems) > 5 else ""
        super().__init__("; ".join(problems[:5]) + more)
        self.plan = plan
        self.problems = problems


def new_run_id(clock: Clock) -> str:
    return clock.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _schedule_of(loaded: Any) -> TidalSchedule:
    schedule: TidalSchedule = loaded.schedule if hasattr(loaded, "schedule") else loaded
    return schedule


def plan_problems(sp: SwitchPlan) -> list[str]:
    """Every floor violation (once, at the first step it shows) and every plan problem;
    breaches in a floor cluster that is missing or not Ready are the preflight's root cause,
    not listed here."""
    seen: set[str] = set()
    problems = []
    unusable = unusable_floor_clusters(sp)
    for label, v in sp.plan.violations:
        if v.cluster in unusable:
            continue
        if str(v) not in seen:
            seen.add(str(v))
            problems.append(f"{label}: {v}")
    problems.extend(sp.plan.problems)
    problems.extend(sp.refusals)
    return problems


def run_switch(client: KarmadaClient, loaded: Any, window_name: str, *, clock: Clock,
               journal: Journal, on_event: OnEvent | None = None, run_id: str | None = None,
               resume: RunState | None = None, logger: Any = None) -> RunRecord:
    """Carry out one window now (or resume a half-finished run of it)."""
    schedule = _schedule_of(loaded)
    emitter = Emitter(on_event, logger)
    previous = resume if resume is not None else journal.load(schedule.name)
    resuming = previous is not None and not previous.finished and \
        previous.window == window_name and (run_id is None or previous.run_id == run_id)
    edited_note = ""
    if resuming and previous is not None and previous.schedule_snapshot is not None and \
            previous.schedule_hash != schedule_hash(schedule):
        schedule = restore_schedule(previous.schedule_snapshot)
        edited_note = (f"schedule {schedule.name} was edited during the run: this run "
                       f"finishes against the version it started with "
                       f"({previous.schedule_hash}); the edit applies from the next start")
    sp = build_plan(client, schedule, window_name,
                    trigger=previous.trigger if resuming and previous else None)
    if resuming and previous is not None:
        state = previous
    else:
        state = RunState(schedule.name, window_name, run_id or new_run_id(clock),
                         trigger=sp.trigger,
                         journal_token=previous.journal_token if previous else None)
        state.policies = carried_over(previous, window_name)
        state.schedule_hash, state.schedule_snapshot = \
            schedule_hash(schedule), snapshot_of(schedule)
    base = EventBase(schedule=schedule.name, window=window_name, run_id=state.run_id, wave=None)
    ready_field = ready_field_of(sp)
    if not resuming:
        problems = preflight(sp, ready_field).problems + plan_problems(sp)  # root causes first
        if problems:
            raise PlanRefused(sp, problems)
        if sp.noop:
            started = clock.now().isoformat()
            emitter.emit(RunStarted(**base, workloads=0, waves=0,
                                    trigger=sp.trigger))
            emitter.emit(RunFinished(**base, result="succeeded",
                                     reason="already in force", noop=True))
            return RunRecord(schedule.name, window_name, state.run_id, "succeeded", started,
                             clock.now().isoformat(), [], list(sp.warnings), "already in force",
                             noop=True)
        state.started_at = iso_now(clock)
        state.waves = [WaveState(i + 1, names) for i, names in enumerate(sp.wave_names())]
        state.warnings = list(sp.warnings)

    def save() -> None:
        try:
            journal.save(state)
        except LeaseLost as exc:
            raise FencedOut(f"run state of {schedule.name} not saved: {exc}") from exc
        except Conflict as exc:
            if exc.reason == "NotLeader":  # our own lease lapsed: no other writer is implied
                raise FencedOut(f"run state of {schedule.name} not saved: this replica no "
                                "longer holds the lease; stopping") from exc
            raise FencedOut(f"run state of {schedule.name} was written by another writer; "
                            "stopping") from exc

    rollout = sp.rollout
    ctx = SwitchContext(
        client=client, schedule=schedule.name, window=window_name, run_id=state.run_id,
        clock=clock, emitter=emitter, state=state, save=save, trigger=state.trigger,
        floors=sp.floors, everyone=list(sp.selection.workloads),
        before={w.name: w.current for w in sp.selection.workloads},
        ready_field=ready_field, wave_timeout=rollout.wave_timeout.total_seconds())
    save()
    t0 = clock.monotonic()
    emitter.emit(RunStarted(**base, workloads=sum(len(w.workloads) for w in state.waves),
                            waves=len(state.waves), trigger=state.trigger, resumed=resuming))
    for warning in state.warnings:
        emitter.emit(RunWarning(**base, code="selection", message=warning))
    if edited_note:
        emitter.emit(RunWarning(**base, code="schedule_edited", message=edited_note))
    try:
        return _run(ctx, sp, t0)
    except LeaseLost as exc:  # nothing more may be written, not even the failure
        raise FencedOut(f"{schedule.name}: {exc}") from exc
    except KarmadaError as exc:
        state.result, state.reason = "failed", f"API error: {exc}"
        in_flight = [w for w in state.waves if w.started_at and not w.result]
        for wave in in_flight:  # a failed wave, like any other (its metric and alert)
            wave.result, wave.reason, wave.finished_at = "failed", state.reason, iso_now(clock)
        state.phase, state.finished_at = "done", iso_now(clock)
        save()
        for wave in in_flight:
            emitter.emit(WaveFinished(**ctx.event_base(wave.index), result="failed",
                                      reason=state.reason, failure="api_error"))
        emitter.emit(RunFinished(**base, result="failed", reason=state.reason,
                                 duration_seconds=clock.monotonic() - t0))
        return RunRecord.from_state(state)


def carried_over(previous: RunState | None, window: str) -> list[PolicyRecord]:
    """After a halted run of the same window, its policy records (pre-images, Lazy added and
    the original activationPreference) stay valid: the new run restores and rolls back from
    them, not from the half-switched policy it finds. (A Lazy a run of another window left is
    found from its marks on the policy, by whichever window names that policy next.)"""
    if previous is None or previous.result != "failed" or previous.window != window:
        return []
    out = []
    for record in previous.policies:
        if not record.applied or record.restored:
            continue
        copy_ = PolicyRecord.from_dict(record.to_dict())
        copy_.lazy_restored = False
        out.append(copy_)
    return out


def _run(ctx: SwitchContext, sp: SwitchPlan, t0: float) -> RunRecord:
    state, clock, emitter = ctx.state, ctx.clock, ctx.emitter
    base = ctx.event_base(None)
    if state.phase in ("planned", "policies"):
        state.phase = "policies"
        records = {r.key: r for r in state.policies}
        for target in sp.selection.policies:
            record = records.get(target.key) or policy_change.record_for(target)
            if target.key not in records:
                state.policies.append(record)
                records[target.key] = record
            record.keep_lazy = bool(sp.selection.excluded_claimed.get(target.key)) and \
                ctx.trigger in ("touch", "both")
            _, action = policy_change.apply(ctx.client, target, record, window=ctx.window,
                                            run_id=ctx.run_id, lazy=sp.lazy, save=ctx.save)
            ctx.save()
            emitter.emit(PolicyChanged(**base, kind=target.kind,
                                       policy=policy_ref(target.namespace, target.name),
                                       action=action, lazy_added=record.lazy_added))
            if record.keep_lazy and record.lazy_added:
                note = (f"{target.key} stays Lazy after the switch: it claims excluded "
                        "templates that would otherwise move at once")
                if note not in state.warnings:
                    state.warnings.append(note)
        state.phase = "waves"
        ctx.save()
    placements = {t.key: normalize_placement(t.target_placement) for t in sp.selection.policies}
    by_name = sp.by_name
    planned_by_name = {w.name: w for w in sp.plan.workloads}
    if state.phase == "waves":
        for i, wave in enumerate(state.waves):
            if wave.result == "succeeded":
                continue
            if wave.started_at is None:
                wave.started_at = iso_now(clock)
            ctx.save()
            started = clock.monotonic()
            workloads = [by_name[n] for n in wave.workloads if n in by_name]
            planned = [planned_by_name[n] for n in wave.workloads if n in planned_by_name]
            outcome = wave_checks.before_wave(ctx.client, state.policies, planned) or \
                run_wave(ctx, wave, workloads, placements=placements)
            wave.finished_at = iso_now(clock)
            wbase = ctx.event_base(wave.index)
            if not outcome.ok:
                wave.result, wave.reason = "failed", outcome.reason
                ctx.save()
                emitter.emit(WaveFinished(**wbase, result="failed",
                                          reason=outcome.reason, failure=outcome.failure,
                                          duration_seconds=clock.monotonic() - started))
                return _fail(ctx, sp, outcome.reason, t0,
                             halt=outcome.failure == wave_checks.POLICY_DRIFT)
            wave.result = "succeeded"
            ctx.save()
            emitter.emit(WaveFinished(**wbase, result="succeeded",
                                      duration_seconds=clock.monotonic() - started))
            if i < len(state.waves) - 1:
                clock.sleep(sp.rollout.pause_between_waves.total_seconds())
        state.phase = "finishing"
        ctx.save()
    if state.phase == "finishing":
        for record in state.policies:
            action = policy_change.finish(ctx.client, record, run_id=ctx.run_id, save=ctx.save)
            if action == "lazy_restored":
                emitter.emit(PolicyChanged(**base, kind=record.kind,
                                           policy=policy_ref(record.namespace, record.name),
                                           action=action))
        _remove_rebalancers(ctx)
        state.result, state.phase, state.finished_at = "succeeded", "done", iso_now(clock)
        ctx.save()
    if state.phase == "rollback":
        return _fail(ctx, sp, state.reason, t0)
    emitter.emit(RunFinished(**base, result=state.result or "succeeded",
                             duration_seconds=clock.monotonic() - t0))
    return RunRecord.from_state(state)


def _remove_rebalancers(ctx: SwitchContext) -> None:
    """The run's WorkloadRebalancers are temporary: delete them (their TTL is the fallback)."""
    for wave in ctx.state.waves:
        for name in wave.rebalancers:
            try:
                delete_rebalancer(ctx.client, name)
            except KarmadaError as exc:  # best effort: the TTL removes it anyway
                ctx.emitter.emit(RunWarning(**ctx.event_base(wave.index),
                                            code="cleanup",
                                            message=f"WorkloadRebalancer {name}: {exc}"))


def _fail(ctx: SwitchContext, sp: SwitchPlan, reason: str, t0: float, *,
          halt: bool = False) -> RunRecord:
    """Halt or roll back; `halt` forces a halt (a rollback would overwrite a hand edit)."""
    state = ctx.state
    state.reason = reason
    if sp.rollout.on_failure == "rollback" and not halt:
        ok, why = roll_back(ctx, sp.by_name)
        state.result = "rolledBack" if ok else "failed"
        if not ok:
            state.reason = why
    else:
        state.result = "failed"
    _remove_rebalancers(ctx)  # a halted or rolled back run leaves no trigger objects either
    state.phase, state.finished_at = "done", iso_now(ctx.clock)
    ctx.save()
    ctx.emitter.emit(RunFinished(**ctx.event_base(None), result=state.result,
                                 reason=state.reason,
                                 duration_seconds=ctx.clock.monotonic() - t0))
    return RunRecord.from_state(state)
