"""The wave kernel's runner: advances a wave's steps in order, journals where it is, and owns
every wait.

    steps:  [reserve] -> [bridge] -> [surge] -> [touch] -> [scheduled] -> ... -> [health]
                ^ index journalled with the wave (StepMark: index and kind)
    runner: advance(step) -> Done     -> next index
                          -> Pending  -> wait(watch events on the named bindings
                                              | a Cluster status change | deadline)
                                         -> advance(step) again
                          -> Failed   -> the wave's failed outcome

Each step has its own deadline (waveTimeout from when the runner starts it in this process).
The index is set before a step starts and goes to the journal with the step's next write (no
write of its own: a step that has not written anything is simply advanced again).

Every pass is a resume: the runner starts at the journalled index (derived from the wave's
records when a journal from before the kernel has none, see `resume_index`). Steps before it
are skipped, except those the table marks `replay` (tidal.engine.steps.STEPS): they restore
what this process must hold (the budget's hold, the gates' trigger targets) and write nothing
they wrote already.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from tidal.engine.inflight import WaveInFlight
from tidal.engine.journal import Interrupted, StepMark
from tidal.engine.outcome import WaveOutcome
from tidal.engine.steps import STEPS, Answer, Done, Failed, Pending, StepKind
from tidal.karmada.bindings import key_of

WAKE_SECONDS: Final = 5.0  # a waiting step looks again at least this often (progress, health)
# a step waiting for a Cluster status change (the room's) asks again at least this often; with
# the daemon's shared informers the runner looks this often whether Cluster status changed
CLUSTER_POLL_SECONDS: Final = 2.0
CLUSTER_LOOK_SECONDS: Final = 0.25
PAST_THE_LAST: Final = "done"


class Step(Protocol):
    """One step of a wave (tidal.engine.wave_steps)."""

    @property
    def kind(self) -> StepKind: ...

    def advance(self, run: WaveInFlight) -> Answer:
        """Do what is left of the step (safe again after a crash); Done, Pending or Failed."""
        ...

    def done_in(self, run: WaveInFlight) -> bool:
        """Whether the wave's journal records (from before step indexes were journalled) show
        the step finished; False when they cannot tell (it is then advanced again)."""
        ...


def run_steps(run: WaveInFlight, steps: Sequence[Step]) -> WaveOutcome:
    """Advance the wave's steps from where its journal says it is; ok when the last is done."""
    start = resume_index(run, steps)
    settled_at = None
    for i, step in enumerate(steps):
        if i < start and not STEPS[step.kind].replay:
            continue
        if i >= start:
            run.leg.step = StepMark(i, str(step.kind))
        answer = advance(run, step)
        if isinstance(answer, Failed):
            return WaveOutcome(False, answer.failure, answer.reason)
        if i >= start and STEPS[step.kind].settles:
            settled_at = run.ctx.clock.monotonic()
    run.leg.step = StepMark(len(steps), PAST_THE_LAST)
    return WaveOutcome(True, settled_at=settled_at)


def advance(run: WaveInFlight, step: Step) -> Done | Failed:
    """Advance one step until it is done or failed, waiting whenever it is pending; its
    deadline starts now. Interrupted once this process may no longer save (it is stopping,
    or lost its lease): the step stays where the journal has it, for the next pass."""
    run.deadline = run.ctx.clock.monotonic() + run.ctx.wave_timeout
    while True:
        answer = step.advance(run)
        if not isinstance(answer, Pending):
            return answer
        wait(run, answer)
        if not run.ctx.may_save():
            raise Interrupted(
                f"{run.ctx.schedule}: this process may no longer act (it is stopping, or lost "
                f"its lease or run lock) while wave {run.wave.index} waited at {step.kind}; "
                "the run stays journalled: the next pass (or `tidal switch` again) carries it on"
            )


def wait(run: WaveInFlight, pending: Pending) -> None:
    """The one wait of the kernel: until a watch event `pending.wake_on` names (or, for a wait
    on `clusters`, a Cluster status change), the step's deadline, or WAKE_SECONDS
    (CLUSTER_POLL_SECONDS) (the watch keeps the bindings' cache up to date meanwhile)."""
    clock = run.ctx.clock
    remaining = pending.deadline - clock.monotonic()
    if remaining <= 0:
        return
    wake_on = pending.wake_on
    if wake_on.clusters:
        _wait_for_clusters(run, wake_on.clusters_seen, min(remaining, CLUSTER_POLL_SECONDS))
        return
    for obj, deleted in run.watch.changes(min(remaining, WAKE_SECONDS)):
        if pending.wake_on.wakes(key_of(obj), None if deleted else obj):
            return
        if clock.monotonic() >= pending.deadline:
            return


def _wait_for_clusters(run: WaveInFlight, seen: str | None, seconds: float) -> None:
    """Sleep `seconds`, or, with the run's Cluster cache (`seen` its version when the step
    looked), until its version moves on, looked at every CLUSTER_LOOK_SECONDS (no request)."""
    ctx = run.ctx
    if seen is None:
        ctx.clock.sleep(seconds)
        return
    waited = 0.0
    while waited < seconds and ctx.clusters_version() == seen:
        step = min(CLUSTER_LOOK_SECONDS, seconds - waited)
        ctx.clock.sleep(step)
        waited += step


def resume_index(run: WaveInFlight, steps: Sequence[Step]) -> int:
    """The step to go on from: the journalled one when it names the same kind in this list,
    else the first step the wave's records do not show as done (a journal from before the
    kernel; a gate is never shown done, so a resume looks at the cluster again from there)."""
    mark = run.leg.step
    if mark is not None and 0 <= mark.index <= len(steps):
        kind = str(steps[mark.index].kind) if mark.index < len(steps) else PAST_THE_LAST
        if kind == mark.kind:
            return mark.index
    index = 0
    while index < len(steps) and steps[index].done_in(run):
        index += 1
    return index
