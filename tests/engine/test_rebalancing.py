"""Rebalance waves on the in-process Karmada, where the clock is the test's: a WorkloadRebalancer
made in the second of a binding's last scheduling is ignored by Karmada's scheduler
(pkg/util/binding.go RescheduleRequired compares whole seconds): tidal lets a recent
scheduling's second pass first, and notices when one was ignored all the same (a server clock
behind ours, a create held up)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    cluster,
    cpp,
    deployment,
    dynamic_placement,
    load_one,
    namespace,
    policy_file,
    schedule_text,
    swap_window,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal, RunState
from tidal.engine.rebalancing import SCHEDULED_BEFORE
from tidal.engine.record import RunRecord
from tidal.engine.states import RunResult
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.rebalancers import get_rebalancer
from tidal.karmada.views import ObjectView, parse_time
from tidal_sim.testing import InProcessKarmada
from tidal_sim.testing.inprocess import EngineClock
from tidal_sim.testing.plugin import MakeKarmadaFake

WORKLOAD = "ai-app/Deployment/web-0"
# Fresh, dynamic weights by available replicas (8 and 40 CPUs free) give 1:3; a placement change
# alone is Steady and keeps the day's 3:1 (pkg/scheduler/core/assignment.go)
FRESH = {"cluster-a": 1, "cluster-b": 3}


class Crash(Exception):
    """The run stops where a crash would."""


class AheadClock(EngineClock):
    """The engine's clock two seconds ahead of the server's: a scheduling of the server's
    last second looks older to tidal than it is."""

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=2)


def _fake(make_karmada_fake: MakeKarmadaFake) -> InProcessKarmada:
    """cluster-a (8 CPUs) and cluster-b (40), web-0 (4 replicas of 1 CPU) placed 3:1 by
    static weights; the clock half-way through a second (the detector's delays are seeded)."""
    fake = make_karmada_fake(
        [
            cluster("cluster-a", cpu="8", startup=0.5),
            cluster("cluster-b", cpu="40", startup=0.5),
            namespace(),
            cpp("team-cpp", "t1", DAY),
            deployment("web-0", "t1", 4, cpu="1"),
        ]
    )
    now = fake.clock.now()
    fake.advance(math.floor(now) + 1.5 - now)
    return fake


def _client(fake: InProcessKarmada) -> KarmadaClient:
    return fake.client(retry=RetryPolicy(attempts=4, base_delay=0.5, max_retry_after=5.0))


def _switch(
    fake: InProcessKarmada,
    tmp: Path,
    journal: InMemoryJournal,
    trigger: str,
    on_event: Callable[[Any], None] | None = None,
    *,
    ahead: bool = False,
) -> RunRecord:
    """Swap team-cpp for a DynamicWeight policy, one wave, triggered by `trigger`."""
    schedule = schedule_text(
        "team-rb",
        "waveSize: 1\nwaveTimeout: 60s\n",
        windows=swap_window("night", "23:00", "team-cpp", "night.yaml", trigger=trigger),
    )
    path = write_schedule(
        tmp, schedule, {"night.yaml": policy_file(cpp("team-cpp-night", "t1", dynamic_placement()))}
    )
    return run_switch(
        _client(fake),
        load_one(path),
        "night",
        clock=AheadClock(fake.emulator) if ahead else fake.engine_clock(),
        journal=journal,
        on_event=on_event,
    )


def _assigned(fake: InProcessKarmada) -> dict[str, int]:
    last = {
        s["cluster"]: s["assigned"] for s in fake.emulator.timeline() if s["workload"] == WORKLOAD
    }
    return {c: n for c, n in sorted(last.items()) if n}


def _seconds(fake: InProcessKarmada, name: str) -> tuple[int, int]:
    """(creation second, second of the last scheduling it found) of a rebalancer."""
    view = ObjectView(get_rebalancer(_client(fake), name))
    created = view.created
    found = parse_time(json.loads(view.annotations[SCHEDULED_BEFORE])[WORKLOAD])
    assert created is not None and found is not None
    return int(created.timestamp()), int(found.timestamp())


def test_a_rebalancer_throttled_into_the_second_of_the_policys_scheduling_still_moves(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """A rebalancer held up into the second of the policy's scheduling still moves the wave."""
    # the create is throttled for a second, in which the new policy claims the template and the
    # scheduler places it (Steady); the retried create falls in that second
    fake = _fake(make_karmada_fake)
    fake.emulator.faults.inject(
        type="throttle", verb="create", resource="workloadrebalancers", count=1, retry_after=1
    )
    record = _switch(fake, tmp_path, InMemoryJournal(), "rebalance")
    assert record.result is RunResult.SUCCEEDED, record.to_json()
    assert _assigned(fake) == FRESH


def _rebalancers_seen(
    fake: InProcessKarmada, tmp: Path, journal: InMemoryJournal, *, ahead: bool = False
) -> list[tuple[int, int]]:
    """Switch with trigger both; `_seconds` of each rebalancer of the wave."""
    seen: list[tuple[int, int]] = []

    def at_wave_end(event: Any) -> None:  # the run removes its rebalancers when it ends
        if isinstance(event, ev.WaveFinished):
            state = journal.load("team-rb")
            assert state is not None
            seen.extend(_seconds(fake, name) for name in state.waves[0].rebalancers)

    record = _switch(fake, tmp, journal, "both", at_wave_end, ahead=ahead)
    assert record.result is RunResult.SUCCEEDED, record.to_json()
    assert _assigned(fake) == FRESH
    return seen


def test_the_touchs_scheduling_second_passes_before_the_one_rebalancer(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """Trigger both: the touch's scheduling was just seen (its `scheduled` gate), so its second
    passes before the rebalancer is made: one rebalancer, honoured, no ignored write."""
    fake = _fake(make_karmada_fake)
    ((made_at, found),) = _rebalancers_seen(fake, tmp_path, InMemoryJournal())
    assert made_at > found


def test_a_rebalancer_in_the_second_of_the_last_scheduling_is_made_again(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """With the server's clock behind ours, a rebalancer falls in the second of the touch's
    scheduling; it is made again a second later."""
    fake = _fake(make_karmada_fake)
    seen = _rebalancers_seen(fake, tmp_path, InMemoryJournal(), ahead=True)
    (dropped_at, dropped_found), (made_at, made_found) = seen
    assert dropped_at == dropped_found
    assert made_at > made_found == dropped_found


def test_a_resumed_run_makes_the_dropped_rebalancer_again(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """After a crash right after an ignored rebalancer, the resumed run makes another."""

    class CrashingJournal(InMemoryJournal):
        armed = True

        def save(self, state: RunState) -> None:
            if self.armed and state.waves and len(state.waves[0].rebalancers) == 2:
                self.armed = False
                raise Crash
            super().save(state)

    fake = _fake(make_karmada_fake)
    journal = CrashingJournal()
    with pytest.raises(Crash):
        _switch(fake, tmp_path, journal, "both", ahead=True)
    assert _assigned(fake) != FRESH
    record = _switch(fake, tmp_path, journal, "both")
    assert record.result is RunResult.SUCCEEDED, record.to_json()
    assert _assigned(fake) == FRESH
    state = journal.load("team-rb")
    assert state is not None and len(state.waves[0].rebalancers) >= 2
