"""The shared capacity budget: never past free, priority then round-robin by wave, a waiter
keeps its place (no starvation), runs that end give back; all on a fake clock."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from structlog.testing import capture_logs

from tidal.daemon.budget import SharedBudget
from tidal.domain.clock import FakeClock
from tidal.engine.budget import SurgeBudget

T0 = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)


def gpus(n: float, cluster: str = "cluster-b") -> dict[str, dict[str, float]]:
    return {cluster: {"nvidia.com/gpu": n}}


@dataclass
class Team:
    """A switch whose waves each surge `need` GPUs and hold them `hold` seconds once granted."""

    name: str
    waves: int
    need: float
    hold: float = 3.0
    priority: int = 0
    start: float = 0.0  # seconds after T0 its run begins
    done: int = 0
    held_until: float | None = None
    asked_at: float | None = None
    waits: list[float] = field(default_factory=list)

    def holder(self) -> str:
        return f"{self.name}/wave-{self.done + 1}"


def simulate(
    budget: SharedBudget, clock: FakeClock, teams: list[Team], free: float, ticks: int = 400
) -> tuple[list[str], float]:
    """Every second, each team (in list order) releases a wave whose hold ended and asks for
    its next; returns the grant order and the most GPUs ever held at once."""
    order: list[str] = []
    peak = 0.0
    views = {t.name: budget.for_schedule(t.name, t.priority) for t in teams}
    for _ in range(ticks):
        now = clock.monotonic()
        for team in teams:
            view: SurgeBudget = views[team.name]
            if now < team.start or team.done >= team.waves:
                continue
            if team.held_until is not None:
                if now < team.held_until:
                    continue
                view.release(team.holder())
                team.held_until, team.done = None, team.done + 1
                if team.done >= team.waves:
                    budget.end_run(team.name)
                    continue
            if team.asked_at is None:
                team.asked_at = now
            if view.reserve(team.holder(), gpus(team.need), gpus(free)):
                order.append(team.name)
                team.waits.append(now - team.asked_at)
                team.asked_at, team.held_until = None, now + team.hold
        peak = max(peak, budget.leased().get("cluster-b", {}).get("nvidia.com/gpu", 0.0))
        clock.sleep(1.0)
    return order, peak


def test_concurrent_waves_never_hold_more_than_free() -> None:
    """Five teams asking for 3 GPUs each against 8 free: at most two waves hold at once."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0)
    teams = [Team(f"team-{i}", waves=4, need=3) for i in range(5)]
    order, peak = simulate(budget, clock, teams, free=8)
    assert peak <= 8
    assert len(order) == 20
    assert budget.leased() == {}


def test_round_robin_by_wave_within_a_priority() -> None:
    """A team of many waves gets one turn per round: the others are not queued behind it."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0)
    big = Team("big", waves=6, need=4)
    teams = [big, Team("small-a", waves=2, need=4), Team("small-b", waves=2, need=4)]
    order, _ = simulate(budget, clock, teams, free=4)
    assert order[:6] == ["big", "small-a", "small-b"] * 2
    assert order[6:] == ["big"] * 4


def test_a_late_team_is_served_before_a_team_that_had_its_turns() -> None:
    """A schedule arriving while another runs its tenth wave is next, not after all of them."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0)
    big = Team("big", waves=20, need=4, hold=2)
    late = Team("late", waves=1, need=4, start=15)
    simulate(budget, clock, [big, late], free=4, ticks=100)
    assert late.waits == [max(late.waits[0], 0.0)] and late.waits[0] <= 2


def test_higher_priority_first() -> None:
    """Waiting together, the higher-priority schedule's waves are granted first."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0)
    low = Team("low", waves=2, need=4, priority=0)
    high = Team("high", waves=2, need=4, priority=10, start=1)
    holder = Team("first", waves=1, need=4, hold=5)
    order, _ = simulate(budget, clock, [holder, low, high], free=4)
    assert order == ["first", "high", "high", "low", "low"]


def test_a_large_wave_is_not_starved_by_a_stream_of_small_ones() -> None:
    """Small waves that would each fit keep being granted without a queue; the large waiter
    keeps its place: the small ones drain and it is served within one small hold."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0)
    smalls = [Team(f"small-{i}", waves=50, need=1, hold=3, start=i) for i in range(3)]
    big = Team("big", waves=1, need=4, start=5)
    simulate(budget, clock, [*smalls, big], free=4, ticks=60)
    assert big.done == 1
    assert big.waits[0] <= 3  # the longest any small wave holds


