"""The wave kernel's runner: steps advanced in order, the index journalled with the wave, a
failed step ending the wave, a pending one waiting on the watch, and a resume going on from
the journalled index (replaying only the steps the table says restore in-process state)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from tidal.domain.clock import FakeClock
from tidal.engine.inflight import WaveInFlight
from tidal.engine.journal import Interrupted, StepMark, WaveLeg, WaveState
from tidal.engine.runner import (
    CLUSTER_LOOK_SECONDS,
    CLUSTER_POLL_SECONDS,
    PAST_THE_LAST,
    Step,
    resume_index,
    run_steps,
    wait,
)
from tidal.engine.states import Direction, FailureReason
from tidal.engine.steps import DONE, STEPS, Answer, Failed, Pending, StepKind, WakeOn

K = StepKind
START = datetime(2026, 6, 1, 23, 0, tzinfo=UTC)


@dataclass
class FakeWatch:
    """Yields the queued events (key, deleted) as binding objects, one batch per wait."""

    batches: list[list[str]] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)

    def changes(self, seconds: float) -> Iterator[tuple[dict[str, Any], bool]]:
        self.waits.append(seconds)
        for key in self.batches.pop(0) if self.batches else []:
            namespace, name = key.split("/")
            yield {"metadata": {"namespace": namespace, "name": name}}, False


@dataclass
class FakeCtx:
    clock: FakeClock
    wave_timeout: float = 60.0
    version: Callable[[], str | None] = lambda: None  # the run's Cluster cache version
    may_save: Callable[[], bool] = lambda: True
    schedule: str = "team-t1"

    def clusters_version(self) -> str | None:
        return self.version()


@dataclass
class FakeRun:
    """What the runner reads of a wave in flight."""

    wave: WaveState
    ctx: FakeCtx
    watch: FakeWatch = field(default_factory=FakeWatch)
    direction: Direction = Direction.FORWARD
    deadline: float = 0.0

    @property
    def leg(self) -> WaveLeg:
        return self.wave.leg(self.direction)


class Scripted:
    """A step answering from a script (then Done), recording each advance in `log`."""

    def __init__(
        self, kind: StepKind, log: list[str], script: list[Answer] | None = None, done: bool = False
    ) -> None:
        self.kind, self.log, self.script, self.done = kind, log, list(script or []), done

    def advance(self, run: WaveInFlight) -> Answer:
        self.log.append(str(self.kind))
        return self.script.pop(0) if self.script else DONE

    def done_in(self, run: WaveInFlight) -> bool:
        return self.done


def _run(wave: WaveState | None = None) -> FakeRun:
    return FakeRun(wave or WaveState(1, []), FakeCtx(FakeClock(START)))


def _steps(log: list[str], *kinds: StepKind) -> list[Step]:
    return [Scripted(kind, log) for kind in kinds]


def test_every_step_is_advanced_in_order_and_the_index_journalled() -> None:
    """A list of done steps: each advanced once, in order; the wave's mark is past the last."""
    log: list[str] = []
    run = _run()
    outcome = run_steps(cast(WaveInFlight, run), _steps(log, K.TRIGGER_TOUCH, K.GATE_CONVERGED))
    assert outcome.ok and log == ["trigger_touch", "gate_converged"]
    assert run.wave.forward.step == StepMark(2, PAST_THE_LAST)
    assert WaveState.from_dict(run.wave.to_dict()).forward.step == StepMark(2, PAST_THE_LAST)


def test_a_failed_step_ends_the_wave_before_the_next() -> None:
    """Failed: the wave's outcome carries its reason; later steps never run; the mark stays."""
    log: list[str] = []
    failing = Scripted(K.SURGE, log, [Failed(FailureReason.TIMEOUT, "too slow")])
    steps: list[Step] = [Scripted(K.RESERVE_ROOM, log), failing, Scripted(K.TRIGGER_TOUCH, log)]
    run = _run()
    outcome = run_steps(cast(WaveInFlight, run), steps)
    assert not outcome.ok and outcome.failure is FailureReason.TIMEOUT
    assert outcome.reason == "too slow" and log == ["reserve_room", "surge"]
    assert run.wave.forward.step == StepMark(1, "surge")


