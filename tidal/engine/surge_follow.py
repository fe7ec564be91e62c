"""Surge that follows the user: a workload scaled while its wave's overrides are in force
(by hand or by an autoscaler) has its override lifted at once, so the override never caps
the new scale (spec 10 pinned at 5 in its destination) nor holds more than it (9 against 5);
the workload then moves with its wave without make-before-break. Lifted rather than re-fitted:
a re-fitted scale-up would chase capacity the wave never reserved (a scale to 1000 asked its
destination for 1000). Floors count the spec at the time of the check
(tidal.engine.gates.live_replicas; the halt's keep-or-remove check too), and a halt never keeps
the override of a rescaled workload.

A parked wave (its overrides restating the split Karmada assigned after its move,
tidal.engine.surging) is followed the same way, and also lifted when Karmada assigns it
otherwise since (a failover, a policy edit): a parked override must never hold what the
scheduler no longer assigns.

Called from every wait of a surging wave (surged replicas, the move's gates, the applied
split), for that wave and any raised ahead or parked, so a change is followed within one pass of the
watch (at most 5 s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tidal.engine.events import RunWarning
from tidal.engine.journal import SurgeRecord, WaveState
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction, SurgeStep
from tidal.engine.surge_overrides import sync
from tidal.karmada.objects import Obj
from tidal.karmada.views import BindingView

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext

IN_FORCE = (SurgeStep.SURGED, SurgeStep.MOVING, SurgeStep.PARKED)


def follow_scale(ctx: SwitchContext, cache: Mapping[str, Obj | None]) -> None:
    """`lift_rescaled` for every wave of the run: the one in flight and any raised ahead of
    its turn (tidal.engine.pacing), whose overrides would otherwise cap a user's scale until
    that wave's own turn. Waves whose surges are not in force are passed over at once."""
    by_name: dict[str, Workload] | None = None
    for wave in ctx.state.waves:
        if _in_force(wave):
            by_name = by_name or {w.name: w for w in ctx.everyone}
            lift_rescaled(ctx, wave, cache, by_name)


def _in_force(wave: WaveState) -> list[tuple[Direction, SurgeRecord]]:
    return [
        (leg.direction, record)
        for leg in wave.legs
        if (record := leg.surge) is not None and record.step in IN_FORCE
    ]


def lift_rescaled(
    ctx: SwitchContext,
    wave: WaveState,
    cache: Mapping[str, Obj | None],
    by_name: Mapping[str, Workload] | None = None,
) -> None:
    """Delete the override of every workload of the wave whose spec.replicas (its binding's,
    in `cache`) is no longer the one the run planned; journalled first (its targets emptied,
    the record's `rescaled`), so a resume writes it no more. `by_name`: the run's workloads
    by name, when the caller has them."""
    in_force = _in_force(wave)
    if not in_force:
        return
    by_name = by_name or {w.name: w for w in ctx.everyone}
    for direction, record in in_force:
        for name in sorted(record.targets):
            w = by_name.get(name)
            binding = cache.get(w.binding_key) if w is not None else None
            if w is None or binding is None or not record.targets[name]:
                continue
            if _seen(ctx, name, binding, record.step):
                continue  # looked at already, unchanged since
            view = BindingView.of(binding)
            now = view.replicas
            if now is not None and now != w.replicas:
                _lift(ctx, wave, record, w, direction, _scaled(w, now), rescaled=now)
            elif record.step is SurgeStep.PARKED and _reassigned(
                record.targets[name], view.assignment()
            ):
                _lift(ctx, wave, record, w, direction, _moved(w))


def _seen(ctx: SwitchContext, name: str, binding: Obj, step: SurgeStep) -> bool:
    """Whether `name`'s binding was looked at in this step already, unchanged since (its
    resourceVersion); notes this look otherwise."""
    version = str((binding.get("metadata") or {}).get("resourceVersion") or "")
    if version and ctx.followed.get(name) == (version, step):
        return True
    ctx.followed[name] = (version, step)
    return False


def _reassigned(split: Mapping[str, int], assigned: Mapping[str, int]) -> bool:
    """A parked override no longer restates the assignment (Karmada rescheduled it since)."""
    return any(assigned.get(c, 0) != n for c, n in split.items())


def _scaled(w: Workload, now: int) -> str:
    return (
        f"{w.name} was scaled from {w.replicas} to {now} replicas during the surge: "
        "its override is lifted ({where}); it moves without one"
    )


def _moved(w: Workload) -> str:
    return (
        f"{w.name} was rescheduled after its wave moved it: its override, which restated the "
        "old assignment, is lifted ({where})"
    )


def _lift(
    ctx: SwitchContext,
    wave: WaveState,
    record: SurgeRecord,
    w: Workload,
    direction: Direction,
    message: str,
    *,
    rescaled: int | None = None,
) -> None:
    if rescaled is not None:
        record.rescaled[w.name] = rescaled
    record.targets[w.name] = {}
    ctx.save()
    left = set(record.overrides)
    sync(ctx, direction)
    # a group other waves still need was changed, not deleted
    gone = sorted(ref for ref in left - set(record.overrides) if ref not in ctx.overrides_written)
    where = f"{', '.join(gone)} deleted" if gone else "no override selects it any more"
    ctx.emitter.emit(
        RunWarning(
            **ctx.event_base(wave.index),
            code="surge_rescaled",
            message=message.format(where=where),
        )
    )
