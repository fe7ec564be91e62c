"""The room a make-before-break wave leases from the run's SurgeBudget: one hold per wave and
direction, for its bridge and its surge together (tidal.engine.bridging, .surging).

One hold, asked for before either step writes anything: a wave that held its bridge's room
while it waited for its surge's could wait forever on a shared budget, each of two such waves
holding what the other needs. The wave says when all of its extra replicas run (`running`) and
gives the room back once neither step holds any (`release_room`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, Protocol

from tidal.domain.plan import Amounts
from tidal.domain.prediction import ClusterFacts
from tidal.domain.surge import add, describe, usable
from tidal.engine.budget import Growth
from tidal.engine.journal import WaveLeg, WaveState
from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import BridgeStep, FailureReason, SurgeStep
from tidal.engine.steps import Pending, WakeOn
from tidal.karmada.member_capacity import merged
from tidal.karmada.objects import Obj
from tidal.karmada.views import ClusterView

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext, WaveInFlight


class Leasing(Protocol):
    """A journalled step that needs room (a BridgeRecord or a SurgeRecord)."""

    @property
    def need(self) -> dict[str, dict[str, float]]: ...

    @property
    def step(self) -> BridgeStep | SurgeStep: ...


def holder(ctx: SwitchContext, wave: WaveState, leg: WaveLeg) -> str:
    return f"{ctx.schedule}/{ctx.run_id}/w{wave.index}{leg.direction.suffix}"


def _holds_room(leg: WaveLeg) -> bool:
    """The leg's bridge or surge still holds its room."""
    return bool(held_by(leg))


HOLDING: Final = (SurgeStep.RESERVED, SurgeStep.SURGED, SurgeStep.MOVING, SurgeStep.RELEASING)


def held_by(leg: WaveLeg) -> list[Amounts]:
    """The room the leg's bridge and surge still hold (none: an empty list)."""
    bridge, surge = leg.bridge, leg.surge
    out = [surge.need] if surge is not None and surge.step in HOLDING else []
    return out + ([bridge.need] if bridge is not None and bridge.active else [])


def reserve_wave(
    run: WaveInFlight, steps: Iterable[Leasing | None]
) -> WaveOutcome | Pending | None:
    """Reserve the room of every step of the wave still to run, as one hold; None when it is
    held (or nothing needs room), Pending while it does not fit yet (the runner waits for a
    Cluster status change), a failed outcome once the step's deadline passed."""
    pending = [
        s
        for s in steps
        if s is not None
        and s.step
        not in (
            BridgeStep.RESTORED,
            BridgeStep.RELEASED,
            SurgeStep.MOVING,
            SurgeStep.PARKED,
            SurgeStep.RELEASING,
            SurgeStep.RELEASED,
            SurgeStep.KEPT,
        )
    ]
    need: Amounts = {}
    for s in pending:
        need = add(need, s.need)
    if not need:
        return None
    resumed = any(s.step not in (BridgeStep.NONE, SurgeStep.NONE) for s in pending)
    what = " and ".join(
        sorted({"bridge" if isinstance(s.step, BridgeStep) else "surge" for s in pending})
    )
    return _reserve(
        run,
        holder(run.ctx, run.wave, run.leg),
        need,
        resumed=resumed,
        what=what,
    )


def _reserve(
    run: WaveInFlight, name: str, need: Amounts, *, resumed: bool, what: str
) -> WaveOutcome | Pending | None:
    """Reserve `need` as `name`; `resumed`: what `name` holds already is counted as used in
    the free amounts. Pending until a Cluster status change (the runner waits) while it does
    not fit and the step's deadline has not passed."""
    ctx = run.ctx
    seen = ctx.clusters_version()
    free, versions = free_now(ctx, need)
    base = _requested_here(run, need)
    if resumed:
        free = add(free, need)
    if ctx.budget.reserve(name, need, free, versions):
        if base is not None and not resumed:
            run.growth = Growth(base, need)
        return None
    if ctx.clock.monotonic() < run.deadline:
        return Pending(WakeOn(clusters=True, clusters_seen=seen), run.deadline)
    short = {
        c: {
            r: q - free.get(c, {}).get(r, 0.0)
            for r, q in a.items()
            if q > free.get(c, {}).get(r, 0.0)
        }
        for c, a in need.items()
    }
    short = {c: a for c, a in short.items() if a}
    why = (
        f"short of {describe(short)}"
        if short
        else f"{describe(need)} is free but held by other waves of this daemon"
    )
    return WaveOutcome(
        False,
        FailureReason.TIMEOUT,
        f"no room for the wave's {what} within waveTimeout {ctx.wave_timeout:g}s ({why})",
    )