def test_a_pending_step_waits_for_an_event_it_names_then_is_asked_again() -> None:
    """Pending on one binding: another binding's event does not wake it, its own does."""
    log: list[str] = []
    run = _run()
    run.watch.batches = [["ns/other", "ns/mine"]]
    seen: list[str] = []
    wake = WakeOn(keys=frozenset({"ns/mine"}), seen=lambda key, _obj: seen.append(key))
    gate = Scripted(K.GATE_CONVERGED, log, [Pending(wake, deadline=30.0)])
    outcome = run_steps(cast(WaveInFlight, run), [gate])
    assert outcome.ok and log == ["gate_converged", "gate_converged"]
    assert seen == ["ns/other", "ns/mine"]
    assert run.watch.waits == [5.0]  # at most WAKE_SECONDS, then the step looks again


def test_a_process_that_may_no_longer_save_stops_a_waiting_step_where_it_is() -> None:
    """Pending, then the journal refuses saves from now on (a SIGTERM, a lost lease): after
    its wait the step is not asked again; the run is Interrupted with the wave's mark on it."""
    log: list[str] = []
    run = _run()
    saving = [True]
    run.ctx.may_save = lambda: saving[0]
    wake = WakeOn(keys=frozenset({"ns/mine"}))

    class StopsDuring(Scripted):
        def advance(self, run_: WaveInFlight) -> Answer:
            saving[0] = False  # the SIGTERM arrives while the step waits
            return super().advance(run_)

    gate = StopsDuring(K.GATE_CONVERGED, log, [Pending(wake, deadline=30.0)] * 3)
    steps: list[Step] = [Scripted(K.TRIGGER_TOUCH, log), gate, Scripted(K.HEALTH_CHECK, log)]
    with pytest.raises(Interrupted, match="wave 1 waited at gate_converged"):
        run_steps(cast(WaveInFlight, run), steps)
    assert log == ["trigger_touch", "gate_converged"] and len(run.watch.waits) == 1
    assert run.wave.forward.step == StepMark(1, "gate_converged")


def test_each_step_has_its_own_deadline() -> None:
    """The deadline a step waits against starts when the runner starts that step."""
    clock = FakeClock(START)
    run = FakeRun(WaveState(1, []), FakeCtx(clock, wave_timeout=60.0))
    deadlines: list[float] = []

    class Slow:
        kind = K.SURGE

        def advance(self, run_: WaveInFlight) -> Answer:
            deadlines.append(run_.deadline)
            clock.sleep(50.0)
            return DONE

        def done_in(self, run_: WaveInFlight) -> bool:
            return False

    assert run_steps(cast(WaveInFlight, run), [Slow(), Slow()]).ok
    assert deadlines[1] - deadlines[0] == 50.0  # not one deadline shared by both


def test_the_outcome_says_when_the_wave_converged_not_when_its_release_ended() -> None:
    """settled_at is the clock when the converged gate was done; a release after it (10 s
    here) does not move it, so the pause after the wave can count the release in."""
    clock = FakeClock(START)
    run = FakeRun(WaveState(1, []), FakeCtx(clock))

    class Taking:
        def __init__(self, kind: StepKind, seconds: float) -> None:
            self.kind, self.seconds = kind, seconds

        def advance(self, run_: WaveInFlight) -> Answer:
            clock.sleep(self.seconds)
            return DONE

        def done_in(self, run_: WaveInFlight) -> bool:
            return False

    start = clock.monotonic()
    steps: list[Step] = [Taking(K.GATE_CONVERGED, 3.0), Taking(K.RELEASE_SURGE, 10.0)]
    outcome = run_steps(cast(WaveInFlight, run), steps)
    assert outcome.ok and outcome.settled_at == start + 3.0
    assert [k for k in K if STEPS[k].settles] == [K.GATE_CONVERGED]


def test_a_wave_resumed_past_its_converged_gate_does_not_know_when_it_converged() -> None:
    """Journalled past the gate: the gate is not advanced in this process, settled_at None
    (the pause after it is then the whole pause)."""
    log: list[str] = []
    wave = WaveState(1, [], forward=WaveLeg(Direction.FORWARD, step=StepMark(1, "release_surge")))
    outcome = run_steps(
        cast(WaveInFlight, _run(wave)), _steps(log, K.GATE_CONVERGED, K.RELEASE_SURGE)
    )
    assert outcome.ok and outcome.settled_at is None and log == ["release_surge"]


