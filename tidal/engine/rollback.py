"""Rollback: restore the policies' previous spec, then move the switched waves back, last
wave first, with the same triggers and under the same floors; then lift the temporary Lazy,
unless lifting it would move templates at once. What to do, and in which order, is the reverse
plan (tidal.engine.reverse_plan, built from the journal); this module carries it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tidal.domain.placement import Placement
from tidal.engine import gates, policy_change, wave_checks
from tidal.engine.events import PolicyChanged, RunWarning, WaveFinished, policy_ref
from tidal.engine.inflight import SwitchContext
from tidal.engine.journal import PolicyRecord, WaveState
from tidal.engine.resolve import Workload
from tidal.engine.reverse_plan import changed_policies, restore_order, reverse_plan, triggered
from tidal.engine.states import ChangeKind, Direction, LazyMark, PolicyAction, WaveResult
from tidal.engine.wave import run_wave
from tidal.karmada import policies as policies_api
from tidal.karmada.bindings import key_of
from tidal.karmada.client import Obj
from tidal.karmada.views import LAZY, BindingView, PolicyView


def previous_placement(record: PolicyRecord) -> Placement | None:
    image = record.pre_image or {}
    spec = image.get("spec") if record.action is ChangeKind.SWAP else image
    return Placement.of((spec or {}).get("placement"))


def roll_back(
    ctx: SwitchContext, by_name: dict[str, Workload], targets: Mapping[str, Placement | None]
) -> tuple[bool, str]:
    """Undo the switch; (completely rolled back?, reason if not). The run is in its
    rollback phase; `targets`: policy key -> the placement the run switched to."""
    state = ctx.state
    edited = wave_checks.edited_policies(ctx.client, state.policies, also_ours=True)
    if edited:  # restoring would overwrite a hand edit: leave everything as it is
        return False, f"not rolled back: {wave_checks.drift_reason(edited)}"
    ctx.recovering = _below_floors(ctx)
    records = {r.key: r for r in state.policies}
    placements = _restore_policies(ctx, [records[key] for key in restore_order(state)])
    stray = moved_outside_waves(ctx, by_name, changed_policies(state), targets, placements)
    plan = reverse_plan(state, stray, {name: w.policy for name, w in by_name.items()})
    waves = {w.index: w for w in state.waves}
    for undo in plan.waves:
        workloads = [by_name[name] for name in undo.workloads]
        failed = _undo_wave(ctx, waves[undo.wave], workloads, placements)
        if failed:
            return False, failed
    _lift_lazy(ctx, [records[key] for key in plan.lift])
    return True, ""


def _restore_policies(
    ctx: SwitchContext, order: Sequence[PolicyRecord]
) -> dict[str, Placement | None]:
    """Put each policy back, in `order`; policy key -> its previous placement."""
    placements: dict[str, Placement | None] = {}
    for record in order:
        action = policy_change.rollback(
            ctx.client, record, run_id=ctx.run_id, lazy=ctx.strategy.marks_lazy, save=ctx.save
        )
        ctx.save()
        placements[record.key] = previous_placement(record)
        if action is not PolicyAction.UNCHANGED:
            ctx.emitter.emit(
                PolicyChanged(
                    **ctx.event_base(None),
                    kind=record.kind,
                    policy=policy_ref(record.namespace, record.swap_from or record.name),
                    action=PolicyAction.RESTORE,
                )
            )
    return placements


def _undo_wave(
    ctx: SwitchContext,
    wave: WaveState,
    workloads: list[Workload],
    placements: Mapping[str, Placement | None],
) -> str:
    """Move one wave's workloads back under the floors; the failure reason, or ""."""
    started = ctx.clock.monotonic()
    outcome = (
        run_wave(
            ctx,
            wave,
            workloads,
            placements={w.policy: placements.get(w.policy) for w in workloads},
            direction=Direction.BACK,
        )
        if workloads
        else None
    )
    base = ctx.event_base(wave.index)
    if outcome is not None and not outcome.ok:
        wave.reason = f"rollback failed: {outcome.reason}"
        ctx.save()
        ctx.emitter.emit(
            WaveFinished(
                **base,
                result=WaveResult.FAILED,
                reason=wave.reason,
                failure=outcome.failure,
                duration_seconds=ctx.clock.monotonic() - started,
                rollback=True,
            )
        )
        return wave.reason
    if wave.result in (WaveResult.SUCCEEDED, WaveResult.FAILED):  # else never started
        wave.result = wave.result.after_rollback()
    wave.finished_at = ctx.now_iso()
    ctx.save()
    ctx.emitter.emit(
        WaveFinished(
            **base,
            result=WaveResult.ROLLED_BACK,
            reason=wave.reason,
            duration_seconds=ctx.clock.monotonic() - started,
            rollback=True,
        )
    )
    return ""


