"""Rollback: restore the policies' previous spec, then move the switched waves back, last
wave first, with the same triggers and under the same floors."""

from __future__ import annotations

from tidal.engine import policy_change, wave_checks
from tidal.engine.events import PolicyChanged, WaveFinished, policy_ref
from tidal.engine.journal import PolicyRecord
from tidal.engine.resolve import Workload
from tidal.engine.states import ChangeKind, Direction, PolicyAction, WaveResult
from tidal.engine.triggers import normalize_placement
from tidal.engine.wave import SwitchContext, run_wave


def previous_placement(record: PolicyRecord) -> object:
    image = record.pre_image or {}
    spec = image.get("spec") if record.action is ChangeKind.SWAP else image
    return normalize_placement((spec or {}).get("placement"))


def roll_back(ctx: SwitchContext, by_name: dict[str, Workload]) -> tuple[bool, str]:
    """Undo the switch; (completely rolled back?, reason if not). The run is in its
    rollback phase."""
    state = ctx.state
    edited = wave_checks.edited_policies(ctx.client, state.policies, also_ours=True)
    if edited:  # restoring would overwrite a hand edit: leave everything as it is
        return False, f"not rolled back: {wave_checks.drift_reason(edited)}"
    lazy = ctx.strategy.marks_lazy
    placements: dict[str, object] = {}
    for record in reversed(state.policies):
        action = policy_change.rollback(ctx.client, record, run_id=ctx.run_id, lazy=lazy,
                                          save=ctx.save)
        ctx.save()
        placements[record.key] = previous_placement(record)
        if action is not PolicyAction.UNCHANGED:
            ctx.emitter.emit(PolicyChanged(**ctx.event_base(None),
                                           kind=record.kind,
                                           policy=policy_ref(record.namespace,
                                                       record.swap_from or record.name),
                                           action=PolicyAction.RESTORE))
    # a wave whose bridge touched templates moved those (to the bridge): they go back too
    undo = [w for w in state.waves if w.result in (WaveResult.SUCCEEDED, WaveResult.FAILED)
            and (w.triggered or w.rebalancers or (w.bridge is not None and w.bridge.touched))]
    # A policy this run did not change (it only adopted an earlier run's Lazy) has no earlier
    # placement to go back to: its workloads already follow it, nothing of theirs is undone.
    changed = {r.key for r in state.policies if r.applied}
    for wave in reversed(undo):
        names = [str(key) for key in wave.workloads]
        workloads = [by_name[n] for n in names if n in by_name and by_name[n].policy in changed]
        started = ctx.clock.monotonic()
        outcome = run_wave(ctx, wave, workloads,
                           placements={w.policy: placements.get(w.policy) for w in workloads},
                           direction=Direction.BACK) if workloads else None
        base = ctx.event_base(wave.index)
        if outcome is not None and not outcome.ok:
            wave.reason = f"rollback failed: {outcome.reason}"
            ctx.save()
            ctx.emitter.emit(WaveFinished(**base, result=WaveResult.FAILED,
                                          reason=wave.reason, failure=outcome.failure,
                                          duration_seconds=ctx.clock.monotonic() - started,
                                          rollback=True))
            return False, wave.reason
        assert wave.result is not None
        wave.result = wave.result.after_rollback()
        wave.finished_at = ctx.now_iso()
        ctx.save()
        ctx.emitter.emit(WaveFinished(**base, result=WaveResult.ROLLED_BACK,
                                      reason=wave.reason,
                                      duration_seconds=ctx.clock.monotonic() - started,
                                      rollback=True))
    for record in state.policies:
        # also a Lazy this run adopted from an earlier run it did not change the policy for
        if record.applied or record.lazy.added:
            policy_change.restore_activation_after_rollback(ctx.client, record, save=ctx.save)
    return True, ""
