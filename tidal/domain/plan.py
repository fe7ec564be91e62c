"""The plan of a switch (pure): waves, predicted replicas per cluster, and the floor verdict.

Karmada moves replicas without surge: replicas leaving a cluster stop at once, replicas
arriving become ready only later. So while a wave is in flight each of its workloads is
counted with min(before, after) ready replicas per cluster; earlier waves are at their
predicted end state, later ones still at their current state. A surged workload
(tidal.domain.surge) keeps every cluster it is in before and after at the larger of its two
shares across the move: in flight it is checked in its before state, at the moment it moved
(kept clusters at the larger share, new ones not ready yet) and in its after state. Every
floor is checked for every workload at the start, during each wave, and at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from tidal.domain.bridge import bridge_clusters, bridge_shares
from tidal.domain.floors import FloorRule, FloorViolation, check_floors
from tidal.domain.outcomes import Strategy
from tidal.domain.waves import Order, WorkloadKey, ordered, split_waves

Amounts: TypeAlias = dict[str, dict[str, float]]  # cluster -> resource -> amount


@dataclass(frozen=True)
class PlannedWorkload:
    key: WorkloadKey
    replicas: int | None
    before: Mapping[str, int]
    after: Mapping[str, int]
    exact: bool = True
    problem: str = ""
    uid: str = ""
    short: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # static: cluster ->
    # resources the replicas moved there lack, and how many of them would stay Pending
    pending: Mapping[str, int] = field(default_factory=dict)
    request: Mapping[str, float] = field(default_factory=dict)  # per replica
    surged: bool = False  # made before broken (tidal.domain.surge)
    candidates: frozenset[str] = frozenset()  # clusters the new placement admits
    bridged: bool = False  # its destination gets a member Work first (tidal.domain.bridge)
    revisable: bool = False  # a custom kind whose replica field an override can set

    @property
    def name(self) -> str:
        return str(self.key)

    def members(self) -> set[str]:
        """Clusters with a member Work both before and after the move: only there can an
        override act. Karmada leaves clusters assigned 0 out of spec.clusters, unless its
        scheduler runs with --enable-empty-workload-propagation: a binding listing a cluster
        with 0 replicas shows that, and then every cluster the new placement admits keeps one."""
        empty_kept = any(n == 0 for n in self.before.values())
        before = set(self.before) if empty_kept else {c for c, n in self.before.items() if n}
        after = {c for c, n in self.after.items() if n}
        if empty_kept:
            after |= set(self.candidates) | set(self.after)
        return before & after

    def _larger(self, c: str) -> int:
        return max(self.before.get(c, 0), self.after.get(c, 0))

    def surge(self) -> dict[str, int]:
        """The replicas per cluster an override sets while surged: in every member cluster
        (before and after), the larger of its two shares. It raises the clusters that grow
        before the move and holds those that shrink until the move is ready (empty when not
        surged)."""
        if not self.surged or not self.replicas:
            return {}
        return {
            c: self._larger(c)
            for c in sorted(self.members())
            if self.before.get(c, 0) != self.after.get(c, 0)
        }

    def bridge_shares(self) -> dict[str, int]:
        """Replicas per cluster while bridged: the full count in every cluster it leaves or
        reaches (empty when not bridged)."""
        if not self.bridged or not self.replicas:
            return {}
        return bridge_shares(self.replicas, bridge_clusters(self.before, self.after))

    def bridge(self) -> dict[str, int]:
        """Ready replicas per cluster at a surged move's worst moment: just moved, member
        clusters at the larger share, new clusters not ready yet, left ones gone."""
        return {c: self._larger(c) for c in sorted(self.members())}

    def ready_after(self) -> dict[str, int]:
        """Ready replicas per cluster once moved: the assignment less what stays Pending."""
        return {c: n - self.pending.get(c, 0) for c, n in self.after.items()}

    def in_flight(self) -> dict[str, int]:
        """Ready replicas per cluster while moving: only those that stay are counted."""
        clusters = set(self.before) | set(self.after)
        after = self.ready_after()
        return {c: min(self.before.get(c, 0), after.get(c, 0)) for c in sorted(clusters)}

    def kept_clusters(self) -> set[str]:
        return {c for c, n in self.before.items() if n > 0 and self.after.get(c, 0) > 0}

    @property
    def moves(self) -> bool:
        return {c: n for c, n in self.before.items() if n} != {
            c: n for c, n in self.after.items() if n
        }


@dataclass(frozen=True)
class PlanStep:
    label: str  # "before", "wave 1", ..., "end"
    wave: int | None  # the wave's number (from 1)
    assigned: dict[str, int]  # predicted replicas per cluster after the step
    lowest_ready: dict[str, int]  # during the step: the lowest ready count of any workload
    violations: tuple[FloorViolation, ...] = ()
    ready: dict[str, int] = field(default_factory=dict)  # predicted ready per cluster after it
    surged: dict[str, int] = field(default_factory=dict)  # a surge wave: ready per cluster at
    # its peak (surged replicas ready, none moved yet)


@dataclass(frozen=True)
class WaveRoom:
    """A surge wave's capacity: the free resources its surge takes, what the run holds beyond
    the steady state at most while it runs (its own surge and those raised ahead), and what is
    free before and after it."""

    surge: Amounts
    free_before: Amounts
    free_after: Amounts
    extra: Amounts = field(default_factory=dict)
    # the last wave (numbered from 1) whose surge may be up while this one runs: later waves
    # raised ahead (tidal.domain.surge.raise_ahead); their holds are counted in `extra`
    raised_to: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "surge": self.surge,
            "extra": self.extra,
            "freeBefore": self.free_before,
            "freeAfter": self.free_after,
        }


@dataclass(frozen=True)
class Plan:
    waves: list[list[PlannedWorkload]]
    steps: list[PlanStep]
    floors: tuple[FloorRule, ...]
    problems: list[str] = field(default_factory=list)  # unschedulable and the like
    capacity: list[str] = field(default_factory=list)  # warnings: moves that do not fit
    strategy: Strategy = Strategy.DIRECT
    rooms: list[WaveRoom] = field(default_factory=list)  # surge: per wave
    no_room: dict[str, Amounts] = field(default_factory=dict)  # surge: workload -> lacking

    @property
    def violations(self) -> list[tuple[str, FloorViolation]]:
        return [(s.label, v) for s in self.steps for v in s.violations]

    @property
    def safe(self) -> bool:
        return not self.violations and not self.problems

    @property
    def workloads(self) -> list[PlannedWorkload]:
        return [w for wave in self.waves for w in wave]

    def numbered(self) -> list[tuple[int, list[PlannedWorkload]]]:
        """(wave number, workloads): waves are numbered from 1 everywhere (plan, run record,
        status, metrics, Events)."""
        return [(number, wave) for number, wave in enumerate(self.waves, start=1)]

    def to_dict(self) -> dict[str, Any]:
        waves = []
        for number, wave in self.numbered():
            entry: dict[str, Any] = {
                "index": number,
                "workloads": [
                    {
                        "workload": w.name,
                        "replicas": w.replicas,
                        "before": dict(w.before),
                        "after": dict(w.after),
                        "exact": w.exact,
                        "surged": w.surged,
                        "surge": w.surge(),
                        "bridged": w.bridged,
                        "bridge": w.bridge_shares(),
                    }
                    for w in wave
                ],
            }
            if number <= len(self.rooms):
                entry.update(self.rooms[number - 1].to_dict())
            waves.append(entry)
        return {
            "safe": self.safe,
            "strategy": str(self.strategy),
            "waves": waves,
            "steps": [
                {
                    "step": s.label,
                    "wave": s.wave,
                    "assigned": s.assigned,
                    "lowestReady": s.lowest_ready,
                    "ready": s.ready,
                    "surged": s.surged,
                    "violations": [str(v) for v in s.violations],
                }
                for s in self.steps
            ],
            "floors": [f.describe() for f in self.floors],
            "problems": list(self.problems),
            "capacity": list(self.capacity),
            "noRoom": [
                {"workload": name, "missing": lacking}
                for name, lacking in sorted(self.no_room.items())
            ],
        }


@dataclass
class _WaveState:
    """One wave's workloads all in one state (before, in flight or after): their floor
    violations in order, the lowest ready count per cluster, replicas assigned per cluster,
    ready replicas per cluster (total), and, in flight, the ready total at a surge's peak."""

    violations: list[FloorViolation]
    lowest: dict[str, int] | None  # None: no workload with replicas
    assigned: dict[str, int]
    ready: dict[str, int]
    peak: dict[str, int] = field(default_factory=dict)


