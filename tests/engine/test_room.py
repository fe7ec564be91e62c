"""A wave asking for room: held at once, pending on a Cluster status change while it does not
fit, the timeout's reason once its deadline passed, and the runner waking it on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from tidal.domain.clock import FakeClock
from tidal.engine.budget import OwnBudget, SurgeBudget
from tidal.engine.inflight import WaveInFlight
from tidal.engine.journal import SurgeRecord, WaveLeg, WaveState
from tidal.engine.room import reserve_wave
from tidal.engine.runner import CLUSTER_POLL_SECONDS, run_steps
from tidal.engine.states import Direction, FailureReason, SurgeStep, Trigger
from tidal.engine.steps import Pending, StepKind
from tidal.engine.wave_steps import ReserveRoom

T0 = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)


def _cluster(name: str, free_gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": "1"},
        "status": {"resourceSummary": {"allocatable": {"nvidia.com/gpu": str(free_gpus)}}},
    }


@dataclass
class FakeCtx:
    """What asking for room reads of the run: its clusters, their cache version, the budget."""

    clock: FakeClock
    free_gpus: int = 0
    version: str | None = None
    wave_timeout: float = 10.0
    schedule: str = "team"
    run_id: str = "r1"
    headroom_percent: float = 0.0
    budget: SurgeBudget = field(default_factory=OwnBudget)
    trigger: Trigger = Trigger.REBALANCE  # no bridge (the step asks for the surge's room only)
    lists: int = 0
    member_capacity: None = None  # Cluster status is the source

    def may_save(self) -> bool:
        return True

    def list_clusters(self) -> list[dict[str, Any]]:
        self.lists += 1
        return [_cluster("gpu-b", self.free_gpus)]

    def clusters_version(self) -> str | None:
        return self.version


@dataclass
class FakeRun:
    ctx: FakeCtx
    wave: WaveState = field(default_factory=lambda: WaveState(1, []))
    direction: Direction = Direction.FORWARD
    deadline: float = 0.0
    told_running: bool = False

    @property
    def leg(self) -> WaveLeg:
        return self.wave.leg(self.direction)


def _run(free_gpus: int, version: str | None = None) -> FakeRun:
    clock = FakeClock(T0)
    run = FakeRun(FakeCtx(clock, free_gpus, version))
    run.deadline = clock.monotonic() + run.ctx.wave_timeout
    return run


def _surge(gpus: int) -> SurgeRecord:
    return SurgeRecord({"w": {"gpu-b": gpus}}, {"gpu-b": {"nvidia.com/gpu": float(gpus)}})


def test_room_that_fits_is_held_at_once() -> None:
    """Four GPUs free, two needed: held, nothing to wait for."""
    run = _run(free_gpus=4)
    assert reserve_wave(cast(WaveInFlight, run), [_surge(2)]) is None


def test_room_that_does_not_fit_is_pending_on_a_cluster_change() -> None:
    """Short of room before the deadline: Pending on Cluster changes from the version read."""
    run = _run(free_gpus=1, version="7")
    answer = reserve_wave(cast(WaveInFlight, run), [_surge(2)])
    assert isinstance(answer, Pending)
    assert answer.wake_on.clusters and answer.wake_on.clusters_seen == "7"
    assert answer.deadline == run.deadline


def test_past_the_deadline_the_wave_times_out_saying_what_is_short() -> None:
    """The deadline passed: the timeout reason names the wave's steps and what is short."""
    run = _run(free_gpus=1)
    run.ctx.clock.sleep(run.ctx.wave_timeout)
    outcome = reserve_wave(cast(WaveInFlight, run), [_surge(2)])
    assert not isinstance(outcome, Pending) and outcome is not None
    assert outcome.failure is FailureReason.TIMEOUT
    assert outcome.reason.startswith("no room for the wave's surge within waveTimeout 10s (short")


def test_a_moved_surge_needs_no_room() -> None:
    """A surge already moving holds what it needs: nothing is asked."""
    run = _run(free_gpus=0)
    record = _surge(2)
    record.step = SurgeStep.MOVING
    assert reserve_wave(cast(WaveInFlight, run), [record]) is None
    assert run.ctx.lists == 0


def test_the_runner_asks_again_every_poll_until_the_room_frees() -> None:
    """A run alone: the step asks, the runner sleeps one poll, and it asks again; room freed
    after 5 s is held on the first ask after it."""
    run = _run(free_gpus=1)
    run.wave.forward.surge = _surge(2)
    clock, start = run.ctx.clock, run.ctx.clock.monotonic()

    class Freeing(ReserveRoom):
        def advance(self, run_: WaveInFlight) -> Any:
            if clock.monotonic() - start >= 5.0:
                run.ctx.free_gpus = 2
            return super().advance(run_)

    assert run_steps(cast(WaveInFlight, run), [Freeing()]).ok
    assert run.ctx.lists == 4  # at 0, 2, 4 and 6 s
    assert clock.monotonic() - start == 3 * CLUSTER_POLL_SECONDS


def test_the_runner_fails_the_step_at_its_deadline() -> None:
    """Never room: the wave fails at the step's deadline with the timeout's reason."""
    run = _run(free_gpus=0)
    run.wave.forward.surge = _surge(2)
    outcome = run_steps(cast(WaveInFlight, run), [ReserveRoom()])
    assert not outcome.ok and outcome.failure is FailureReason.TIMEOUT
    assert "no room for the wave's surge within waveTimeout 10s" in outcome.reason
    step = run.wave.forward.step
    assert step is not None and step.kind == str(StepKind.RESERVE_ROOM)


@dataclass
class _Members:
    """A members' capacity whose watch of gpu-b follows (a version) or not (none) just now."""

    version: str | None = None

    def versions_now(self, clusters: Any) -> dict[str, str]:
        return {} if self.version is None else {"gpu-b": self.version}


@dataclass
class _Told(OwnBudget):
    told: list[dict[str, str]] = field(default_factory=list)

    def running(self, holder: str, versions: Any) -> None:
        self.told.append(dict(versions()))


def test_a_surge_is_told_with_a_member_version_or_at_the_move() -> None:
    """Reading the members, `running` without a member version for the held cluster (its
    watch not following just then) is not told: the wave tells it at a later look that has
    one, or at the move with what it has; told once."""
    from tidal.engine.room import running

    run = _run(8)
    members = _Members()
    budget = _Told()
    run.ctx.budget, run.ctx.member_capacity = budget, cast(Any, members)
    record = _surge(4)
    record.advance(SurgeStep.RESERVED)
    run.wave.leg(Direction.FORWARD).surge = record
    wave = cast(WaveInFlight, run)
    running(wave)
    assert budget.told == [] and not wave.told_running
    members.version = "7"
    running(wave)
    running(wave, last_chance=True)
    assert budget.told == [{"gpu-b": "7"}]

    late = _run(8)
    late.ctx.budget, late.ctx.member_capacity = (late_budget := _Told()), cast(Any, _Members())
    late.wave.leg(Direction.FORWARD).surge = record
    running(cast(WaveInFlight, late), last_chance=True)
    assert late_budget.told == [{"gpu-b": "status:1"}]