def test_a_waiter_blocks_only_the_resources_it_asks_for() -> None:
    """A waiter for cluster-b GPUs keeps lower-ranked waves off cluster-b (though they would
    fit) but does not hold up a wave that needs only cluster-c."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=0)
    free = {"cluster-b": {"nvidia.com/gpu": 4}, "cluster-c": {"nvidia.com/gpu": 4}}
    assert shared.reserve("a", 0, "a/1", gpus(3), free)
    assert not shared.reserve("b", 0, "b/1", gpus(2), free)
    assert not shared.reserve("a", 0, "a/2", gpus(1), free)  # fits, but b is ahead
    assert shared.reserve("a", 0, "a/3", gpus(4, "cluster-c"), free)


def test_a_wave_larger_than_the_cluster_blocks_no_one() -> None:
    """A surge that cannot fit even in an empty cluster does not keep smaller ones waiting."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=0)
    assert not shared.reserve("huge", 5, "h/1", gpus(9), gpus(4))
    assert shared.reserve("small", 0, "s/1", gpus(2), gpus(4))


def test_reserving_again_replaces_and_release_gives_back() -> None:
    """A resumed wave re-reserves under the same holder: counted once; release frees it."""
    clock = FakeClock(T0)
    budget = SharedBudget(clock, settle_seconds=0).for_schedule("team")
    assert budget.reserve("run/1", gpus(3), gpus(4))
    assert budget.reserve("run/1", gpus(2), gpus(4))
    assert budget.shared.leased() == gpus(2)
    budget.release("run/1")
    budget.release("run/1")  # nothing held is fine
    assert budget.shared.leased() == {}


def test_a_run_that_ends_gives_back_its_holds_and_its_place() -> None:
    """A halted team's held surge and its waiting wave are released for the others."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=0)
    assert shared.reserve("broken", 0, "broken/1", gpus(4), gpus(4))
    assert not shared.reserve("other", 0, "other/1", gpus(4), gpus(4))
    with capture_logs() as logs:
        shared.end_run("broken")
    assert {
        "event": "capacity_released",
        "schedule": "broken",
        "holders": 1,
        "reason": "run_ended",
        "log_level": "info",
    } in logs
    assert shared.reserve("other", 0, "other/1", gpus(4), gpus(4))


def test_status_says_who_waits_since_when_and_for_what() -> None:
    """waiting(): each schedule's oldest waiting wave, when it began to wait, what it lacks."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(3), gpus(4))
    clock.advance(timedelta(seconds=7))
    assert not shared.reserve("b", 0, "b/1", gpus(2), gpus(4))
    clock.advance(timedelta(seconds=5))
    assert not shared.reserve("b", 0, "b/1", gpus(2), gpus(4))
    wait = shared.waiting()["b"]
    assert (wait.holder, wait.since, wait.short) == ("b/1", T0 + timedelta(seconds=7), gpus(1))
    assert "a" not in shared.waiting()


