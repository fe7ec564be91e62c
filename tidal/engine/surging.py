"""The steps of a make-before-break wave (tidal.engine.strategies.Surge drives them):

1. with the wave's room held (tidal.engine.room), write the overrides raising each workload's
   destinations to their new share: one per distinct split, each selecting every workload of
   the wave that needs it (tidal.engine.surge_overrides);
2. wait until the surged replicas are ready in every destination, floors watched throughout;
3. (the move is the inner strategy's trigger) once scheduled, raise an override wherever the
   scheduler assigned more than it sets (dynamic weights), so it never caps the new split;
4. release: delete the overrides and give the room back (once the wave's bridge holds none).

Each step is journalled (tidal.engine.journal.SurgeRecord) before its side effect, so a resume
redoes exactly the unfinished one. `clean_up` removes the overrides of a run that stops (halt,
API error, rollback), keeping on a halt those whose removal would break a floor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from tidal.domain.floors import check_floors
from tidal.domain.plan import Amounts
from tidal.domain.surge import add, amounts_for
from tidal.engine import gates, room
from tidal.engine.events import RunWarning, WaveProgress
from tidal.engine.inflight import report_breaches
from tidal.engine.journal import SurgeRecord, WaveState
from tidal.engine.patience import patiently
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction, FailureReason, SurgeStep
from tidal.engine.steps import DONE, Answer, Failed, Pending, WakeOn
from tidal.engine.surge_follow import follow_scale, lift_rescaled
from tidal.engine.surge_overrides import sync
from tidal.karmada.bindings import key_of
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import KarmadaError
from tidal.karmada.objects import Obj
from tidal.karmada.overrides import (
    delete_override,
    list_overrides,
    ref_of,
)
from tidal.karmada.views import BindingView

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext, WaveInFlight


MEMBER_LOOK_SECONDS: Final = 0.25  # how often a wave looks for its pods in the members' totals
# steps past the raise: the wave's own Surge step has nothing to write
MOVED_ON: Final = (
    SurgeStep.MOVING,
    SurgeStep.PARKED,
    SurgeStep.RELEASING,
    SurgeStep.RELEASED,
    SurgeStep.KEPT,
)


def _planned(run: WaveInFlight, w: Workload) -> dict[str, int]:
    """Forward: the plan's surge."""
    return run.ctx.surges.get(w.name, {})


def _back_to_before(run: WaveInFlight, w: Workload) -> dict[str, int]:
    """Back (a workload that was surged forward): in each cluster it is in now and was in
    before, the larger share."""
    if not run.ctx.surges.get(w.name):
        return {}
    now = BindingView.of(run.watch.cache.get(w.binding_key)).assignment()
    then = run.ctx.before.get(w.name, {})
    return {
        c: max(n, now[c]) for c, n in then.items() if c in now and n != now[c]
    }  # listed: a member to override


# what a workload's override sets, each way
_WANTED: Final[Mapping[Direction, Callable[[WaveInFlight, Workload], dict[str, int]]]] = {
    Direction.FORWARD: _planned,
    Direction.BACK: _back_to_before,
}


def _targets(run: WaveInFlight) -> dict[str, dict[str, int]]:
    """What each workload's override sets (`_WANTED` of the run's direction)."""
    wanted_of = _WANTED[run.direction]
    out: dict[str, dict[str, int]] = {}
    for w in run.live:
        wanted = wanted_of(run, w)
        if wanted:
            out[w.name] = dict(sorted(wanted.items()))
    return out


def _need(run: WaveInFlight, targets: Mapping[str, Mapping[str, int]]) -> Amounts:
    total: Amounts = {}
    for w in run.live:
        wanted = targets.get(w.name)
        if not wanted:
            continue
        now = BindingView.of(run.watch.cache.get(w.binding_key)).assignment()
        extra = {c: n - now.get(c, 0) for c, n in wanted.items()}
        total = add(total, amounts_for(extra, w.request))
    return total


def record_for(run: WaveInFlight, *, journal: bool = True) -> SurgeRecord | None:
    """The wave's surge in its direction, planned on first use and journalled then unless
    `journal` is False (its overrides are about to be written, which journals it first);
    None: nothing to surge."""
    record = run.leg.surge
    if record is None:
        targets = _targets(run)
        if not targets:
            return None
        record = run.leg.surge = SurgeRecord(targets, _need(run, targets))
        if journal:
            run.ctx.save()
    return record