def _namespaces(run: WaveInFlight) -> set[str] | None:
    """The namespaces of the wave's workloads (None: one is cluster-scoped)."""
    namespaces = {w.key.namespace for w in run.live}
    return None if None in namespaces else {n for n in namespaces if n is not None}


def _requested_here(run: WaveInFlight, need: Amounts) -> dict[str, dict[str, float]] | None:
    """What the wave's namespaces request now in each member of `need` (None: not every one
    is watched live, or a workload is cluster-scoped)."""
    members = run.ctx.member_capacity
    namespaces = _namespaces(run) if members is not None else None
    if members is None or namespaces is None:
        return None
    requested = members.requested_in(namespaces)
    if not set(need) <= set(requested):
        return None
    return {c: requested[c] for c in need}


def pods_shown(run: WaveInFlight) -> bool:
    """The members' watches show the wave's leased room taken by pods of its namespaces
    (sooner than Karmada relays member status to the bindings). Another writer adding pods
    in the same namespaces meanwhile could make this early; the binding's status still
    tells it when this cannot."""
    members = run.ctx.member_capacity
    if run.growth is None or members is None:
        return False
    namespaces = _namespaces(run)
    if namespaces is None:
        return False
    return run.growth.shown_by(members.requested_in(namespaces))


def watching_growth(run: WaveInFlight) -> bool:
    """The wave waits to tell the budget its pods exist and can see them in the members."""
    return run.growth is not None and not run.told_running


def running(run: WaveInFlight, *, last_chance: bool = False) -> None:
    """The wave's extra replicas all exist: tell the budget, once, with the versions read now.
    Where the members are watched, a read that has no member version for a cluster the wave
    holds room in (its watch not following just then) is not told yet: the hold would count in
    full until its release. The wave looks again at its next check, and tells what it has at its
    `last_chance` (the move)."""
    if run.told_running:
        return
    ctx = run.ctx
    read = status_versions(ctx)  # read only if the budget asks (Cluster status alone)
    if ctx.member_capacity is not None:
        versions = read()
        if not last_chance and not _member_versions_for(run, versions):
            return
        read = functools.partial(dict, versions)  # what was read is what the budget gets
    run.told_running = True
    ctx.budget.running(holder(ctx, run.wave, run.leg), read)


def _member_versions_for(run: WaveInFlight, versions: dict[str, str]) -> bool:
    """A member version (an integer) for every cluster the wave's leg holds room in."""
    clusters = {c for amounts in held_by(run.leg) for c in amounts}
    return all(versions.get(c, "").isdigit() for c in clusters)


def release_room(ctx: SwitchContext, wave: WaveState, leg: WaveLeg) -> None:
    """Give the room of the wave's leg back once neither its bridge nor its surge holds any."""
    if not _holds_room(leg):
        ctx.budget.release(holder(ctx, wave, leg), status_versions(ctx))


def free_now(ctx: SwitchContext, need: Amounts | None = None) -> tuple[Amounts, dict[str, str]]:
    """What the clusters report free (less the headroom), and the versions it is from: Cluster
    status, or, where the daemon watches the members' capacity (`need`'s clusters), that."""
    clusters = ctx.list_clusters()
    free = {c.name: dict(c.free) for c in map(ClusterFacts.from_cluster, clusters)}
    versions = _versions_of(clusters)
    members = ctx.member_capacity
    if members is not None:
        free, versions = merged(free, versions, *members.free(need or {}))
    return usable(free, ctx.headroom_percent), versions


def _versions_of(clusters: Iterable[Obj]) -> dict[str, str]:
    return {view.name: view.resource_version for view in map(ClusterView, clusters)}


def status_versions(ctx: SwitchContext) -> Callable[[], dict[str, str]]:
    """What `running` and `release` hand the budget: reads the versions when asked (a watched
    member's afresh, see MemberCapacity.versions_now)."""
    members = ctx.member_capacity
    if members is None:
        return lambda: _versions_of(ctx.list_clusters())

    def read() -> dict[str, str]:
        listed = _versions_of(ctx.list_clusters())
        _, versions = merged({}, listed, {}, {})
        return {**versions, **members.versions_now(listed)}

    return read
