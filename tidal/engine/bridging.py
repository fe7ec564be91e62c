"""The bridge of a make-before-break wave (tidal.domain.bridge says why), for workloads whose
destination has no member Work while their policy is Lazy (trigger touch):

1. with the wave's room held (tidal.engine.room, one hold with the wave's surge), mark it
   reserved;
2. write the bridge placement on each of their policies (Duplicated over every cluster they
   leave or reach; the policy stays Lazy, so no other template follows it);
3. touch only the bridged templates and wait until every one of those clusters serves their
   full count (floors watched throughout);
4. put the window's placement back on the policies; the wave's own touch then moves every
   workload, and the destinations keep serving while the sources' Works go;
5. after convergence give the room back (once the wave's surge holds none).

Each step is journalled (tidal.engine.journal.BridgeRecord) before its side effect. The policy
patches are the run's own writes to a Lazy policy: they carry no detector settle wait. A run
that stops (halt, API error, rollback) puts every bridged policy's placement back
(`clean_up`); any run does so before it plans, from the policy's own mark, so a lost journal
loses nothing (`restore_marked`); a resumed run then redoes the unfinished step.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from tidal.domain.bridge import bridge_clusters, bridge_placement, bridge_shares, needs_bridge
from tidal.domain.placement import Placement
from tidal.domain.plan import Amounts
from tidal.domain.schedule import TidalSchedule
from tidal.domain.surge import add, amounts_for
from tidal.engine import room, triggers
from tidal.engine.events import BridgeStepped, RunWarning
from tidal.engine.journal import BridgedPolicy, BridgeRecord, PolicyRecord
from tidal.engine.patience import patiently
from tidal.engine.resolve import Workload
from tidal.engine.states import BridgeStep, Direction, Phase, Trigger
from tidal.engine.surging import ReadyWait, not_serving
from tidal.karmada import policies as api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import Conflict, KarmadaError
from tidal.karmada.names import BRIDGE_PLACEMENT
from tidal.karmada.patches import MergePatch
from tidal.karmada.policies import PolicyLookup
from tidal.karmada.views import BindingView, PolicyView

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext, WaveInFlight

CONFLICT_ATTEMPTS = 6
NO_PLACEMENT = Placement({})  # a policy without one: its placement is written back as {}


def _planned(run: WaveInFlight, w: Workload, now: dict[str, int]) -> dict[str, int] | None:
    """Forward: the split the plan bridges it to (None: not bridged)."""
    return run.ctx.bridges.get(w.name) or None


def _back_to_before(run: WaveInFlight, w: Workload, now: dict[str, int]) -> dict[str, int] | None:
    """Back: its split from before the run, when its bridge forward was needed and the way
    back has no member either."""
    forward = run.wave.forward.bridge
    if forward is None or w.name not in forward.targets:
        return None
    then = run.ctx.before.get(w.name, {})
    return dict(then) if needs_bridge(now, then) else None


# the split a workload of the wave is bridged to, each way (None: not bridged)
_BRIDGED_TO: Final[
    Mapping[Direction, Callable[[WaveInFlight, Workload, dict[str, int]], dict[str, int] | None]]
] = {Direction.FORWARD: _planned, Direction.BACK: _back_to_before}


def _bridged(run: WaveInFlight) -> list[tuple[Workload, dict[str, int], dict[str, int]]]:
    """(workload, its split now, the split it moves to) for each workload of the wave to
    bridge (`_BRIDGED_TO` of the run's direction)."""
    to = _BRIDGED_TO[run.direction]
    out = []
    for w in run.live:
        if not w.replicas:
            continue
        now = BindingView.of(run.watch.cache.get(w.binding_key)).assignment()
        then = to(run, w, now)
        if then is not None:
            out.append((w, now, then))
    return out


def _policy_record(ctx: SwitchContext, key: str) -> PolicyRecord | None:
    return next((r for r in ctx.state.policies if r.key == key), None)


def _new_record(run: WaveInFlight) -> BridgeRecord | None:
    """What the wave's bridge does (None: nothing to bridge): per policy the clusters its
    bridged workloads leave or reach, each workload duplicated over its policy's clusters."""
    ctx = run.ctx
    chosen = _bridged(run)
    clusters: dict[str, set[str]] = {}
    for w, now, then in chosen:
        clusters.setdefault(w.policy, set()).update(bridge_clusters(now, then))
    targets: dict[str, dict[str, int]] = {}
    need: Amounts = {}
    policies: list[BridgedPolicy] = []
    for key in sorted(clusters):
        record = _policy_record(ctx, key)
        if record is None:
            continue
        name = record.followed(run.direction)
        current = api.get_policy(ctx.client, record.kind, name, record.namespace)
        original = (PolicyView(current).placement or NO_PLACEMENT).raw()
        policies.append(
            BridgedPolicy(
                record.kind,
                name,
                record.namespace,
                original,
                bridge_placement(original, clusters[key]),
            )
        )
        for w, now, _then in chosen:
            if w.policy == key and w.replicas:
                targets[w.name] = bridge_shares(w.replicas, clusters[key])
                extra = {c: n - now.get(c, 0) for c, n in targets[w.name].items()}
                need = add(need, amounts_for(extra, w.request))
    if not targets:
        return None
    return BridgeRecord(targets, need, policies=policies)


def _step(run: WaveInFlight, record: BridgeRecord, step: BridgeStep) -> None:
    """Journal `step`, then say so (its side effect comes after)."""
    ctx = run.ctx
    record.advance(step)
    ctx.save()
    ctx.emitter.emit(
        BridgeStepped(
            **ctx.event_base(run.wave.index),
            step=step,
            workloads=tuple(sorted(record.targets)),
            rollback=run.direction.rollback,
        )
    )


def record_for(run: WaveInFlight) -> BridgeRecord | None:
    """The wave's bridge in its direction, planned and journalled on first use (None: nothing
    to bridge, or a rebalance, which moves without a Lazy policy to bridge with)."""
    ctx = run.ctx
    if ctx.trigger is not Trigger.TOUCH or not ctx.strategy.marks_lazy:
        return None
    record = run.leg.bridge
    if record is None:
        record = run.leg.bridge = _new_record(run)
        if record is None:
            return None
        ctx.save()
    return record


def start(run: WaveInFlight) -> tuple[BridgeRecord, ReadyWait | None] | None:
    """Write the bridge placement and touch the bridged templates (each step resumable; the
    wave's room is held already, tidal.engine.room); the record and the wait until they serve
    in every destination (None: they did), or None when the wave may move (also when it has
    nothing to bridge)."""
    record = record_for(run)
    if record is None or record.step in (BridgeStep.RESTORED, BridgeStep.RELEASED):
        return None
    if record.step is BridgeStep.NONE:
        _step(run, record, BridgeStep.RESERVED)
    if record.step is BridgeStep.RESERVED:
        _step(run, record, BridgeStep.PLACING)
    if record.step is BridgeStep.PLACING:
        _place(run.ctx.client, record, bridge=True, owner=owner_mark(run.ctx))
        _step(run, record, BridgeStep.TOUCHING)
    if record.step is BridgeStep.TOUCHING:  # a resume: its recovery put it back
        _place(run.ctx.client, record, bridge=True, owner=owner_mark(run.ctx))
        return record, _touch(run, record)
    return record, None


def finish(run: WaveInFlight, record: BridgeRecord) -> None:
    """The bridged replicas serve: put the window's placement back (the wave's own touch then
    moves every workload)."""
    if record.step is BridgeStep.TOUCHING:
        if run.leg.surge is None:
            room.running(run)  # (else the wave's surge says so once its replicas run too)
        _step(run, record, BridgeStep.RESTORING)
    patiently(
        run.ctx.client,
        run.ctx.clock,
        run.ctx.wave_timeout,
        functools.partial(_place, run.ctx.client, record, bridge=False),
    )
    _strays(run, record)
    _step(run, record, BridgeStep.RESTORED)


def _with_bridge_placement(run: WaveInFlight, record: BridgeRecord) -> list[Workload]:
    """The run's workloads, outside the bridged and live ones, whose bindings carry the
    bridge placement."""
    bridges = [Placement(p.bridge) for p in record.policies]
    live = {w.name for w in run.live}
    return [
        w
        for w in run.ctx.everyone
        if w.name not in record.targets
        and w.name not in live
        and BindingView.of(run.watch.cache.get(w.binding_key)).placement in bridges
    ]


def _moved(run: WaveInFlight) -> set[str]:
    """The workloads of waves already moved (going the plan's way; none going back)."""
    if not run.direction.planned:
        return set()
    return {
        str(k) for wave in run.ctx.state.waves if wave.result is not None for k in wave.workloads
    }


def _strays(run: WaveInFlight, record: BridgeRecord) -> None:
    """Templates other than the bridged ones that picked up the bridge placement (changed by
    someone, e.g. an autoscaler, while it was on their Lazy policy): those of waves already
    moved are touched again (back to the window's placement, where they were); the others
    keep serving everywhere until their own wave moves them. Each is named in a warning."""
    ctx = run.ctx
    strays = _with_bridge_placement(run, record)
    if not strays:
        return
    moved = _moved(run)
    again = [w for w in strays if w.name in moved]
    if again:
        triggers.touch_wave(ctx.client, again, stamp=ctx.now_iso(), run_id=ctx.run_id)
    for w in strays:
        what = "touched again" if w.name in moved else "its own wave moves it"
        note = f"{w.name} took wave {run.wave.index}'s bridge placement (changed meanwhile): {what}"
        if note not in ctx.state.warnings:
            ctx.state.warnings.append(note)
        ctx.emitter.emit(
            RunWarning(**ctx.event_base(run.wave.index), code="bridge_stray", message=note)
        )


def _touch(run: WaveInFlight, record: BridgeRecord) -> ReadyWait:
    """Touch the bridged templates; the wait until they serve in every destination."""
    ctx = run.ctx
    subset = [w for w in run.live if w.name in record.targets]
    touched = triggers.touch_wave(
        ctx.client, subset, stamp=ctx.now_iso(), run_id=ctx.run_id, skip=record.touched
    )
    record.touched = sorted(set(record.touched) | set(touched.touched))
    ctx.save()  # a template deleted meanwhile is left to the wave's gates
    unmatched = run.unmatched(touched)
    for name in unmatched:
        run.leave_out(name, "unmatched")
    gone = set(touched.deleted) | set(unmatched)
    return ReadyWait(run, lambda: _short(run, record, gone), "bridged")


def _short(run: WaveInFlight, record: BridgeRecord, gone: set[str]) -> list[str]:
    """`workload cluster ready/wanted` for every bridged cluster not serving the full count."""
    return not_serving(
        run, record.targets, lambda n, assigned, ready: assigned < n or ready < n, gone
    )


def owner_mark(ctx: SwitchContext) -> dict[str, str]:
    """Who a bridge placement belongs to, in its mark: the sweeper finds it by them."""
    return {
        "schedule": ctx.schedule,
        "runId": ctx.run_id,
        "purpose": "bridge",
        "since": ctx.now_iso(),
    }


def _place(
    client: KarmadaClient,
    record: BridgeRecord,
    *,
    bridge: bool,
    only_from_bridge: bool = False,
    owner: Mapping[str, str] | None = None,
) -> None:
    """Write the bridge placement (or put the original back) on every bridged policy;
    `only_from_bridge`: only where the policy still carries the bridge (a hand edit since
    stays, for the drift check to report); `owner`: the run's mark (owner_mark)."""
    for p in record.policies:
        _write(
            client,
            p.kind,
            p.name,
            p.namespace,
            Placement(p.bridge if bridge else p.original),
            mark={**(owner or {}), "original": p.original, "bridge": p.bridge} if bridge else None,
            expect=Placement(p.bridge) if only_from_bridge else None,
        )


def _write(
    client: KarmadaClient,
    kind: str,
    name: str,
    namespace: str | None,
    placement: Placement,
    *,
    mark: Mapping[str, Any] | None,
    expect: Placement | None,
) -> None:
    """Set the policy's placement; `mark`: the bridge annotation to write with it (None:
    remove it); `expect`: write only where the placement is that now."""
    for _ in range(CONFLICT_ATTEMPTS):
        current = api.find_policy(client, kind, name, namespace)
        if current is None:
            return  # deleted: nothing to put back (the drift check reports it)
        view = PolicyView(current)
        now = view.placement or NO_PLACEMENT
        marked = BRIDGE_PLACEMENT in view.annotations
        if now == placement and marked is (mark is not None):
            return
        if expect is not None and now != expect:
            return
        body = MergePatch().annotate(
            {BRIDGE_PLACEMENT: json.dumps(mark, sort_keys=True) if mark is not None else None}
        )
        body.placement(view.spec, placement)
        try:
            api.patch_policy(
                client, kind, name, namespace, body, resource_version=view.resource_version
            )
        except Conflict:
            continue
        return
    raise Conflict(f"{kind}/{name}: still conflicting after {CONFLICT_ATTEMPTS} attempts")


def _put_back(ctx: SwitchContext, record: BridgeRecord) -> None:
    """The original placement back where the bridge still is, retried on 429/5xx/timeouts
    within one waveTimeout (tidal.engine.patience)."""
    patiently(
        ctx.client,
        ctx.clock,
        ctx.wave_timeout,
        functools.partial(_place, ctx.client, record, bridge=False, only_from_bridge=True),
    )


def release(run: WaveInFlight) -> None:
    """The wave converged: give the bridge's room back."""
    ctx, record = run.ctx, run.leg.bridge
    if record is None or not record.active:
        return
    _put_back(ctx, record)  # (restored already)
    record.advance(BridgeStep.RELEASED)
    ctx.save()
    room.release_room(ctx, run.wave, run.leg)


def clean_up(ctx: SwitchContext, *, forward_only: bool = False) -> None:
    """A run that stops: put every bridged policy's placement back and give the room back.
    `forward_only`: leave the rollback's own bridges (a resumed rollback goes on with them)."""
    for wave in ctx.state.waves:
        for leg in wave.legs[:1] if forward_only else wave.legs:
            record = leg.bridge
            if record is None or not record.active:
                continue
            try:
                _put_back(ctx, record)
            except KarmadaError as exc:  # best effort: a resume puts it back from the journal
                ctx.emitter.emit(
                    RunWarning(
                        **ctx.event_base(wave.index),
                        code="cleanup",
                        message=f"bridge of wave {wave.index}: {exc}",
                    )
                )
                continue
            record.advance(BridgeStep.RELEASED)
            room.release_room(ctx, wave, leg)
            left = sorted(set(record.touched) - set(leg.triggered))
            # (going back, the rollback moves the forward bridge's templates)
            if left and not (ctx.state.phase is Phase.ROLLBACK and leg.direction.planned):
                note = (
                    f"wave {wave.index}: {', '.join(left)} keep serving in every cluster "
                    "of the bridge (Duplicated) until a run of this schedule moves them"
                )
                if note not in ctx.state.warnings:
                    ctx.state.warnings.append(note)
                ctx.emitter.emit(
                    RunWarning(**ctx.event_base(wave.index), code="bridge_left", message=note)
                )
            ctx.save()


def restore_marked(
    client: KarmadaClient, schedule: TidalSchedule, find: PolicyLookup | None = None
) -> bool:
    """Before a run plans: a policy of the schedule that still carries a bridge placement (a
    run crashed or lost its journal mid-bridge) gets the placement from before the bridge
    back, found from its own annotation; a journalled bridge step is then redone. A placement
    edited since is left alone (the drift check reports it), only the mark goes. `find`: a
    run alone's policy informer, looked in for the mark (a write reads afresh). True when
    one was marked (and written)."""
    restored = False
    for ref in sorted(schedule.policy_refs(), key=str):
        restored |= restore_policy(client, ref.kind, ref.name, ref.namespace, find=find)
    return restored


def restore_policy(
    client: KarmadaClient,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    run_id: str | None = None,
    find: PolicyLookup | None = None,
) -> bool:
    """The policy's placement from before the bridge back, from its mark (a placement
    edited since stays: only the mark goes); False when it carries no mark, or (`run_id`)
    when the mark is another run's (a new run bridged it since it was found)."""
    obj = (find or functools.partial(api.find_policy, client))(kind, name, namespace)
    if find is not None and BRIDGE_PLACEMENT in PolicyView.of(obj).annotations:
        # what is written back is chosen from this copy: read it afresh, a cache may trail
        # a hand edit
        obj = api.find_policy(client, kind, name, namespace)
    text = PolicyView.of(obj).annotations.get(BRIDGE_PLACEMENT)
    if obj is None or text is None:
        return False
    try:
        mark = json.loads(text)
        original, bridge_ = dict(mark["original"]), dict(mark["bridge"])
    except (ValueError, KeyError, TypeError):
        mark, original, bridge_ = {}, {}, {}
    if run_id is not None and isinstance(mark, dict) and mark.get("runId", "") != run_id:
        return False
    now = PolicyView(obj).placement or NO_PLACEMENT
    back = Placement(original) if original and now == Placement(bridge_) else now
    _write(client, kind, name, namespace, back, mark=None, expect=None)
    return True