def _total(into: dict[str, int], add: Mapping[str, int]) -> None:
    for cluster, n in add.items():
        into[cluster] = into.get(cluster, 0) + n


def _wave_state(
    wave: Sequence[PlannedWorkload],
    checks: Sequence[Sequence[Mapping[str, int]]],
    lows: Sequence[Mapping[str, int]],
    assigned: Sequence[Mapping[str, int]],
    floors: Sequence[FloorRule],
    clusters: Sequence[str],
    peaks: Sequence[Mapping[str, int]] = (),
) -> _WaveState:
    """`checks`: per workload the ready maps its floors must hold in (one per instant that can
    be the worst); `lows`: its lowest ready per cluster; `peaks`: its most ready per cluster."""
    violations: list[FloorViolation] = []
    lowest: dict[str, int] | None = None
    totals: dict[str, int] = {}
    ready: dict[str, int] = {}
    for w, maps, r, a in zip(wave, checks, lows, assigned, strict=True):
        if floors:
            kept = w.kept_clusters()
            seen: set[str] = set()
            for m in maps:
                for v in check_floors(w.name, w.replicas, m, floors, kept):
                    if str(v) not in seen:
                        seen.add(str(v))
                        violations.append(v)
        if w.replicas:
            if lowest is None:
                lowest = {c: r.get(c, 0) for c in clusters}
            else:
                for cluster in clusters:
                    have = r.get(cluster, 0)
                    if have < lowest[cluster]:
                        lowest[cluster] = have
        _total(totals, a)
        _total(ready, maps[-1])
    peak: dict[str, int] = {}
    for p in peaks:
        _total(peak, p)
    return _WaveState(violations, lowest, totals, ready, peak)