def test_a_resume_goes_on_from_the_journalled_step_replaying_only_what_the_table_says() -> None:
    """Marked at the gate: the reserve (holds capacity) and the touch (arms the gates) are
    advanced again, the bridge and surge are not."""
    log: list[str] = []
    kinds = (K.RESERVE_ROOM, K.BRIDGE, K.SURGE, K.TRIGGER_TOUCH, K.GATE_SCHEDULED)
    wave = WaveState(1, [], forward=WaveLeg(Direction.FORWARD, step=StepMark(4, "gate_scheduled")))
    assert run_steps(cast(WaveInFlight, _run(wave)), _steps(log, *kinds)).ok
    assert log == ["reserve_room", "trigger_touch", "gate_scheduled"]
    assert [k for k in kinds[:4] if STEPS[k].replay] == [K.RESERVE_ROOM, K.TRIGGER_TOUCH]


def test_without_a_mark_the_index_is_derived_from_the_records() -> None:
    """A journal from before the kernel: the first step its records do not show done."""
    log: list[str] = []
    steps: list[Step] = [
        Scripted(K.RESERVE_ROOM, log, done=True),
        Scripted(K.BRIDGE, log, done=True),
        Scripted(K.SURGE, log),
        Scripted(K.TRIGGER_TOUCH, log, done=True),  # never past a step not done
    ]
    assert resume_index(cast(WaveInFlight, _run()), steps) == 2


def test_a_mark_naming_another_kind_is_not_trusted() -> None:
    """A mark whose kind is not the list's at its index (another plan): derived again."""
    log: list[str] = []
    steps: list[Step] = [Scripted(K.TRIGGER_TOUCH, log, done=True), Scripted(K.GATE_CONVERGED, log)]
    wave = WaveState(1, [], forward=WaveLeg(Direction.FORWARD, step=StepMark(0, "surge")))
    assert resume_index(cast(WaveInFlight, _run(wave)), steps) == 1


def test_a_rollback_has_its_own_mark() -> None:
    """Going back journals into stepBack; the forward mark stays as it was."""
    log: list[str] = []
    run = _run(
        WaveState(1, [], forward=WaveLeg(Direction.FORWARD, step=StepMark(2, PAST_THE_LAST)))
    )
    run.direction = Direction.BACK
    assert run_steps(cast(WaveInFlight, run), _steps(log, K.TRIGGER_TOUCH)).ok
    assert log == ["trigger_touch"]
    assert run.wave.forward.step == StepMark(2, PAST_THE_LAST)
    assert run.wave.back.step == StepMark(1, PAST_THE_LAST)


def _waited_for_clusters(run: FakeRun, seen: str | None, deadline: float = 30.0) -> float:
    """How long the runner waits for a Cluster change from `seen` (the watch is never read)."""
    start = run.ctx.clock.monotonic()
    wait(cast(WaveInFlight, run), Pending(WakeOn(clusters=True, clusters_seen=seen), deadline))
    assert run.watch.waits == []
    return run.ctx.clock.monotonic() - start


def test_a_cluster_status_change_wakes_a_waiting_step_at_once() -> None:
    """With the run's Cluster cache, a change 0.6 s into the wait ends it within one look,
    long before the poll."""
    run = _run()
    changed_at = run.ctx.clock.monotonic() + 0.6
    run.ctx.version = lambda: "8" if run.ctx.clock.monotonic() >= changed_at else "7"
    assert 0.6 <= _waited_for_clusters(run, "7") <= 0.6 + CLUSTER_LOOK_SECONDS


def test_an_unchanged_cluster_cache_waits_one_poll() -> None:
    """No Cluster status change: the step is asked again after the poll, not sooner."""
    run = _run()
    run.ctx.version = lambda: "7"
    assert _waited_for_clusters(run, "7") == CLUSTER_POLL_SECONDS


def test_without_a_cluster_cache_the_runner_polls() -> None:
    """A run alone (no Cluster cache): one poll's sleep."""
    assert _waited_for_clusters(_run(), None) == CLUSTER_POLL_SECONDS


def test_a_cluster_wait_ends_at_the_step_deadline() -> None:
    """A deadline nearer than the poll cuts the wait; a passed one does not wait at all."""
    run = _run()
    now = run.ctx.clock.monotonic()
    assert _waited_for_clusters(run, None, deadline=now + 0.5) == 0.5
    assert _waited_for_clusters(run, None, deadline=now) == 0.0
