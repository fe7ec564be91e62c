"""Make-before-break waves (pure): what each workload's surge holds in its destinations, and
waves sized so that each wave's surge fits the destinations' free capacity less a headroom.

A surged workload runs its *after* share in every cluster that grows before the *before*
share elsewhere is cut, so for the wave's duration each growing cluster holds
`after - before` extra replicas of it. Those extra replicas are the wave's surge; they must
fit what the cluster has free when the wave starts (earlier waves have moved by then, which
frees their sources and fills their destinations). A workload whose surge does not fit even in
a wave of its own has no room: it is moved without surge or refused (`whenNoRoom`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tidal.domain.floors import FloorRule
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


# kinds whose member replicas an override sets at /spec/replicas
SURGE_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})
REPLICAS_PATH = "/spec/replicas"


def growth(w: PlannedWorkload) -> dict[str, int]:
    """Extra replicas per cluster while the workload is surged: `after - before` where it grows
    (nothing for kinds without /spec/replicas: they move directly)."""
    if not w.replicas or w.key.kind not in SURGE_KINDS:
        return {}
    return {c: n - w.before.get(c, 0) for c, n in sorted(w.after.items())
            if n > w.before.get(c, 0)}


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
    """Resources the workload's surge holds per cluster."""
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
    model nodes (as replicas short, under `pods`)."""
    out: Amounts = {}
    for cluster, extra in growth(w).items():
        room = rooms.get(cluster)
        if room is None or not room.model_nodes:
            continue
        fits = available_replicas(free.get(cluster, {}), w.request, room.model_nodes)
        if fits < extra:
            out[cluster] = {PODS: float(extra - fits)}
    return out


@dataclass
class SurgeLayout:
    """Waves sized for their surges, and what each wave holds and leaves free."""

    waves: list[list[PlannedWorkload]]
    surge: list[Amounts]  # per wave: the extra resources held while it is surged
    free_before: list[Amounts]  # per wave: free capacity when it starts
    free_after: list[Amounts]  # per wave: free capacity once it is moved and released
    no_room: dict[str, Amounts] = field(default_factory=dict)  # workload -> what it lacks

    @property
    def peak(self) -> dict[str, float]:
        """The most of each resource held beyond the steady state at any moment (over all
        clusters): the largest wave surge."""
        out: dict[str, float] = {}
        for wave in self.surge:
            totals: dict[str, float] = {}
            for amounts in wave.values():
                for resource, amount in amounts.items():
                    totals[resource] = totals.get(resource, 0.0) + amount
            for resource, amount in totals.items():
                out[resource] = max(out.get(resource, 0.0), amount)
        return out


def size_waves(workloads: Sequence[PlannedWorkload], *, max_size: int,
               rooms: Mapping[str, Room], spec: SurgeSpec) -> SurgeLayout:
    """Cut ordered `workloads` into waves of at most `max_size` whose surges fit.

    A wave closes early when the next workload's surge would not fit beside the surges already
    in it. A workload whose surge does not fit alone is marked not surged (no room); it rides
    in the current wave without a surge."""
    free: Amounts = {c: dict(r.free) for c, r in rooms.items()}
    layout = SurgeLayout([], [], [], [])
    wave: list[PlannedWorkload] = []
    held: Amounts = {}

    def close() -> None:
        nonlocal free, wave, held
        if not wave:
            return
        layout.waves.append(wave)
        layout.surge.append(held)
        layout.free_before.append(free)
        for w in wave:
            free = add(free, net_change(w), -1.0)
        layout.free_after.append(free)
        wave, held = [], {}

    for w in workloads:
        if len(wave) >= max_size:
            close()
        need = surge_need(w)
        if not need:
            wave.append(replace(w, surged=False))
            continue
        room = usable(free, spec.headroom_percent)
        if missing(add(held, need), room) and wave:
            close()
            room = usable(free, spec.headroom_percent)
        short = add(missing(need, room), _fits_models(w, rooms, free))
        if short:
            layout.no_room[w.name] = short
            wave.append(replace(w, surged=False))
            continue
        held = add(held, need)
        wave.append(replace(w, surged=True))
    close()
    return layout


def describe(amounts: Amounts) -> str:
    """`cluster-b: nvidia.com/gpu 2, pods 2; ...`"""
    return "; ".join(f"{cluster}: " + ", ".join(f"{r} {amount_text(r, q)}"
                                                for r, q in sorted(row.items()))
                     for cluster, row in sorted(amounts.items()))


def make_surge_plan(workloads: Sequence[PlannedWorkload], *, wave_size: int,
                    floors: Sequence[FloorRule], order: Order, rooms: Mapping[str, Room],
                    spec: SurgeSpec) -> Plan:
    """The plan of a surge switch: waves sized for their surges (at most `wave_size`), floors
    checked with surged workloads in their before or after state, and every workload without
    room reported (a problem with `whenNoRoom: refuse`, else a note: it moves without surge,
    its floors checked as a direct move)."""
    sorted_ = ordered(workloads, key=lambda w: w.key, replicas=lambda w: w.replicas,
                      order=order)
    layout = size_waves(sorted_, max_size=wave_size, rooms=rooms, spec=spec)
    plan = make_plan(sorted_, wave_size=wave_size, floors=floors, waves=layout.waves,
                     strategy="surge")
    problems, capacity = list(plan.problems), list(plan.capacity)
    for name, lacking in sorted(layout.no_room.items()):
        note = f"{name}: its surge never fits (short of {describe(lacking)})"
        if spec.when_no_room == "refuse":
            problems.append(note + "; whenNoRoom is refuse: free capacity in the "
                                   "destination, or set rollout.surge.whenNoRoom: direct")
        else:
            capacity.append(note + "; it moves without surge (whenNoRoom: direct)")
    rooms_ = [WaveRoom(s, b, a) for s, b, a in
              zip(layout.surge, layout.free_before, layout.free_after, strict=True)]
    return replace(plan, problems=problems, capacity=capacity, rooms=rooms_,
                   no_room=dict(layout.no_room))
