"""One wave in flight, as the wave's steps see it: the run's shared context (`SwitchContext`)
and the wave's own state (`WaveInFlight`: its live workloads, targets, watch, deadline and
direction). The steps (tidal.engine.bridging, surging, room, rebalancing) and the wave's runner
(tidal.engine.wave) both import it, so no step reaches back into the module that runs it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.clock import Clock
from tidal.domain.floors import FloorRule, FloorViolation
from tidal.domain.placement import Placement
from tidal.engine import gates, triggers
from tidal.engine.budget import Growth, OwnBudget, SurgeBudget
from tidal.engine.destinations import DestinationHealth
from tidal.engine.events import Emitter, EventBase, FloorBreached, WorkloadSkipped
from tidal.engine.journal import RunState, WaveState
from tidal.engine.resolve import Workload, selected_by
from tidal.engine.samples import Sampler
from tidal.engine.states import Direction, Gate, Trigger
from tidal.engine.strategies import TriggerStrategy
from tidal.karmada.bindings import BindingWatch, list_bindings
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.clusters import list_clusters
from tidal.karmada.informer import SharedReads
from tidal.karmada.member_capacity import MemberCapacity
from tidal.karmada.policies import PolicyLookup


def iso_now(clock: Clock) -> str:
    """The clock's now as RFC 3339 with a Z (UTC)."""
    return clock.now().isoformat().replace("+00:00", "Z")


@dataclass
class SwitchContext:
    """What every wave of one run shares (the run's identity, strategy, floors and the
    workloads seen so far); owned by the Run."""

    client: KarmadaClient
    clock: Clock
    emitter: Emitter
    state: RunState
    save: Callable[[], None]
    strategy: TriggerStrategy
    floors: list[FloorRule]
    everyone: list[Workload]
    before: dict[str, dict[str, int]]
    ready_field: str | None = None
    wave_timeout: float = 600.0
    # False once this process may no longer save (tidal.engine.journal.Journal.may_save)
    may_save: Callable[[], bool] = lambda: True
    skipped: set[str] = field(default_factory=set)
    floor_seen: dict[str, int] = field(default_factory=dict)
    sampler: Sampler = field(default_factory=Sampler)  # the run's replicas over time
    # make-before-break: the plan's override per surged workload (cluster -> replicas), the
    # capacity budget surges reserve from, and the headroom they leave in each destination
    surges: dict[str, dict[str, int]] = field(default_factory=dict)
    # the plan's bridge per bridged workload (cluster -> replicas; tidal.engine.bridging)
    bridges: dict[str, dict[str, int]] = field(default_factory=dict)
    budget: SurgeBudget = field(default_factory=OwnBudget)
    headroom_percent: float = 0.0
    # the daemon's shared informers (bindings, clusters); a run alone lists and watches itself
    reads: SharedReads | None = None
    # a run alone's policy informer may stand in for a GET before a policy write (False: the
    # run wrote a policy before its plan, which the informer may not have seen yet)
    policy_cache: bool = True
    # policy key -> its resourceSelectors as in force after the window
    selectors: dict[str, Any] = field(default_factory=dict)
    # resources (plurals) whose deletecollection the RBAC refused: deleted one by one since
    # (overrides and rebalancers are otherwise deleted by their owner labels, in one request)
    collection_refused: set[str] = field(default_factory=set)
    # per binding version: floor violations and ready counts already worked out this run
    memo: gates.BindingMemo = field(default_factory=gates.BindingMemo)
    # override reference -> the object as this run last wrote it (its create's or replace's
    # answer): a regrouping replaces it without reading it first
    overrides_written: dict[str, Obj] = field(default_factory=dict)
    # leftovers of other runs the start of this run kept (a floor needed them); None: this
    # process did not sweep at the start (a resume), so the end sweeps again
    leftovers_kept: int | None = None
    # wave number -> the last wave whose surge may be up while it runs, as the plan announced
    # (tidal.engine.pacing; empty: nothing is raised ahead, e.g. a resumed run)
    raised_to: dict[int, int] = field(default_factory=dict)
    # workload -> (binding resourceVersion, surge step) its surge was last followed at
    # (tidal.engine.surge_follow): an unchanged binding is not looked at again
    followed: dict[str, tuple[str, str]] = field(default_factory=dict)
    # bindings below their floors when the rollback began (tidal.engine.rollback): the breach
    # that failed the run may still be healing; each counts again once it met its floors
    recovering: set[str] = field(default_factory=set)

    def binding_watch(
        self, namespace: str | None, cluster_scoped: bool, keys: Collection[str] | None = None
    ) -> BindingWatch:
        """A watch of the namespace's bindings; with `keys`, caching those only."""
        if self.reads is not None:
            return self.reads.binding_watch(namespace, cluster_scoped=cluster_scoped, keys=keys)
        return BindingWatch(self.client, namespace, cluster_scoped=cluster_scoped, keys=keys)

    def list_clusters(self) -> list[Obj]:
        return self.reads.list_clusters() if self.reads is not None else list_clusters(self.client)

    def own_policy_cache(self) -> PolicyLookup | None:
        """A run alone's policy informer (listed when its plan read the policies), read
        instead of a GET before a policy write guarded by the resourceVersion read; None for
        the daemon's runs, whose shared cache may predate a write made a moment ago."""
        reads = self.reads
        if reads is None or not reads.private or not self.policy_cache:
            return None
        return reads.find_policy

    @property
    def member_capacity(self) -> MemberCapacity | None:
        """The daemon's watch of the members' capacity (scheduler.capacity_source members)."""
        return self.reads.members if self.reads is not None else None

    def clusters_version(self) -> str | None:
        """The shared Cluster cache's resourceVersion (None: a run alone has no cache)."""
        return self.reads.clusters_version() if self.reads is not None else None

    def list_bindings(self, namespace: str | None, cluster_scoped: bool) -> list[Obj]:
        if self.reads is not None:
            return self.reads.list_bindings(namespace, cluster_scoped=cluster_scoped)
        return list_bindings(self.client, namespace, cluster_scoped=cluster_scoped)[0]

    @property
    def trigger(self) -> Trigger:
        return self.strategy.trigger

    @property
    def schedule(self) -> str:
        return self.state.schedule

    @property
    def window(self) -> str:
        return self.state.window

    @property
    def run_id(self) -> str:
        return self.state.run_id

    def event_base(self, wave: int | None) -> EventBase:
        return EventBase(schedule=self.schedule, window=self.window, run_id=self.run_id, wave=wave)

    def now_iso(self) -> str:
        return iso_now(self.clock)