def start(run: WaveInFlight) -> SurgeRecord | None:
    """Write the overrides (a resume puts back whatever is missing; the wave's room is held
    already, tidal.engine.room); the record whose replicas to wait for (`surged`), None when
    the wave may move (also when it has nothing to surge)."""
    ctx = run.ctx
    record = record_for(run)
    if record is None or record.step in MOVED_ON:
        return None
    if record.step is SurgeStep.NONE:
        record.advance(SurgeStep.RESERVED)  # journalled with the overrides' names, next
    if record.step is SurgeStep.RESERVED or not record.overrides:
        sync(ctx, run.direction)
        record.advance(SurgeStep.SURGED)
        ctx.save()
    elif not set(record.overrides) <= set(ctx.overrides_written):
        sync(ctx, run.direction)  # a resume: put back whatever is missing
    return record


def raise_all(ctx: SwitchContext, records: Iterable[SurgeRecord]) -> None:
    """Raise the forward surges `records` (each planned, its room granted) together: the
    run's groups are written once for them all (tidal.engine.surge_overrides), so waves raised
    ahead in one pass cost one write per group they join, not one per group per wave."""
    records = [r for r in records if r.step is SurgeStep.NONE]
    if not records:
        return
    for record in records:
        record.advance(SurgeStep.RESERVED)
    sync(ctx, Direction.FORWARD)
    for record in records:
        record.advance(SurgeStep.SURGED)
    ctx.save()


def surged(run: WaveInFlight, record: SurgeRecord) -> ReadyWait:
    """The wait for the surged replicas: a floor breached anywhere fails the wave; a workload
    scaled meanwhile has its override lifted (tidal.engine.surge_follow)."""

    def short() -> list[str]:
        follow_scale(run.ctx, run.watch.cache)
        if room.pods_shown(run) or not _surged_absent(run, record):
            room.running(run)  # they exist: capacity counts them from now, ready or not
        return _surged_short(run, record)

    return ReadyWait(run, short, "surged")


def moving(run: WaveInFlight, record: SurgeRecord) -> None:
    """The surged replicas run: the move may go."""
    room.running(run, last_chance=True)  # (a bridge of the wave ran its replicas before)
    record.advance(SurgeStep.MOVING)
    run.ctx.save()


def _surged_absent(run: WaveInFlight, record: SurgeRecord) -> bool:
    """Some raised replica has no pod in its member yet: the member workload's status.replicas
    (created pods, bound to a node or not, as Karmada's resource summary and kube-scheduler
    count them) below the raise; a kind that reports no such field counts its ready ones."""

    def existing(view: BindingView) -> dict[str, int]:
        ready = view.ready(run.ctx.ready_field)
        return {c: ready.get(c, 0) if n is None else n for c, n in view.member_replicas().items()}

    return bool(
        not_serving(
            run,
            record.targets,
            lambda n, assigned, have: n > assigned and have < n,
            counted=existing,
        )
    )


def _surged_short(run: WaveInFlight, record: SurgeRecord) -> list[str]:
    """`workload cluster ready/wanted` for every raised replica not ready yet: clusters the
    override raises above the binding's assignment (a held one has nothing new to wait for);
    a workload whose binding is gone (its template deleted) is the gates' to report."""
    return not_serving(run, record.targets, lambda n, assigned, ready: n > assigned and ready < n)


def not_serving(
    run: WaveInFlight,
    targets: Mapping[str, Mapping[str, int]],
    short: Callable[[int, int, int], bool],
    gone: Collection[str] = (),
    counted: Callable[[BindingView], Mapping[str, int]] | None = None,
) -> list[str]:
    """`workload cluster ready/wanted` for each (workload, cluster) of `targets` (wanted
    replicas) that `short(wanted, assigned, ready)` finds short, from the wave's watch
    (`counted`: what to count per cluster instead of the ready replicas); a workload without a
    binding, or in `gone`, is left to the gates."""
    out = []
    for w in run.live:
        wanted = targets.get(w.name)
        binding = run.watch.cache.get(w.binding_key)
        if not wanted or binding is None or w.name in gone:
            continue
        view = BindingView.of(binding)
        assigned = view.assignment()
        ready = view.ready(run.ctx.ready_field) if counted is None else counted(view)
        out += [
            f"{w.name} {c} {ready.get(c, 0)}/{n}"
            for c, n in wanted.items()
            if short(n, assigned.get(c, 0), ready.get(c, 0))
        ]
    return out


