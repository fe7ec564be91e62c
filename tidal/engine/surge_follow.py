"""Surge that follows the user: a workload scaled while its wave's overrides are in force
(by hand or by an autoscaler) has its override re-fitted to the new scale at once (each
cluster's surged replicas in proportion, rounded up), so the override never caps the new
scale (spec 10 pinned at 5 in its destination) nor holds more than it needs (9 against 5),
and the workload still moves make-before-break; when the run stops instead (a halt), the
override of a rescaled workload is lifted, never kept. Floors count the spec at the time of
the check (tidal.engine.gates.live_replicas; the halt's keep-or-remove check too). The room
the wave reserved is not re-counted: a scale-up takes its extra from what the clusters have
free.

Called from every wait of a surging wave (surged replicas, the move's gates, the applied
split), so a change is followed within one pass of the watch (at most 5 s)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tidal.engine.events import RunWarning
from tidal.engine.journal import SurgeRecord, WaveState
from tidal.engine.patience import patiently
from tidal.engine.resolve import Workload
from tidal.engine.states import SurgeStep
from tidal.karmada.objects import Obj
from tidal.karmada.overrides import (
    OverrideRef,
    Owner,
    ReplicaOverride,
    TemplateRef,
    apply_override,
    delete_override,
    override_name,
)
from tidal.karmada.views import BindingView

if TYPE_CHECKING:
    from tidal.engine.wave import SwitchContext

IN_FORCE = (SurgeStep.SURGED, SurgeStep.MOVING)


def override_of(ctx: SwitchContext, wave: WaveState, record: SurgeRecord, w: Workload,
                back: bool) -> ReplicaOverride:
    """Workload `w`'s override as the record sets it (named by its rank among the targets)."""
    owner = Owner(ctx.schedule, ctx.run_id, wave.index)
    index = sorted(record.targets).index(w.name)
    key = w.key
    return ReplicaOverride(override_name(owner, index, back=back), owner,
                           (TemplateRef(key.api_version, key.kind, key.name, key.namespace),),
                           dict(record.targets[w.name]))


def _scaled(targets: Mapping[str, int], before: int, now: int) -> dict[str, int]:
    return {c: min(now, math.ceil(n * now / before)) if before else n
            for c, n in targets.items()}


def refit_rescaled(ctx: SwitchContext, wave: WaveState, cache: Mapping[str, Obj | None], *,
                   lift: bool = False) -> None:
    """Re-fit (or with `lift`, delete) the override of every workload of the wave whose
    spec.replicas (its binding's, in `cache`) is no longer the one its targets were made for;
    journalled (the record's targets and `rescaled`) before the write."""
    by_name = {w.name: w for w in ctx.everyone}
    for back in (False, True):
        record = wave.surge_for(back)
        if record is None or record.step not in IN_FORCE:
            continue
        for name in sorted(record.targets):
            w = by_name.get(name)
            binding = cache.get(w.binding_key) if w is not None else None
            if w is None or binding is None or w.replicas is None:
                continue
            now, fitted = BindingView.of(binding).replicas, record.rescaled.get(name, w.replicas)
            if now is None or now == fitted or not record.targets[name]:
                continue
            _follow(ctx, wave, record, w, back, fitted, now, lift)


def _follow(ctx: SwitchContext, wave: WaveState, record: SurgeRecord, w: Workload,
            back: bool, fitted: int, now: int, lift: bool) -> None:
    override = override_of(ctx, wave, record, w, back)
    ref: OverrideRef = override.ref
    record.rescaled[w.name] = now
    if lift:
        record.targets[w.name] = {}
        ctx.save()
        patiently(ctx.client, ctx.clock, ctx.wave_timeout,
                  functools.partial(delete_override, ctx.client, ref))
        if str(ref) in record.overrides:
            record.overrides.remove(str(ref))
        what = "lifted"
    else:
        record.targets[w.name] = _scaled(record.targets[w.name], fitted, now)
        ctx.save()
        apply_override(ctx.client, override_of(ctx, wave, record, w, back))
        what = f"re-fitted to {record.targets[w.name]}"
    ctx.save()
    ctx.emitter.emit(RunWarning(
        **ctx.event_base(wave.index), code="surge_rescaled",
        message=f"{w.name} was scaled from {fitted} to {now} replicas during the surge: "
                f"its override {ref} is {what}"))