def _step(
    label: str,
    wave: int | None,
    states: Sequence[_WaveState],
    clusters: Sequence[str],
    peak_of: int | None = None,
) -> PlanStep:
    """Combine per-wave states (in wave order, which is the workloads' order) into one step;
    `peak_of`: the index of the state in flight whose surge peak the step reports."""
    violations: list[FloorViolation] = []
    lowest: dict[str, int] = {}
    assigned: dict[str, int] = {}
    ready: dict[str, int] = {}
    surged: dict[str, int] = {}
    for i, state in enumerate(states):
        violations.extend(state.violations)
        if state.lowest is not None:
            if not lowest:
                lowest = dict(state.lowest)
            else:
                for cluster in clusters:
                    lowest[cluster] = min(lowest[cluster], state.lowest[cluster])
        _total(assigned, state.assigned)
        _total(ready, state.ready)
        _total(surged, state.peak if i == peak_of else state.ready)
    return PlanStep(
        label,
        wave,
        dict(sorted(assigned.items())),
        lowest,
        tuple(violations),
        dict(sorted(ready.items())),
        dict(sorted(surged.items())) if peak_of is not None else {},
    )


def _peak(w: PlannedWorkload) -> dict[str, int]:
    """Ready per cluster at a surge's peak, before the move: the before share, raised where
    the override raises it (a workload without surge: its lowest in flight)."""
    if w.bridged:
        return w.bridge_shares()
    if not w.surged:
        return w.in_flight()
    return {**dict(w.before), **w.surge()}


