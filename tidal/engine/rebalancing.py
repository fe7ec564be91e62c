"""A wave's WorkloadRebalancers, made so that Karmada's scheduler cannot ignore them.

The WorkloadRebalancer controller copies the rebalancer's creationTimestamp into each binding's
spec.rescheduleTriggeredAt, and the scheduler reschedules only when that is a later second than
status.lastScheduledTime (pkg/util/binding.go RescheduleRequired; metav1.Time keeps whole
seconds). A rebalancer created in the second of a binding's last scheduling is dropped without
a word: the scheduler only catches schedulerObservedGeneration up. So, per wave:

1. wait until each binding carries the change the run made (placement, claim) and the scheduler
   has answered it, so that no scheduling of ours is still on its way;
2. create the rebalancer with each binding's lastScheduledTime of that moment (an annotation:
   the gates and a resumed run never count that scheduling as the reschedule);
3. a binding whose last scheduling is not older than the rebalancer's second (its
   creationTimestamp: the server's clock) gets a new rebalancer a second later. After waiting
   for a scheduling in step 1, or when a binding's last scheduling is younger than two seconds
   (the touch's, which trigger both waited for in its `scheduled` gate), that second is let
   pass before the first one: a rebalancer is not made to be ignored, and a wave makes one
   rebalancer unless the server's clock is a second behind ours or a create is held up.

Each rebalancer's name is journalled before it is created; a resumed run asks the newest
rebalancer naming each workload whether it was honoured and rescheduled it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from tidal.domain.placement import Placement
from tidal.engine import gates, triggers
from tidal.engine.resolve import Workload
from tidal.engine.states import FailureReason
from tidal.engine.steps import DONE, Answer, Failed, Pending, WakeOn
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada.errors import KarmadaError, NotFound
from tidal.karmada.objects import Obj
from tidal.karmada.views import LAZY, BindingView, ObjectView, parse_time

if TYPE_CHECKING:
    from tidal.engine.inflight import WaveInFlight

SCHEDULED_BEFORE = "tidal.io/scheduled-before"  # workload -> lastScheduledTime (JSON)
RETRIGGER_ATTEMPTS = 4  # rebalancers per wave and direction at most
NEXT_SECOND = 1.0  # long enough for the server's clock to reach its next second
# a last scheduling younger than this may share the second a rebalancer made now gets: its
# whole second (metav1.Time truncates) and a second of skew between our clock and the server's
RECENT_SECONDS = 2 * NEXT_SECOND


class Rebalancing:
    """The rebalance of one wave in flight, one look per `advance`: the wave's workloads not
    yet rescheduled (a resume skips the others) get a rebalancer once each binding's last
    scheduling is answered (Pending on the watch meanwhile, until the step's deadline); one
    the scheduler cannot honour gets another a second later. Failed on an API error."""

    def __init__(self, run: WaveInFlight) -> None:
        self.run = run
        self.pending = _not_yet_rescheduled(run, [w for w in run.live if w.name in run.targets])
        self.expected = _expected_placements(run, self.pending)
        self.attempt = 0
        self.waiting: dict[str, Workload] | None = None  # bindings whose scheduling is awaited
        self.waited = False

    def advance(self) -> Answer:
        run, clock = self.run, self.run.ctx.clock
        while self.pending and self.attempt < RETRIGGER_ATTEMPTS:
            if self.waiting is None:
                self.waiting = {
                    w.binding_key: w for w in self.pending if not _answered(run, w, self.expected)
                }
                self.waited = bool(self.waiting)
            if self.waiting and clock.monotonic() < run.deadline:
                return Pending(WakeOn(seen=self._seen, when=self._all_answered), run.deadline)
            if self.waited or self.attempt or _scheduled_lately(run, self.pending):
                clock.sleep(NEXT_SECOND)  # a scheduling just seen: let its second pass
            failed = self._create()
            if failed is not None:
                return failed
            self.attempt, self.waiting = self.attempt + 1, None
        return DONE  # the gates will not count what the scheduler ignored: waveTimeout says so

    def _seen(self, key: str, _obj: Obj | None) -> None:
        """A binding changed: it is awaited no more once its scheduling is answered."""
        waiting = self.waiting
        if (
            waiting is not None
            and key in waiting
            and _answered(self.run, waiting[key], self.expected)
        ):
            del waiting[key]

    def _all_answered(self) -> bool:
        return not self.waiting

    def _create(self) -> Failed | None:
        """One rebalancer for the workloads still pending (its name journalled first)."""
        run, ctx, wave = self.run, self.run.ctx, self.run.wave
        before = {
            w.name: last
            for w in self.pending
            if (last := BindingView.of(run.watch.cache.get(w.binding_key)).last_scheduled)
        }
        name = triggers.rebalancer_name(
            ctx.schedule, ctx.run_id, wave.index, len(wave.rebalancers), run.direction.rollback
        )
        wave.rebalancers.append(name)
        ctx.save()
        try:
            obj = triggers.rebalance_wave(
                ctx.client,
                name,
                self.pending,
                schedule=ctx.schedule,
                run_id=ctx.run_id,
                annotations={SCHEDULED_BEFORE: _encode(before)},
            )
        except KarmadaError as exc:
            return Failed(FailureReason.API_ERROR, f"creating WorkloadRebalancer {name}: {exc}")
        view = ObjectView(obj)  # a retried create answers the existing object: trust it
        self.pending = _arm(run.targets, self.pending, view.created, _decode(view.annotations))
        return None


def _scheduled_lately(run: WaveInFlight, workloads: Sequence[Workload]) -> bool:
    """A binding was last scheduled less than RECENT_SECONDS ago by the engine's clock (the
    touch's scheduling the `scheduled` gate of trigger both just waited for): a rebalancer
    made now could fall in that scheduling's second and be ignored."""
    now = run.ctx.clock.now()
    for w in workloads:
        last = BindingView.of(run.watch.cache.get(w.binding_key)).last_scheduled
        if last is not None and (now - last).total_seconds() < RECENT_SECONDS:
            return True
    return False


def _arm(
    targets: Mapping[str, gates.WaveTarget],
    workloads: Sequence[Workload],
    created: datetime | None,
    before: Mapping[str, datetime | None],
) -> list[Workload]:
    """Point the targets at this rebalancer; the workloads it cannot reschedule."""
    again = []
    for w in workloads:
        target = targets.get(w.name)
        if target is None:
            continue
        target.trigger_time, target.scheduled_before = created, before.get(w.name)
        if not _honoured(created, before.get(w.name)):
            again.append(w)
    return again


def _honoured(created: datetime | None, before: datetime | None) -> bool:
    """Will the scheduler act on a trigger of `created` (RescheduleRequired)?"""
    return created is None or before is None or gates.second(created) > gates.second(before)


def _expected_placements(run: WaveInFlight, workloads: Sequence[Workload]) -> dict[str, Placement]:
    """The placement each binding gets from the run's policy change before its trigger: none
    under a Lazy policy the wave did not touch (pkg/detector: a Lazy policy's change waits for
    the template's next change, and a rebalance alone does not bring it)."""
    lazy = {r.key for r in run.ctx.state.policies if r.lazy.added or r.original_activation == LAZY}
    touched = set(run.triggered_before)
    return {
        w.name: placement
        for w in workloads
        if (placement := run.placements.get(w.policy)) is not None
        and (w.policy not in lazy or w.name in touched)
    }


def _answered(run: WaveInFlight, w: Workload, expected: Mapping[str, Placement]) -> bool:
    """The binding carries the run's placement and a claim, and the scheduler has answered its
    generation (or refused it: the gates report that)."""
    binding = run.watch.cache.get(w.binding_key)
    if binding is None:
        return True  # gone: the gates decide whether the template went too
    view = BindingView(binding)
    if not view.claimed:
        return False  # a swapped policy's templates wait for the new one to claim them
    placement = expected.get(w.name)
    if placement is not None and not gates.touch_triggered(
        gates.WaveTarget(w, placement=placement), view
    ):
        return False
    cond = view.scheduled
    if cond is not None and cond.status == "False":
        return True
    return view.generation is not None and view.scheduler_observed_generation == view.generation


def _not_yet_rescheduled(run: WaveInFlight, live: list[Workload]) -> list[Workload]:
    """On a resume: the workloads no earlier rebalancer of this wave and direction will get
    rescheduled; the newest existing rebalancer naming a workload decides for it (one the
    scheduler honours has its targets: the gates wait for its scheduling)."""
    rollback = run.direction.rollback
    names = [n for n in run.wave.rebalancers if triggers.is_rollback_rebalancer(n) == rollback]
    undecided = {w.name: w for w in live}
    pending: list[Workload] = []
    for name in reversed(names):
        if not undecided:
            break
        try:
            view = ObjectView(rebalancers_api.get_rebalancer(run.ctx.client, name))
        except NotFound:
            continue  # never created (a crash before the create) or gone with its TTL
        created, before = view.created, _decode(view.annotations)
        for ref in view.spec.get("workloads") or []:
            w = undecided.pop(_workload_name(ref), None)
            if w is None:
                continue
            if created is None or not _honoured(created, before.get(w.name)):
                pending.append(w)
            else:
                target = run.targets[w.name]
                target.trigger_time, target.scheduled_before = created, before.get(w.name)
    return pending + list(undecided.values())


def _workload_name(ref: Mapping[str, object]) -> str:
    return f"{ref.get('namespace', '')}/{ref.get('kind')}/{ref.get('name')}"


def _encode(before: Mapping[str, datetime]) -> str:
    return json.dumps(
        {name: t.isoformat().replace("+00:00", "Z") for name, t in sorted(before.items())},
        separators=(",", ":"),
    )


def _decode(annotations: Mapping[str, str]) -> dict[str, datetime | None]:
    """The annotation's times; an unreadable one is left out (that workload is then judged
    by the binding alone)."""
    try:
        raw = json.loads(annotations.get(SCHEDULED_BEFORE) or "{}")
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): parse_time(v) for k, v in raw.items()}