def test_a_waiter_that_stops_asking_is_dropped() -> None:
    """A wave whose thread died without releasing stops blocking after stale_after seconds."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, stale_after=30, settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(3), gpus(4))
    assert not shared.reserve("b", 5, "b/1", gpus(4), gpus(4))  # high priority: blocks c
    assert not shared.reserve("c", 0, "c/1", gpus(1), gpus(4))
    clock.advance(timedelta(seconds=31))
    with capture_logs() as logs:
        assert shared.reserve("c", 0, "c/1", gpus(1), gpus(4))
    assert any(e["event"] == "capacity_waiter_dropped" and e["schedule"] == "b" for e in logs)


def test_threads_never_overcommit() -> None:
    """Six threads reserving and releasing at once never hold more than free together."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=0)
    worst: list[float] = []
    lock = threading.Lock()

    def team(name: str) -> None:
        view = shared.for_schedule(name)
        for wave in range(40):
            holder = f"{name}/{wave}"
            while not view.reserve(holder, gpus(2), gpus(5)):
                clock.sleep(0.01)
            held = shared.leased().get("cluster-b", {}).get("nvidia.com/gpu", 0.0)
            with lock:
                worst.append(held)
            view.release(holder)

    threads = [threading.Thread(target=team, args=(f"t{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(worst) == 240
    assert max(worst) <= 5


def test_a_surge_whose_pods_exist_is_not_counted_twice() -> None:
    """Cluster status already counts a held surge once its pods run: the next wave may use
    the rest (10 free, 4 held and running, status says 6: another 6 fit, not 2)."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(4), gpus(10))
    assert shared.reserve("b", 0, "b/1", gpus(6), gpus(6))
    assert shared.leased() == gpus(10)


def test_a_surge_whose_pods_do_not_exist_yet_is_counted() -> None:
    """Status lagging behind a hold (still 10 free with 4 held): only 6 more fit."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(4), gpus(10))
    assert not shared.reserve("b", 0, "b/1", gpus(7), gpus(10))
    assert shared.reserve("b", 0, "b/1", gpus(6), gpus(10))


def test_a_released_surge_stays_as_the_new_steady_state() -> None:
    """A wave's surge stays in the destination after release (the status shows it by then):
    with another hold in place, its room is not offered again."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(4), gpus(10))
    assert shared.reserve("b", 0, "b/1", gpus(3), gpus(10))
    shared.release("a/1")  # a's 4 replicas stay; b's 3 do not run yet: the status says 6
    assert not shared.reserve("c", 0, "c/1", gpus(4), gpus(6))
    assert shared.reserve("c", 0, "c/1", gpus(3), gpus(6))
    shared.release("b/1")
    shared.release("c/1")
    assert shared.reserve("d", 0, "d/1", gpus(0.5), gpus(0.5))  # no hold left: status rules


def test_room_that_appears_while_surges_are_held_is_used() -> None:
    """Another tenant leaves cluster-b while a surge is held: the new room is offered at once,
    not only after every hold is released."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=0)
    assert shared.reserve("a", 0, "a/1", gpus(4), gpus(4))
    assert not shared.reserve("b", 0, "b/1", gpus(4), gpus(0))  # a's pods run: 0 free
    assert shared.reserve("b", 0, "b/1", gpus(4), gpus(8))  # the tenant left 8


def test_a_released_surge_counts_until_the_status_can_show_it() -> None:
    """Cluster status lags (Karmada refreshes it every 10s): a surge released a moment after
    its grant still counts, although the status says its room is free; settle_seconds after
    the grant the status is trusted again, and a surge held that long counts no more."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=15)
    assert shared.reserve("a", 0, "a/1", gpus(8), gpus(8))
    shared.release("a/1")  # its 8 replicas stay; the status still says 8 free
    assert shared.leased() == {}
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8))
    clock.advance(timedelta(seconds=16))
    assert shared.reserve("b", 0, "b/1", gpus(8), gpus(8))  # a status without a's: trusted
    clock.advance(timedelta(seconds=20))
    shared.release("b/1")  # held 20s: the status (free 0) shows it already
    assert shared.reserve("c", 0, "c/1", gpus(4), gpus(4))


def test_a_status_written_after_the_release_frees_its_room_at_once() -> None:
    """A released surge counts only until a Cluster status written after its release is read
    (a newer resourceVersion): the room another tenant left is then used at once, not
    settle_seconds later; a reading as old as the release still counts it."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=60)
    assert shared.reserve("a", 0, "a/1", gpus(8), gpus(8), {"cluster-b": "100"})
    shared.release("a/1", lambda: {"cluster-b": "105"})  # a's 8 replicas stay and run
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "105"})
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "101"})
    # the next status counts a's 8 and the 8 another tenant gave back: 8 free, all usable
    assert shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "106"})