class WaveInFlight:
    """One wave in flight: its workloads still in the run, their targets, the one watch and
    the one deadline its steps share, its direction and its leg that way."""

    def __init__(
        self,
        ctx: SwitchContext,
        wave: WaveState,
        live: Sequence[Workload],
        placements: Mapping[str, Placement | None],
        watch: BindingWatch,
        direction: Direction,
        health: DestinationHealth | None = None,
    ) -> None:
        self.ctx, self.wave, self.watch, self.direction = ctx, wave, watch, direction
        self.leg = wave.leg(direction)  # what the wave does (and did) this way
        self.health = health or DestinationHealth(ctx, wave.index, ())
        self.live = list(live)
        self.placements = placements
        self.targets = {w.name: gates.WaveTarget(w, rule=ctx.strategy) for w in live}
        self.deadline = ctx.clock.monotonic() + ctx.wave_timeout
        self.passed: set[Gate] = set()  # gates announced in this wave (each once)
        self.told_running = False  # the budget heard that the wave's extra replicas exist
        self.growth: Growth | None = None  # where the members show the wave's pods (room.py)

    @property
    def triggered_before(self) -> list[str]:
        """Workloads whose trigger this wave already wrote in its direction (a resume)."""
        return self.leg.triggered

    def leave_out(self, name: str, reason: str) -> None:
        leave_out(self.ctx, self.wave.index, name, reason, self.targets)

    def unmatched(self, touched: triggers.TouchResult) -> list[str]:
        """Templates the touch found relabelled out of their policy's resourceSelectors since
        the plan (forward; a rollback restores other selectors): Karmada will not move them."""
        if not self.direction.planned:
            return []
        policy = {w.name: w.policy for w in self.live}
        return sorted(
            name
            for name, obj in touched.objects.items()
            if policy.get(name) in self.ctx.selectors
            and not selected_by(obj, self.ctx.selectors[policy[name]])
        )


def leave_out(
    ctx: SwitchContext,
    index: int,
    name: str,
    reason: str,
    targets: dict[str, gates.WaveTarget] | None = None,
) -> None:
    """Leave a workload of wave `index` out of the run, with a warning and an event."""
    ctx.skipped.add(name)
    if targets is not None:
        targets.pop(name, None)
    ctx.everyone = [w for w in ctx.everyone if w.name != name]
    what = "template deleted" if reason == "deleted" else reason.replace("_", " ")
    note = f"{name} left out: {what} during the switch"
    if note not in ctx.state.warnings:
        ctx.state.warnings.append(note)
    ctx.emitter.emit(WorkloadSkipped(**ctx.event_base(index), workload=name, reason=reason))


def report_breaches(ctx: SwitchContext, index: int, violations: Iterable[FloorViolation]) -> None:
    """A floor_breached event per violation."""
    base = ctx.event_base(index)
    for v in violations:
        ctx.emitter.emit(
            FloorBreached(
                **base,
                cluster=v.cluster,
                workload=v.workload,
                ready=v.ready,
                required=v.required,
                floor=v.floor,
            )
        )
