"""Make-before-break waves (pure): what each workload's surge holds, and waves sized so that
each wave's surge fits the destinations' free capacity less a headroom.

Karmada builds a member Work only for clusters the binding lists (those assigned replicas, or
with --enable-empty-workload-propagation every cluster the placement admits), so an override
can act only in clusters that have a member both before and after the switch (members). A
surged workload's override sets each member cluster to the larger of its two shares: clusters
that grow are raised (and become ready) before the move, clusters that shrink keep their old
share through the move until the new replicas everywhere are ready, then the override goes.
The raise needs room: `after - before` replicas in each growing member cluster, free when the
wave starts (earlier waves have moved by then, freeing their sources and filling their
destinations). A workload whose raise does not fit even in a wave of its own has no room; one
with no member cluster (e.g. 1 replica moving from cluster-a to cluster-b, empty workloads not
propagated) has nothing to override: with trigger touch it is bridged instead
(tidal.domain.bridge), its room counted like a surge's; with a rebalance it moves without surge.
Either without room moves without surge, or is refused (`whenNoRoom`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tidal.domain.bridge import bridge_clusters, bridge_growth, needs_bridge
from tidal.domain.floors import FloorRule
from tidal.domain.outcomes import Strategy
from tidal.domain.plan import Amounts, Plan, PlannedWorkload, WaveRoom, amount_text, make_plan
from tidal.domain.prediction import ModelNodes, available_replicas
from tidal.domain.waves import Order, ordered

PODS = "pods"


@dataclass(frozen=True)
class Room:
    """What a cluster has free for surges: the summary's free amounts, and its resource-model
    nodes when it has them (then a workload's surge must also fit them replica by replica)."""

    free: Mapping[str, float]
    model_nodes: tuple[ModelNodes, ...] = ()


@dataclass(frozen=True)
class SurgeSpec:
    headroom_percent: float = 10.0
    when_no_room: str = "direct"  # direct | refuse
    bridge: bool = False  # the policy is Lazy during the run (trigger touch): bridges possible


# kinds whose member replicas an override sets at /spec/replicas; a custom kind's override
# sets the field its ResourceInterpreterCustomization revises (PlannedWorkload.revisable)
SURGE_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})


def overridable(w: PlannedWorkload) -> bool:
    """An override can set its member replicas."""
    return w.key.kind in SURGE_KINDS or w.revisable


def _delta(w: PlannedWorkload, c: str) -> int:
    return w.after.get(c, 0) - w.before.get(c, 0)


def surgeable(w: PlannedWorkload) -> bool:
    """It has replicas, an override can set them, and a member cluster changes share."""
    return bool(w.replicas) and overridable(w) and any(_delta(w, c) for c in w.members())


def bridgeable(w: PlannedWorkload) -> bool:
    """It has replicas an override could set, moves, a destination without a member, and a
    surge could not keep all its replicas serving (its members hold fewer at the worst
    moment: e.g. none, 1 replica from cluster-a to cluster-b); a surge is preferred where it
    can, as it holds less."""
    return (
        bool(w.replicas)
        and overridable(w)
        and w.moves
        and needs_bridge(w.before, w.after)
        and sum(w.bridge().values()) < (w.replicas or 0)
    )


def bridge_extra(w: PlannedWorkload) -> dict[str, int]:
    """Replicas a bridge adds per cluster beyond the workload's share there before."""
    if not w.replicas:
        return {}
    return bridge_growth(w.replicas, w.before, bridge_clusters(w.before, w.after))


def growth(w: PlannedWorkload) -> dict[str, int]:
    """Replicas the override raises per cluster before the move: `after - before` in each
    member cluster that grows (the room the surge needs)."""
    if not surgeable(w):
        return {}
    return {c: _delta(w, c) for c in sorted(w.members()) if _delta(w, c) > 0}


def held(w: PlannedWorkload) -> dict[str, int]:
    """Replicas held beyond the steady state per cluster at some moment of the surge: raised
    in growing member clusters before the move, kept in shrinking ones until it is ready."""
    if not surgeable(w):
        return {}
    return {c: abs(_delta(w, c)) for c in sorted(w.members()) if _delta(w, c)}


def amounts_for(extra: Mapping[str, int], request: Mapping[str, float]) -> Amounts:
    """Resources `extra` replicas per cluster hold (the per-replica request times the replicas,
    and one pod each); clusters with no extra replica are left out."""
    out: Amounts = {}
    for cluster, n in sorted(extra.items()):
        if n > 0:
            amounts = {r: q * n for r, q in request.items() if q > 0 and r != PODS}
            amounts[PODS] = float(n)
            out[cluster] = amounts
    return out


def surge_need(w: PlannedWorkload) -> Amounts:
    """Free resources the workload's surge takes per cluster (its raise)."""
    return amounts_for(growth(w), w.request)


