"""From a schedule window to a plan: resolve, choose the trigger, predict, cut waves, and
check the floors (pure domain work on what resolve read)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.floors import FloorRule
from tidal.domain.patch_scope import added_selectors, beyond_placement
from tidal.domain.placement import Placement
from tidal.domain.plan import Plan, PlannedWorkload, make_plan
from tidal.domain.prediction import (
    ClusterFacts,
    Predictor,
    WorkloadFacts,
    candidates,
    models_lack,
)
from tidal.domain.schedule import Rollout, TidalSchedule, Window
from tidal.domain.surge import Room, SurgeSpec, make_surge_plan
from tidal.domain.team_capacity import TeamEstimate
from tidal.domain.waves import ordered, split_waves
from tidal.engine import policy_change, triggers
from tidal.engine.custom_kinds import custom_kind_refusals
from tidal.engine.resolve import PolicyTarget, Selection, Workload, resolve
from tidal.engine.states import Strategy, Trigger
from tidal.engine.strategies import strategy_for
from tidal.engine.write_check import PolicyWritesRefused, dry_run_writes
from tidal.karmada.client import KarmadaClient
from tidal.karmada.clusters import list_clusters
from tidal.karmada.informer import SharedReads
from tidal.karmada.policies import PolicyLookup
from tidal.karmada.views import BindingView, PolicyView


@dataclass
class SwitchPlan:
    schedule: TidalSchedule
    window: Window
    rollout: Rollout
    selection: Selection
    trigger: Trigger
    lazy: bool
    floors: list[FloorRule]
    clusters: list[ClusterFacts]
    plan: Plan
    pending: list[Workload]
    noop: bool = False
    warnings: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # why the plan must not be carried out

    @property
    def by_name(self) -> dict[str, Workload]:
        return {w.name: w for w in self.selection.workloads}


def needs_move(
    trigger: Trigger,
    workload: Workload,
    target_placement: Placement | None,
    policies_done: bool,
    *,
    placement_of: Callable[[Workload], Placement | None] = triggers.binding_placement,
) -> bool:
    """Does the workload still need the window's change (as the trigger strategy sees it)?"""
    return strategy_for(trigger).needs_move(placement_of(workload), target_placement, policies_done)


class _BindingPlacements:
    """Bindings' placements, each distinct raw placement normalised once: the bindings of one
    policy nearly all carry the same placement, and equal raw placements give equal values."""

    LIMIT = 16  # distinct placements remembered

    def __init__(self) -> None:
        self._seen: list[tuple[Any, Placement | None]] = []  # (raw, placement)

    def __call__(self, workload: Workload) -> Placement | None:
        raw = BindingView.of(workload.binding).placement_as_read
        for seen, placement in self._seen:
            if seen == raw:
                return placement
        placement = Placement.of(raw)
        if len(self._seen) < self.LIMIT:
            self._seen.append((raw, placement))
        return placement


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cycle collector: a plan allocates many long-lived, acyclic objects (decoded
    list pages), and each automatic collection would walk all of them again for nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_plan(
    client: KarmadaClient,
    schedule: TidalSchedule,
    window_name: str,
    *,
    trigger: Trigger | None = None,
    reads: SharedReads | None = None,
    team: TeamEstimate | None = None,
    cached_policies: bool = True,
) -> SwitchPlan:
    """Read the control plane and plan the window's switch (writes nothing); bindings come
    from `reads` (the daemon's shared informers) when given, and so do the policies for a run
    alone's informers (`reads.private`) unless `cached_policies` is False (one was written a
    moment ago). With `team` (a team estimator deployed beside karmada-scheduler),
    DynamicWeight and Aggregated splits are predicted from the minimum of the general
    estimate and the team's, as the scheduler takes it."""
    with _gc_paused():
        return _build_plan(
            client,
            schedule,
            window_name,
            trigger=trigger,
            reads=reads,
            team=team,
            policies=reads.find_policy
            if reads is not None and reads.private and cached_policies
            else None,
        )


def _model_warnings(
    planned: list[PlannedWorkload], clusters: list[ClusterFacts], modes: dict[str, str]
) -> list[str]:
    """One line per cluster whose resource models grade none of a resource that workloads
    spread by capacity request: the general estimator answers 0 there for them."""
    lacking: dict[str, tuple[set[str], set[str]]] = {}
    by_name = {c.name: c for c in clusters}
    for p in planned:
        if modes.get(p.name) not in ("dynamic", "aggregated"):
            continue
        for name in sorted(p.candidates):
            missing = models_lack(by_name[name], p.request) if name in by_name else []
            if missing:
                resources, workloads = lacking.setdefault(name, (set(), set()))
                resources.update(missing)
                workloads.add(p.name)
    return [
        f"cluster {name}: its resource models grade no {', '.join(sorted(res))}, so "
        f"Karmada's general estimator answers 0 replicas there for {len(wl)} workload(s) "
        "requesting it; add grades for it to the Cluster's spec.resourceModels "
        "(docs/deploying.md)"
        for name, (res, wl) in sorted(lacking.items())
    ]