class ReadyWait:
    """A wait until `short_of()` names nothing (replicas not ready yet): a floor breached
    anywhere fails the wave, and so does the step's deadline; each `check` is one look."""

    def __init__(self, run: WaveInFlight, short_of: Callable[[], list[str]], what: str) -> None:
        ctx = run.ctx
        self.run, self.short_of, self.what = run, short_of, what
        self.tracker = gates.GateTracker(
            [], ctx.everyone, ctx.floors, ctx.before, ctx.ready_field, ctx.memo, ctx.recovering
        ).load(run.watch.cache)
        # another team's binding changes nothing here: only the run's wake the step
        self.ours = frozenset(
            {w.binding_key for w in ctx.everyone} | {w.binding_key for w in run.live}
        )

    def check(self) -> Answer:
        run, ctx = self.run, self.run.ctx
        down = run.health.check()
        if down is not None:
            return Failed.of(down)
        report = self.tracker.report()
        if report.violations:
            report_breaches(ctx, run.wave.index, report.violations)
            return Failed(FailureReason.FLOOR_BREACH, report.reason)
        short = self.short_of()
        if not short:
            return DONE
        if run.deadline - ctx.clock.monotonic() <= 0:
            return Failed(
                FailureReason.TIMEOUT,
                f"{self.what} replicas not ready within waveTimeout "
                f"{ctx.wave_timeout:g}s: {', '.join(short[:5])}",
            )
        base = ctx.event_base(run.wave.index)
        ctx.emitter.emit(WaveProgress(**base, ready={}, assigned={}, converged=0, total=len(short)))
        deadline = run.deadline
        if room.watching_growth(run):  # the members' watches show the pods first: look there
            deadline = min(deadline, ctx.clock.monotonic() + MEMBER_LOOK_SECONDS)
        return Pending(WakeOn(keys=self.ours, seen=self.tracker.update), deadline)


def fit(run: WaveInFlight) -> None:
    """After the move is scheduled: wherever the binding now assigns more than an override
    sets (dynamic weights), raise the override to the assignment, so it keeps the destination
    at max(surge, assigned) and never caps the new split."""
    ctx, record = run.ctx, run.leg.surge
    if record is None or record.step is not SurgeStep.MOVING:
        return
    changed = False
    for w in run.live:
        wanted = record.targets.get(w.name)
        if not wanted:
            continue
        now = BindingView.of(run.watch.cache.get(w.binding_key)).assignment()
        raised = {c: max(n, now.get(c, 0)) for c, n in wanted.items()}
        if raised != wanted:
            record.targets[w.name] = raised
            changed = True
    if changed:
        sync(ctx, run.direction)


def release(run: WaveInFlight) -> Answer:
    """The wave converged on its new split: once Karmada has written that split into the
    members' Works, give the capacity back, and take the wave's workloads out of the run's
    overrides, unless they now set exactly what Karmada assigns (parked: they change nothing,
    and go with the run's last release)."""
    ctx, record = run.ctx, run.leg.surge
    if record is None or not record.active or record.step is SurgeStep.PARKED:
        return DONE
    if record.step is SurgeStep.MOVING:
        answer = _applied(run, record)
        if answer is not DONE:
            return answer
        if _restated(run, record):
            record.advance(SurgeStep.PARKED)
            ctx.save()
            room.release_room(ctx, run.wave, run.leg)
            return DONE
    _remove(ctx, run.wave, record, run.direction)
    return DONE


def _restated(run: WaveInFlight, record: SurgeRecord) -> bool:
    """Every override of the wave sets, in each cluster it names, the replicas the binding
    now assigns there (a workload whose binding is gone selects nothing)."""
    for w in run.live:
        wanted = record.targets.get(w.name)
        binding = run.watch.cache.get(w.binding_key)
        if not wanted or binding is None:
            continue
        assigned = BindingView.of(binding).assignment()
        if any(assigned.get(c, 0) != n for c, n in wanted.items()):
            return False
    return True


def _not_applied(run: WaveInFlight, record: SurgeRecord) -> list[str]:
    """`workload cluster` wherever a member still runs the split from before the move: a
    cluster no longer assigned that still reports the workload, or one the override does not
    raise that runs more replicas than assigned. Until the binding controller has rendered the
    new split, an override deleted would be re-rendered onto the old one (the destination
    drops to its old share while the source still holds its replicas)."""
    out = []
    for w in run.live:
        binding = run.watch.cache.get(w.binding_key)
        if binding is None:
            continue
        view = BindingView.of(binding)
        out += [
            f"{w.name} {cluster}"
            for cluster in gates.old_split_members(
                view.assignment(), record.targets.get(w.name) or {}, view.member_replicas()
            )
        ]
    return out