def add(total: Amounts, more: Mapping[str, Mapping[str, float]], sign: float = 1.0) -> Amounts:
    """`total + sign * more`, as a new value."""
    out = {c: dict(v) for c, v in total.items()}
    for cluster, amounts in more.items():
        row = out.setdefault(cluster, {})
        for resource, amount in amounts.items():
            row[resource] = row.get(resource, 0.0) + sign * amount
    return out


def usable(free: Amounts, headroom_percent: float) -> Amounts:
    """What surges may use of `free`: all but the headroom (nothing of a negative amount)."""
    keep = 1.0 - headroom_percent / 100.0
    return {c: {r: max(0.0, q) * keep for r, q in v.items()} for c, v in free.items()}


def missing(need: Amounts, room: Amounts) -> Amounts:
    """What `need` lacks in `room`: cluster -> resource -> amount short (empty: it fits)."""
    out: Amounts = {}
    for cluster, amounts in need.items():
        for resource, amount in amounts.items():
            short = amount - room.get(cluster, {}).get(resource, 0.0)
            if short > 1e-9:
                out.setdefault(cluster, {})[resource] = short
    return out


def net_change(w: PlannedWorkload) -> Amounts:
    """What a moved workload holds more (or less, negative) per cluster after its wave."""
    out: Amounts = {}
    if not w.replicas:
        return out
    for cluster in sorted(set(w.before) | set(w.after)):
        delta = w.after.get(cluster, 0) - w.before.get(cluster, 0)
        if delta:
            amounts = {r: q * delta for r, q in w.request.items() if q > 0 and r != PODS}
            amounts[PODS] = float(delta)
            out[cluster] = amounts
    return out


def _fits_models(w: PlannedWorkload, rooms: Mapping[str, Room], free: Amounts) -> Amounts:
    """Clusters with resource models where the workload's extra replicas do not fit the
    model nodes (as replicas short, under `pods`).

    Surged replicas are placed by the member's own scheduler, not by Karmada's estimator: the
    models only tell how the resources they grade are spread over nodes. A resource they do not
    grade (GPUs under Karmada's default cpu/memory models) is bounded by the summary alone."""
    out: Amounts = {}
    for cluster, extra in growth(w).items():
        room = rooms.get(cluster)
        if room is None or not room.model_nodes:
            continue
        graded = {name for node in room.model_nodes for name in node.minimums}
        request = {name: need for name, need in w.request.items() if name in graded}
        if not request:
            continue
        fits = available_replicas(free.get(cluster, {}), request, room.model_nodes)
        if fits < extra:
            out[cluster] = {PODS: float(extra - fits)}
    return out


@dataclass
class SurgeLayout:
    """Waves sized for their surges, and what each wave holds and leaves free."""

    waves: list[list[PlannedWorkload]]
    surge: list[Amounts]  # per wave: the free resources its raise takes
    extra: list[Amounts]  # per wave: resources held beyond the steady state (an upper bound)
    free_before: list[Amounts]  # per wave: free capacity when it starts
    free_after: list[Amounts]  # per wave: free capacity once it is moved and released
    no_room: dict[str, Amounts] = field(default_factory=dict)  # workload -> what it lacks

    @property
    def peak(self) -> dict[str, float]:
        """The most of each resource held beyond the steady state at any moment (over all
        clusters): the largest wave's extra."""
        out: dict[str, float] = {}
        for wave in self.extra:
            totals: dict[str, float] = {}
            for amounts in wave.values():
                for resource, amount in amounts.items():
                    totals[resource] = totals.get(resource, 0.0) + amount
            for resource, amount in totals.items():
                out[resource] = max(out.get(resource, 0.0), amount)
        return out


def size_waves(
    workloads: Sequence[PlannedWorkload],
    *,
    max_size: int,
    rooms: Mapping[str, Room],
    spec: SurgeSpec,
) -> SurgeLayout:
    """Cut ordered `workloads` into waves of at most `max_size` whose surges fit.

    A wave closes early when the next workload's surge would not fit beside the surges already
    in it. A workload whose surge does not fit alone is marked not surged (no room); it rides
    in the current wave without a surge."""
    free: Amounts = {c: dict(r.free) for c, r in rooms.items()}
    layout = SurgeLayout([], [], [], [], [])
    wave: list[PlannedWorkload] = []
    taken: Amounts = {}

    def close() -> None:
        nonlocal free, wave, taken
        if not wave:
            return
        layout.waves.append(wave)
        layout.surge.append(taken)
        extra: Amounts = {}
        for w in wave:
            if w.surged:
                extra = add(extra, amounts_for(held(w), w.request))
            elif w.bridged:
                extra = add(extra, amounts_for(bridge_extra(w), w.request))
        layout.extra.append(extra)
        layout.free_before.append(free)
        for w in wave:
            free = add(free, net_change(w), -1.0)
        layout.free_after.append(free)
        wave, taken = [], {}

    for w in workloads:
        if len(wave) >= max_size:
            close()
        bridged = spec.bridge and bridgeable(w)
        if not bridged and not surgeable(w):
            wave.append(replace(w, surged=False))
            continue
        need = amounts_for(bridge_extra(w), w.request) if bridged else surge_need(w)
        room = usable(free, spec.headroom_percent)
        if missing(add(taken, need), room) and wave:
            close()
            room = usable(free, spec.headroom_percent)
        short = (
            missing(need, room)
            if bridged
            else add(missing(need, room), _fits_models(w, rooms, free))
        )
        if short:
            layout.no_room[w.name] = short
            wave.append(replace(w, surged=False))
            continue
        taken = add(taken, need)
        wave.append(replace(w, bridged=True) if bridged else replace(w, surged=True))
    close()
    return layout