def make_plan(
    workloads: Sequence[PlannedWorkload],
    *,
    wave_size: int,
    floors: Sequence[FloorRule] = (),
    order: Order = "name",
    waves: list[list[PlannedWorkload]] | None = None,
    strategy: Strategy = Strategy.DIRECT,
) -> Plan:
    """Cut the workloads into waves (or take `waves`, already cut and ordered) and check every
    floor before, during and after each.

    Each workload is checked once in each of its three states (before, in flight, after);
    a step combines wave by wave: earlier waves after, its own in flight, later ones before."""
    if waves is None:
        sorted_ = ordered(
            workloads, key=lambda w: w.key, replicas=lambda w: w.replicas, order=order
        )
        waves = split_waves(sorted_, wave_size) if sorted_ else []
    else:
        sorted_ = [w for wave in waves for w in wave]
    clusters = sorted({c for w in sorted_ for c in (*w.before, *w.after)})
    steps = _steps(waves, floors, clusters, strategy)
    problems = [f"{w.name}: {w.problem}" for w in sorted_ if w.problem]
    capacity: list[str] = []
    breaking = {v.workload for step in steps for v in step.violations}
    for index, wave in enumerate(waves):
        for note, names in _capacity_notes(index + 1, wave):
            # a floor these Pending replicas break refuses the switch; otherwise a warning
            (problems if breaking & set(names) else capacity).append(note)
    return Plan(waves, steps, tuple(floors), problems, capacity, strategy)


def _flight_checks(w: PlannedWorkload) -> list[Mapping[str, int]]:
    """The ready maps a workload's floors must hold in while it moves: a surged workload
    before, at the bridge (kept clusters at their larger share), after; a bridged one before
    and just moved (its destinations serve before its sources go); else its lowest."""
    if w.surged:
        return [w.before, w.bridge(), w.ready_after()]
    if w.bridged:
        return [w.before, w.ready_after()]
    return [w.in_flight()]


def _steps(
    waves: Sequence[Sequence[PlannedWorkload]],
    floors: Sequence[FloorRule],
    clusters: Sequence[str],
    strategy: Strategy,
) -> list[PlanStep]:
    """The plan's steps: before, each wave in flight (earlier waves after, later before),
    end."""
    before: list[_WaveState] = []
    flight: list[_WaveState] = []
    after: list[_WaveState] = []
    for wave in waves:
        olds = [dict(w.before) for w in wave]
        news = [dict(w.after) for w in wave]
        ready = [w.ready_after() for w in wave]
        lows = [w.in_flight() for w in wave]
        before.append(_wave_state(wave, [[o] for o in olds], olds, olds, floors, clusters))
        flight.append(
            _wave_state(
                wave,
                [_flight_checks(w) for w in wave],
                lows,
                news,
                floors,
                clusters,
                [_peak(w) for w in wave],
            )
        )
        after.append(_wave_state(wave, [[r] for r in ready], ready, news, floors, clusters))
    steps = [_step("before", None, before, clusters)]
    for index in range(len(waves)):
        surging = strategy is Strategy.SURGE and any(w.surged or w.bridged for w in waves[index])
        steps.append(
            _step(
                f"wave {index + 1}",
                index + 1,
                [*after[:index], flight[index], *before[index + 1 :]],
                clusters,
                peak_of=index if surging else None,
            )
        )
    steps.append(_step("end", None, after, clusters))
    return steps


def amount_text(resource: str, value: float) -> str:
    if resource == "cpu" and value != int(value):
        return f"{round(value * 1000)}m"
    if resource == "memory" and value >= 2**30:
        return f"{value / 2**30:.4g}Gi"
    return f"{value:.6g}"


def _capacity_notes(number: int, wave: Sequence[PlannedWorkload]) -> list[tuple[str, list[str]]]:
    """One line per destination cluster the wave's moved replicas do not fit into, naming the
    workloads and the missing resources (and those workloads)."""
    by_cluster: dict[str, tuple[list[str], dict[str, float]]] = {}
    for w in wave:
        for cluster, missing in w.short.items():
            names, total = by_cluster.setdefault(cluster, ([], {}))
            names.append(w.name)
            for resource, amount in missing.items():
                total[resource] = max(total.get(resource, 0.0), amount)
    notes = []
    for cluster in sorted(by_cluster):
        names, total = by_cluster[cluster]
        lacking = ", ".join(f"{r} {amount_text(r, a)}" for r, a in sorted(total.items()))
        notes.append(
            (
                f"wave {number}: replicas moved to {cluster} do not fit its free "
                f"capacity (short of {lacking}) and would stay Pending: "
                f"{', '.join(names)}",
                names,
            )
        )
    return notes