def _build_plan(
    client: KarmadaClient,
    schedule: TidalSchedule,
    window_name: str,
    *,
    trigger: Trigger | None,
    reads: SharedReads | None = None,
    team: TeamEstimate | None = None,
    policies: PolicyLookup | None = None,
) -> SwitchPlan:
    window = schedule.window(window_name)
    rollout = schedule.rollout_for(window_name)
    selection = resolve(
        client,
        schedule,
        window,
        bindings=reads.list_bindings if reads is not None else None,
        policies=policies,
    )
    refused = dry_run_writes(client, selection.policies)
    if refused:
        raise PolicyWritesRefused(window.name, refused)
    kind_refusals = custom_kind_refusals(
        client, schedule, selection.workloads, surge=Strategy(rollout.strategy) is Strategy.SURGE
    )
    chosen = trigger or triggers.choose(window.trigger, selection.policies, selection.workloads)
    strategy = strategy_for(chosen)
    lazy = strategy.marks_lazy
    listed = reads.list_clusters() if reads is not None else list_clusters(client)
    clusters = [ClusterFacts.from_cluster(c) for c in listed]
    floors = [FloorRule.from_model(f) for f in rollout.floors]
    targets = {t.key: t for t in selection.policies}
    placements = {key: Placement(t.target_placement) for key, t in targets.items()}
    pending, done = _pending(chosen, selection, placements, window.name)
    size = rollout.wave_size.for_total(len(pending)) if pending else 1
    # predicted in the order the waves run, each wave against the capacity at its start
    waves = (
        split_waves(
            ordered(
                pending, key=lambda w: w.key, replicas=lambda w: w.replicas, order=rollout.order
            ),
            size,
        )
        if pending
        else []
    )
    # the release whose scheduler rules the plan follows
    predictors = {
        key: Predictor(t.target_placement, clusters, client.karmada_release)
        for key, t in targets.items()
    }
    planned, modes = _predict(waves, targets, clusters, predictors, team, fresh=strategy.fresh)
    plan = _cut(planned, rollout, size, floors, clusters, bridge=chosen is Trigger.TOUCH)
    warnings = (
        list(selection.warnings)
        + _swap_warnings(selection.policies, placements)
        + plan.capacity
        + _model_warnings(planned, clusters, modes)
    )
    scope_warnings, refusals = scope_report(selection.policies)
    refusals = kind_refusals + refusals + coverage_refusals(selection)
    warnings += scope_warnings + _skipped_warnings(selection)
    by_name = {w.name: w for w in pending}
    in_waves = [by_name[p.name] for p in plan.workloads]
    return SwitchPlan(
        schedule,
        window,
        rollout,
        selection,
        chosen,
        lazy,
        floors,
        clusters,
        plan,
        in_waves,
        noop=not pending and done,
        warnings=warnings,
        refusals=refusals,
    )


def _pending(
    chosen: Trigger, selection: Selection, placements: dict[str, Placement], window: str
) -> tuple[list[Workload], bool]:
    """The workloads that still need the window's change; and whether every policy has it."""
    done = all(
        policy_change.is_done(t.to_obj if t.swap_from else t.current, t, window)
        for t in selection.policies
    )
    placement_of = _BindingPlacements()
    pending = [
        w
        for w in selection.workloads
        if needs_move(chosen, w, placements[w.policy], done, placement_of=placement_of)
    ]
    return pending, done