def raise_ahead(layout: SurgeLayout, headroom_percent: float) -> list[int]:
    """Per wave (from 0): the last wave (numbered from 1) whose surge is up while it runs.

    Once a wave's own surge is written, the run raises the following waves' surges ahead of
    their turn, in order, while each fits beside every surge already up (the usable free
    capacity when the wave started, less the surges held) and has no bridge (a bridge rewrites
    a policy the running wave's move may still read); the first that does not stops it."""
    out: list[int] = []
    last = 0
    for n, free in enumerate(layout.free_before):
        last = max(last, n + 1)
        room = usable(free, headroom_percent)
        held: Amounts = {}
        for k in range(n, last):
            held = add(held, layout.surge[k])
        while last < len(layout.waves):
            wave = layout.waves[last]
            if any(w.bridged for w in wave) or missing(add(held, layout.surge[last]), room):
                break
            held = add(held, layout.surge[last])
            last += 1
        out.append(last)
    return out


def _held_while(layout: SurgeLayout, n: int, raised_to: int) -> Amounts:
    """What the run holds beyond the steady state while wave `n` (from 0) runs: its own
    extra and that of every wave raised ahead up to wave `raised_to` (numbered from 1)."""
    out: Amounts = {}
    for k in range(n, max(raised_to, n + 1)):
        out = add(out, layout.extra[k])
    return out


def describe(amounts: Amounts) -> str:
    """`cluster-b: nvidia.com/gpu 2, pods 2; ...`"""
    return "; ".join(
        f"{cluster}: " + ", ".join(f"{r} {amount_text(r, q)}" for r, q in sorted(row.items()))
        for cluster, row in sorted(amounts.items())
    )


def make_surge_plan(
    workloads: Sequence[PlannedWorkload],
    *,
    wave_size: int,
    floors: Sequence[FloorRule],
    order: Order,
    rooms: Mapping[str, Room],
    spec: SurgeSpec,
) -> Plan:
    """The plan of a surge switch: waves sized for their surges (at most `wave_size`), floors
    checked with surged workloads in their before or after state, and every workload without
    room reported (a problem with `whenNoRoom: refuse`, else a note: it moves without surge,
    its floors checked as a direct move)."""
    sorted_ = ordered(workloads, key=lambda w: w.key, replicas=lambda w: w.replicas, order=order)
    layout = size_waves(sorted_, max_size=wave_size, rooms=rooms, spec=spec)
    plan = make_plan(
        sorted_, wave_size=wave_size, floors=floors, waves=layout.waves, strategy=Strategy.SURGE
    )
    problems, capacity = list(plan.problems), list(plan.capacity)
    for name, lacking in sorted(layout.no_room.items()):
        note = f"{name}: its surge never fits (short of {describe(lacking)})"
        if spec.when_no_room == "refuse":
            problems.append(
                note + "; whenNoRoom is refuse: free capacity in the "
                "destination, or set rollout.surge.whenNoRoom: direct"
            )
        else:
            capacity.append(note + "; it moves without surge (whenNoRoom: direct)")
    for w in plan.workloads:
        if w.bridged:
            capacity.append(
                f"{w.name}: bridged: Duplicated over "
                f"{', '.join(sorted(w.bridge_shares()))} until its destination "
                "serves, then moved (Karmada builds no member for a cluster "
                "assigned 0 replicas, so there is nothing to raise)"
            )
        elif (
            w.replicas
            and w.moves
            and overridable(w)
            and not w.members()
            and w.name not in layout.no_room
        ):
            why = (
                ""
                if spec.bridge
                else "; a bridge needs trigger touch (the policy Lazy "
                "during the run), a rebalance moves it directly"
            )
            capacity.append(
                f"{w.name}: moves without surge: no cluster holds it both before "
                "and after (Karmada builds no member for a cluster assigned 0 "
                f"replicas, so there is nothing to raise){why}"
            )
    raised = raise_ahead(layout, spec.headroom_percent)
    rooms_ = [
        WaveRoom(s, b, a, _held_while(layout, n, raised[n]), raised[n])
        for n, (s, b, a) in enumerate(
            zip(layout.surge, layout.free_before, layout.free_after, strict=True)
        )
    ]
    return replace(
        plan, problems=problems, capacity=capacity, rooms=rooms_, no_room=dict(layout.no_room)
    )