def test_a_stale_reading_after_a_newer_one_does_not_overcommit() -> None:
    """Two waves read Cluster status at different moments: the one whose reading predates a
    release still counts that surge, although another reading already showed it."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=60)
    assert shared.reserve("a", 0, "a/1", gpus(6), gpus(6), {"cluster-b": "7"})
    shared.release("a/1", lambda: {"cluster-b": "9"})
    # read before the release: 6 free (a's pods not counted yet) -- nothing may be granted
    assert not shared.reserve("b", 0, "b/1", gpus(6), gpus(6), {"cluster-b": "8"})
    # read after it: the status counts a's 6 and shows the 2 left free
    assert shared.reserve("c", 0, "c/1", gpus(2), gpus(2), {"cluster-b": "10"})
    assert not shared.reserve("b", 0, "b/1", gpus(6), gpus(6), {"cluster-b": "8"})


def test_versions_that_are_not_integers_fall_back_to_settling() -> None:
    """A Cluster whose resourceVersion is not a number (another API server) tells nothing: a
    released surge counts until settle_seconds after its grant, as without versions."""
    clock = FakeClock(T0)
    shared = SharedBudget(clock, settle_seconds=15)
    assert shared.reserve("a", 0, "a/1", gpus(8), gpus(8), {"cluster-b": "x1"})
    shared.release("a/1", lambda: {"cluster-b": "x1"})
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "x2"})
    clock.advance(timedelta(seconds=16))
    assert shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "x2"})


def test_a_release_reads_the_clusters_only_when_something_was_held() -> None:
    """Releasing a holder that holds nothing (a wave that never surged) reads no Cluster."""
    shared = SharedBudget(FakeClock(T0))
    reads: list[str] = []

    def versions() -> dict[str, str]:
        reads.append("clusters")
        return {"cluster-b": "1"}

    shared.release("nobody/1", versions)
    assert reads == []
    assert shared.reserve("a", 0, "a/1", gpus(1), gpus(1))
    shared.release("a/1", versions)
    assert reads == ["clusters"]


def test_a_surge_whose_replicas_run_counts_once_while_still_held() -> None:
    """A wave whose surged replicas run says so with the Cluster versions read then: a status
    written later counts them, so room another tenant left meanwhile is granted although the
    wave still holds its surge (it has yet to move and release)."""
    shared = SharedBudget(FakeClock(T0), settle_seconds=60)
    assert shared.reserve("a", 0, "a/1", gpus(8), gpus(8), {"cluster-b": "10"})
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "11"})
    shared.running("a/1", lambda: {"cluster-b": "12"})
    assert not shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "12"})
    assert shared.reserve("b", 0, "b/1", gpus(8), gpus(8), {"cluster-b": "13"})
    assert shared.leased() == gpus(16)


def test_a_surge_the_status_counted_before_it_ran_holds_its_room_until_the_settle() -> None:
    """A status refresh counted a surge's pods (and 200 GPUs another tenant gave back) before
    the surge's wave saw them run, and no later refresh changed anything (so no later version):
    the budget cannot tell, so the surge's room stays counted until settle_seconds after its
    grant, never before; the settle is what bounds this wait (docs/switch.md: about 1.5x
    Karmada's Cluster status period; B5 at 0.5 s with 15 s stalled so)."""
    for settle in (1.5, 15.0):
        clock = FakeClock(T0)
        shared = SharedBudget(clock, settle_seconds=settle)
        assert shared.reserve("a", 0, "a/1", gpus(200), gpus(400), {"cluster-b": "9"})
        # version 10 counts a's 200 and the tenant's 200: 400 really free, but a ran at 10
        shared.running("a/1", lambda: {"cluster-b": "10"})
        shared.release("a/1", lambda: {"cluster-b": "10"})
        waited = 0.0
        while not shared.reserve("b", 0, "b/1", gpus(400), gpus(400), {"cluster-b": "10"}):
            clock.advance(timedelta(seconds=0.5))
            waited += 0.5
        assert waited == settle
        assert shared.leased() == gpus(400)
