"""Run one wave: its strategy's step list (tidal.engine.strategies) built into steps
(tidal.engine.wave_steps) and handed to the kernel's runner (tidal.engine.runner), which
advances them until the last is done or one fails. Used for forward waves and for rollback
waves."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tidal.domain.placement import Placement
from tidal.domain.waves import WorkloadKey
from tidal.engine.destinations import DestinationHealth
from tidal.engine.events import WaveStarted
from tidal.engine.gating import missing
from tidal.engine.inflight import SwitchContext, WaveInFlight
from tidal.engine.journal import WaveState
from tidal.engine.outcome import WaveOutcome
from tidal.engine.resolve import Workload
from tidal.engine.runner import run_steps
from tidal.engine.states import Direction
from tidal.engine.wave_steps import build


def _namespace_of(workloads: Sequence[Workload]) -> tuple[str | None, bool]:
    namespaces = {w.key.namespace for w in workloads}
    if namespaces == {""}:
        return None, True
    if len(namespaces) == 1:
        return next(iter(namespaces)), False
    return None, False


def gone_reason(ctx: SwitchContext, name: str, api_versions: Mapping[str, str]) -> str:
    """Why a journalled workload is not in a resumed run's selection: `deleted`, or
    `not_selected` when its template is still there (its labels changed meanwhile);
    `api_versions`: kind -> apiVersion, from the templates still selected."""
    key = WorkloadKey.parse(name)
    api_version = api_versions.get(key.kind)
    if api_version is None or missing(ctx, api_version, key):
        return "deleted"  # (no template of its kind is left to learn its API version from)
    return "not_selected"


def run_wave(
    ctx: SwitchContext,
    wave: WaveState,
    workloads: Sequence[Workload],
    *,
    placements: Mapping[str, Placement | None],
    direction: Direction = Direction.FORWARD,
    destinations: Collection[str] = (),
) -> WaveOutcome:
    """Trigger the wave's workloads with the run's strategy and gate them. `placements`:
    policy key -> target placement (what a touched binding must carry);
    `destinations`: the clusters it moves replicas into, which must stay Ready to its end
    (tidal.engine.destinations)."""
    live = [w for w in workloads if w.name not in ctx.skipped]
    ctx.emitter.emit(
        WaveStarted(
            **ctx.event_base(wave.index),
            workloads=tuple(w.name for w in live),
            trigger=ctx.trigger,
            rollback=direction.rollback,
        )
    )
    namespace, cluster_scoped = _namespace_of(ctx.everyone or live)
    # every binding the wave reads (its gates, floors, surges, bridges, rebalances): the
    # run's workloads and the wave's; the watch keeps and wakes for nothing else
    keys = {w.binding_key for w in ctx.everyone or live} | {w.binding_key for w in live}
    watch = ctx.binding_watch(namespace, cluster_scoped, keys=keys)
    watch.start()
    run = WaveInFlight(
        ctx,
        wave,
        live,
        placements,
        watch,
        direction,
        DestinationHealth(ctx, wave.index, destinations),
    )
    return run_steps(run, build(ctx.strategy.steps()))