def _applied(run: WaveInFlight, record: SurgeRecord) -> Answer:
    """Whether every member runs the new split (see _not_applied); Pending until the step's
    deadline."""
    ctx = run.ctx
    follow_scale(ctx, run.watch.cache)
    down = run.health.check()
    if down is not None:
        return Failed.of(down)
    late = _not_applied(run, record)
    if not late:
        return DONE
    if run.deadline - ctx.clock.monotonic() <= 0:
        return Failed(
            FailureReason.TIMEOUT,
            "Karmada has not applied the new split to the members within "
            f"waveTimeout {ctx.wave_timeout:g}s: {', '.join(late[:5])}",
        )
    return Pending(WakeOn(), run.deadline)  # the watch keeps its cache


def _remove(ctx: SwitchContext, wave: WaveState, record: SurgeRecord, direction: Direction) -> None:
    """Take the record's workloads out of the run's overrides (tidal.engine.surge_overrides:
    groups left empty deleted, by owner labels when nothing is held any more), retried on
    429/5xx/timeouts within one waveTimeout (tidal.engine.patience); what an error leaves
    behind is exactly what the record still names."""
    record.advance(SurgeStep.RELEASING)
    ctx.save()
    sync(ctx, direction)
    record.advance(SurgeStep.RELEASED)
    ctx.save()
    room.release_room(ctx, wave, wave.leg(direction))


def _breaks_floor(
    ctx: SwitchContext,
    record: SurgeRecord,
    bindings: Mapping[str, Obj | None],
    by_name: Mapping[str, Workload],
) -> str:
    """The first floor that removing the record's overrides would break ('' if none): each
    member falls back to its assigned replicas."""
    for name in sorted(record.targets):
        w = by_name.get(name)
        if w is None:
            continue
        binding = bindings.get(w.binding_key)
        if binding is None:  # its template is gone: nothing left to hold a floor for
            continue
        view = BindingView.of(binding)
        assigned = view.assignment()
        ready = view.ready(ctx.ready_field)
        after = {c: min(ready.get(c, 0), assigned.get(c, 0)) for c in ready}
        kept = set(ctx.before.get(name, {})) & set(assigned)
        replicas = view.replicas if view.replicas is not None else w.replicas  # spec now
        found = check_floors(name, replicas, after, ctx.floors, kept)
        if found:
            return str(found[0])
    return ""


def clean_up(ctx: SwitchContext, *, keep_if_breaking: bool, forward_only: bool = False) -> None:
    """Remove the overrides of every wave still surged (a run that stops), in one pass per
    direction; with `keep_if_breaking` (a halt) keep those whose removal would break a floor,
    and say so. `forward_only`: leave the rollback's own surges (a resumed rollback goes on
    with them)."""
    records = _active(ctx, forward_only=forward_only)
    if not records:
        return
    by_name = {w.name: w for w in ctx.everyone}
    bindings = _bindings(ctx, ctx.everyone) if keep_if_breaking else {}
    for wave in {id(w): w for w, _r, _b in records}.values():  # never kept: a stale cap
        lift_rescaled(ctx, wave, bindings, by_name)
    kept = _kept(ctx, records, bindings, by_name) if keep_if_breaking else []
    _release_all(ctx, _without(records, kept), strict=False)
    for wave, record, direction in kept:
        _keep(ctx, wave, record, direction)


def _kept(
    ctx: SwitchContext,
    records: list[tuple[WaveState, SurgeRecord, Direction]],
    bindings: Mapping[str, Obj | None],
    by_name: Mapping[str, Workload],
) -> list[tuple[WaveState, SurgeRecord, Direction]]:
    """The records whose removal would break a floor, marked kept (with why)."""
    out = []
    for wave, record, direction in records:
        why = _breaks_floor(ctx, record, bindings, by_name)
        if why:
            record.kept = f"removing it would break a floor: {why}"
            if record.step is not SurgeStep.KEPT:
                record.advance(SurgeStep.KEPT)
            out.append((wave, record, direction))
    return out


def _without(
    records: list[tuple[WaveState, SurgeRecord, Direction]],
    kept: list[tuple[WaveState, SurgeRecord, Direction]],
) -> list[tuple[WaveState, SurgeRecord, Direction]]:
    """`records` but those kept now (one a halt kept before may go now)."""
    keep = {id(record) for _w, record, _d in kept}
    return [x for x in records if id(x[1]) not in keep]


def release_parked(ctx: SwitchContext) -> None:
    """The run's last release (it finished): remove the overrides its parked waves left in
    place, one deletecollection by the owner labels; an API error fails the run as a wave's
    release would (status names what stays)."""
    _release_all(ctx, _active(ctx), strict=True)