def _lift_lazy(ctx: SwitchContext, records: Sequence[PolicyRecord]) -> None:
    """Lift the temporary Lazy of each policy (also one this run adopted from an earlier run
    it did not change the policy for), unless lifting would move templates at once (then it is
    kept, with a warning)."""
    for record in records:
        held = held_by_lazy(ctx, record)
        if held:
            _keep_lazy(ctx, record, held)
            continue
        policy_change.restore_activation_after_rollback(ctx.client, record, save=ctx.save)
        if record.lazy.added:
            record.lazy = LazyMark.LIFTED
            ctx.save()


def held_by_lazy(ctx: SwitchContext, record: PolicyRecord) -> list[str]:
    """The run's workloads of this policy whose bindings do not carry the placement of the
    policy in force (an earlier run's unfinished waves, or Karmada re-placing a template a user
    changed meanwhile): lifting the policy's Lazy would reschedule them all at once, outside any
    wave and under no floor."""
    name = record.swap_from if record.action is ChangeKind.SWAP else record.name
    assert name is not None
    policy = policies_api.find_policy(ctx.client, record.kind, name, record.namespace)
    view = PolicyView.of(policy)
    if (
        policy is None
        or view.activation != LAZY
        or policy_change.original_activation(record) == LAZY
    ):
        return []  # lifting changes nothing
    placement = view.placement
    mine = [w for w in ctx.everyone if w.policy == record.key]
    now = _placements(ctx, mine)
    return [w.name for w in mine if w.name in now and now[w.name] != placement]


def moved_outside_waves(
    ctx: SwitchContext,
    by_name: Mapping[str, Workload],
    changed: set[str],
    targets: Mapping[str, Placement | None],
    previous: Mapping[str, Placement | None],
) -> set[str]:
    """Workloads of waves never triggered whose bindings carry the placement this run switched
    to all the same (a wave lists only templates that did not when the run was planned):
    Karmada applied the Lazy policy when a user changed their templates (a scale) during the
    run. The rollback moves them back in their waves, under the floors."""
    untriggered = {str(k) for w in ctx.state.waves if not triggered(w) for k in w.workloads}
    mine = [
        by_name[n]
        for n in sorted(untriggered)
        if n in by_name
        and by_name[n].policy in changed
        and targets.get(by_name[n].policy) is not None
        and targets.get(by_name[n].policy) != previous.get(by_name[n].policy)
    ]
    now = _placements(ctx, mine)
    return {w.name for w in mine if w.name in now and now[w.name] == targets[w.policy]}


def _below_floors(ctx: SwitchContext) -> set[str]:
    """The bindings of the run's workloads below a floor as the rollback begins (the breach
    that failed the run may still be healing, or only moving them back heals it): the rollback
    waves do not fail on them until each met its floors once. Said in a warning."""
    if not ctx.floors:
        return set()
    tracker = gates.GateTracker([], ctx.everyone, ctx.floors, ctx.before, ctx.ready_field)
    report = tracker.load(_bindings(ctx, ctx.everyone)).report()
    if not report.violations:
        return set()
    names = sorted({v.workload for v in report.violations})
    note = (
        f"{', '.join(names)} below their floors as the rollback began "
        f"({report.violations[0]}): the rollback goes on and holds them to their floors "
        "again once they met them"
    )
    _warn(ctx, "floor_recovering", note)
    return set(tracker.violations)


def _bindings(ctx: SwitchContext, workloads: Sequence[Workload]) -> dict[str, Obj]:
    """Binding key -> the binding now, for the namespaces of `workloads`."""
    bindings: dict[str, Obj] = {}
    for namespace in sorted({w.key.namespace for w in workloads}):
        items = ctx.list_bindings(namespace or None, cluster_scoped=not namespace)
        bindings.update({key_of(b): b for b in items})
    return bindings


def _placements(ctx: SwitchContext, workloads: Sequence[Workload]) -> dict[str, Placement | None]:
    """Workload name -> the placement its binding carries now."""
    bindings = _bindings(ctx, workloads)
    return {
        w.name: BindingView.of(bindings[w.binding_key]).placement
        for w in workloads
        if w.binding_key in bindings
    }


def _keep_lazy(ctx: SwitchContext, record: PolicyRecord, held: list[str]) -> None:
    """Leave the Lazy on, with its marks: the next run of a window naming the policy moves
    those templates in waves and lifts it (or `tidal status` shows it held until then)."""
    shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
    note = (
        f"{record.key} stays Lazy after the rollback: lifting it would move {shown} "
        "at once, outside any wave (they do not follow the policy's placement)"
    )
    _warn(ctx, "lazy_kept", note)


def _warn(ctx: SwitchContext, code: str, note: str) -> None:
    """A warning of the rollback: kept once in the run's warnings (journalled), and said."""
    if note not in ctx.state.warnings:
        ctx.state.warnings.append(note)
        ctx.save()
    ctx.emitter.emit(RunWarning(**ctx.event_base(None), code=code, message=note))