def _predict(
    waves: list[list[Workload]],
    targets: dict[str, PolicyTarget],
    clusters: list[ClusterFacts],
    predictors: dict[str, Predictor],
    team: TeamEstimate | None,
    *,
    fresh: bool,
) -> tuple[list[PlannedWorkload], dict[str, str]]:
    """Each workload's predicted split, wave by wave (each wave against the capacity at its
    start); and each workload's division mode."""
    planned: list[PlannedWorkload] = []
    modes: dict[str, str] = {}
    for wave in waves:
        for w in wave:
            names = candidates(targets[w.policy].target_placement, clusters, w.current)
            estimates = (
                team(w.key.namespace, w.key.kind, w.key.name, w.request, names)
                if team is not None and w.replicas is not None
                else {}
            )
            modes[w.name] = predictors[w.policy].mode
            prediction = predictors[w.policy].predict(
                WorkloadFacts(w.name, w.uid, w.replicas, w.current, w.request, estimates),
                fresh=fresh,
            )
            planned.append(
                PlannedWorkload(
                    w.key,
                    w.replicas,
                    w.current,
                    prediction.assignment,
                    prediction.exact,
                    prediction.problem,
                    w.uid,
                    prediction.short,
                    prediction.pending,
                    w.request,
                    candidates=frozenset(names),
                    revisable=bool(w.replica_paths),
                )
            )
        for predictor in predictors.values():
            predictor.next_wave()
    return planned, modes


def _cut(
    planned: list[PlannedWorkload],
    rollout: Rollout,
    size: int,
    floors: list[FloorRule],
    clusters: list[ClusterFacts],
    *,
    bridge: bool,
) -> Plan:
    """The plan of the predicted workloads by the rollout's strategy."""
    if Strategy(rollout.strategy) is Strategy.SURGE:
        return make_surge_plan(
            planned,
            wave_size=size,
            floors=floors,
            order=rollout.order,
            rooms={c.name: Room(c.free, c.model_nodes) for c in clusters},
            spec=SurgeSpec(
                rollout.surge.headroom_percent, rollout.surge.when_no_room, bridge=bridge
            ),
        )
    return make_plan(planned, wave_size=size, floors=floors, order=rollout.order)


def _skipped_warnings(selection: Selection) -> list[str]:
    return [
        f"{s.workload} left out: {s.reason}" + (f" ({s.detail})" if s.detail else "")
        for s in selection.skipped
    ]


def coverage_refusals(selection: Selection) -> list[str]:
    """spec.workloads must select every template the window's policies move: one it misses
    moves all at once when the Lazy is lifted (no waves, floors or surge); and a selector
    matching nothing is a mistake, not a no-op. Rule: refused, never widened silently."""
    out = []
    if selection.selector_empty:
        out.append(
            "spec.workloads: selects no template at all; fix the selector (kind, "
            "namespace, labels) or remove it to take every template the policies claim"
        )
    for key, names in sorted(selection.outside_selector.items()):
        shown = ", ".join(sorted(names)[:10]) + (
            f" and {len(names) - 10} more" if len(names) > 10 else ""
        )
        out.append(
            f"spec.workloads: {key} claims {len(names)} template(s) the selector "
            f"misses ({shown}); they would move all at once, outside the waves, floors "
            "and surge; widen spec.workloads to select them, or give them their own "
            'policy (or annotate them tidal.io/exclude: "true")'
        )
    return out


def scope_report(targets: list[PolicyTarget]) -> tuple[list[str], list[str]]:
    """(warnings, refusals) about what the window changes beyond the placement: fields a patch
    sets under allowFields, and templates a swap's `to` policy would select that `from` did
    not (refused unless allowFields lists spec.resourceSelectors)."""
    warnings: list[str] = []
    refusals: list[str] = []
    for t in targets:
        change = t.change
        if change.patch is not None:
            beyond = beyond_placement(change.patch)
            if beyond:
                warnings.append(
                    f"{t.key}: the patch also changes {', '.join(beyond)} (allowFields)"
                )
            continue
        if t.from_obj is None:
            continue  # swapped already (or `from` is gone): nothing to compare with
        added = added_selectors(t.from_obj.get("spec"), t.target_spec)
        if not added:
            continue
        what = f"swap {t.swap_from} -> {t.name} selects what {t.swap_from} did not: " + "; ".join(
            added
        )
        if "spec.resourceSelectors" in change.allow_fields:
            warnings.append(what + " (allowFields: spec.resourceSelectors)")
        else:
            refusals.append(
                what + "; select only what the old policy selected, or list "
                "spec.resourceSelectors in the swap's allowFields"
            )
    return warnings, refusals


def _swap_warnings(targets: list[PolicyTarget], placements: dict[str, Placement]) -> list[str]:
    """A swap that changes the placement cannot be paced by waves: deleting `from` releases
    every template at once and the new policy claims them all, Lazy or not."""
    out = []
    for t in targets:
        before = PolicyView.of(t.from_obj).placement
        if t.swap_from and before is not None and before != placements[t.key]:
            out.append(
                f"swap {t.swap_from} -> {t.name} changes the placement: Karmada may move "
                "every workload at once when the old policy is deleted; write the "
                "change as a patch of one policy so that waves pace it"
            )
    return out