def _active(
    ctx: SwitchContext, *, forward_only: bool = False
) -> list[tuple[WaveState, SurgeRecord, Direction]]:
    """Every surge of the run whose overrides may exist (`forward_only`: forward ones only),
    with its wave and direction."""
    return [
        (w, r, leg.direction)
        for w in ctx.state.waves
        for leg in (w.legs[:1] if forward_only else w.legs)
        if (r := leg.surge) is not None and r.active
    ]


def _release_all(
    ctx: SwitchContext, records: list[tuple[WaveState, SurgeRecord, Direction]], *, strict: bool
) -> None:
    """Take every record's workloads out of the run's overrides, one pass per direction; the
    room of those that still held some goes back. `strict`: an API error is raised, else said
    (a stop's cleanup goes on: the next run finds what stays by its labels)."""
    if not records:
        return
    held = {id(r) for _w, r, _d in records if r.step in room.HOLDING}
    for _wave, record, _direction in records:
        if record.step is not SurgeStep.RELEASING:
            record.advance(SurgeStep.RELEASING)
    ctx.save()
    for direction in sorted({d for _w, _r, d in records}):
        try:
            sync(ctx, direction)
        except KarmadaError as exc:
            if strict:
                raise
            ctx.emitter.emit(
                RunWarning(
                    **ctx.event_base(None),
                    code="cleanup",
                    message=f"override(s) of the run's {direction.value} surges: {exc}",
                )
            )
            continue
        for wave, record, d in records:
            if d is direction:
                record.advance(SurgeStep.RELEASED)
                if id(record) in held:
                    room.release_room(ctx, wave, wave.leg(direction))
        ctx.save()


def _keep(ctx: SwitchContext, wave: WaveState, record: SurgeRecord, direction: Direction) -> None:
    """Leave the record's overrides on a halt (removing them would break a floor), and say so."""
    room.release_room(
        ctx, wave, wave.leg(direction)
    )  # its replicas stay: Cluster status counts them
    note = (
        f"wave {wave.index}: override(s) {', '.join(record.overrides)} kept: "
        f"{record.kept}; they are removed by the next run of this schedule"
    )
    if note not in ctx.state.warnings:
        ctx.state.warnings.append(note)
    ctx.save()
    ctx.emitter.emit(RunWarning(**ctx.event_base(wave.index), code="surge_kept", message=note))


def _bindings(ctx: SwitchContext, workloads: Iterable[Workload]) -> dict[str, Obj | None]:
    """The workloads' bindings now (per namespace; from the daemon's shared cache if any)."""
    out: dict[str, Obj | None] = {}
    for namespace in sorted({w.key.namespace for w in workloads}):
        items = ctx.list_bindings(namespace or None, cluster_scoped=not namespace)
        out.update({key_of(o): o for o in items})
    return out


def leftovers_exist(client: KarmadaClient, schedule: str) -> bool:
    """Any override of `schedule` (of any run) exists."""
    return bool(list_overrides(client, schedule=schedule))


def remove_leftovers(ctx: SwitchContext) -> int:
    """Overrides of this schedule left by another run (crashed, halted, forgotten): found by
    their labels and deleted, unless removing one would break a floor (then kept, and said);
    how many were kept."""
    leftovers = [
        view
        for view in list_overrides(ctx.client, schedule=ctx.schedule)
        if view.run_id != ctx.run_id
    ]
    if not leftovers:
        return 0
    kept = 0
    bindings = _bindings(ctx, ctx.everyone)
    by_name = {w.name: w for w in ctx.everyone}
    by_selector = {(w.key.namespace, w.key.kind, w.key.name): w for w in ctx.everyone}
    for view in leftovers:
        ref = ref_of(view)
        selected = [
            by_selector.get((namespace, kind, name))
            for _api, kind, namespace, name in view.templates()
        ]
        targets: dict[str, dict[str, int]] = {w.name: {} for w in selected if w is not None}
        why = _breaks_floor(ctx, SurgeRecord(targets), bindings, by_name)
        if why:
            note = f"{ref} (left by run {view.run_id}) kept: removing it would break a floor: {why}"
            if note not in ctx.state.warnings:
                ctx.state.warnings.append(note)
            ctx.emitter.emit(RunWarning(**ctx.event_base(None), code="surge_kept", message=note))
            kept += 1
            continue
        patiently(
            ctx.client,
            ctx.clock,
            ctx.wave_timeout,
            functools.partial(delete_override, ctx.client, ref),
        )
        ctx.emitter.emit(
            RunWarning(
                **ctx.event_base(None),
                code="surge_leftover",
                message=f"{ref} left by run {view.run_id}: removed",
            )
        )
    return kept
