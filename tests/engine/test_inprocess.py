"""Engine unit tests on the in-process Karmada (tidal_sim.testing): the real engine and access
layer against the emulator's controllers, no sockets, time moved only by the engine's sleeps."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.e2e.switch_helpers import (
    cluster,
    cpp,
    deployment,
    load_one,
    namespace,
    schedule_text,
    static_team,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.engine.states import Phase, RunResult
from tidal.engine.switch import run_switch
from tidal.karmada.client import RetryPolicy
from tidal_sim.testing import InProcessKarmada
from tidal_sim.testing.plugin import MakeKarmadaFake

SCHEDULE = schedule_text(
    "team-u",
    """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 60s
""",
)
ON_B = "ai-app/Deployment/web-{}"


class Crash(Exception):
    pass


def _switch(
    fake: InProcessKarmada,
    tmp: Path,
    *,
    journal: InMemoryJournal | None = None,
    on_event: Any = None,
    schedule: str = SCHEDULE,
) -> RunRecord:
    client = fake.client(retry=RetryPolicy(attempts=4, base_delay=0.5, max_retry_after=5.0))
    return run_switch(
        client,
        load_one(write_schedule(tmp, schedule)),
        "night",
        clock=fake.engine_clock(),
        journal=journal or InMemoryJournal(),
        on_event=on_event,
    )


def _assigned(fake: InProcessKarmada) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for sample in fake.emulator.timeline():
        out.setdefault(sample["workload"], {})[sample["cluster"]] = sample["assigned"]
    return {w: {c: n for c, n in by.items() if n} for w, by in out.items()}


def test_a_night_switch_runs_in_simulated_time(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """Two waves move every workload to cluster-b; the waits cost simulated seconds, not real
    ones, and no socket is opened."""
    fake = make_karmada_fake(static_team())
    began, sim_began = time.monotonic(), fake.clock.now()
    record = _switch(fake, tmp_path)
    assert record.result is RunResult.SUCCEEDED
    assert [len(w.workloads) for w in record.waves] == [2, 2]
    assert all(_assigned(fake)[ON_B.format(i)] == {"cluster-b": 5} for i in range(4))
    assert fake.clock.now() - sim_began >= 1.0  # pods take 0.5s to start, per wave
    assert time.monotonic() - began < 20.0
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.emulator.server.port


def test_a_crash_at_wave_two_resumes_there(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """A crash as wave 2 starts leaves the journal at wave 2; the resumed run touches only
    wave 2's workloads and patches the policy only to restore its activation."""
    fake = make_karmada_fake(static_team())
    journal = InMemoryJournal()

    def crash(event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and event.wave == 2:
            raise Crash

    with pytest.raises(Crash):
        _switch(fake, tmp_path, journal=journal, on_event=crash)
    state = journal.load("team-u")
    assert state is not None and state.completed_waves == [1] and state.phase is Phase.WAVES
    fake.emulator.reset_requests()
    with structlog.testing.capture_logs() as logs:
        record = _switch(fake, tmp_path, journal=journal)
    assert record.result is RunResult.SUCCEEDED and record.run_id == state.run_id
    patched = [
        r.name
        for r in fake.emulator.request_log()
        if r.verb == "patch" and not r.dry_run and r.name
    ]
    assert sorted(n for n in patched if n.startswith("web-")) == ["web-2", "web-3"]
    assert patched.count("team-cpp") == 1
    assert [e["wave"] for e in logs if e["event"] == "wave_started"] == [2]


def test_throttled_writes_are_retried_on_the_manual_clock(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """429s with Retry-After on the first template patches are waited out (simulated time)
    and retried; the run still succeeds."""
    fake = make_karmada_fake(static_team())
    fake.emulator.faults.inject(
        type="throttle", verb="patch", resource="deployments", count=2, retry_after=3
    )
    sim_began = fake.clock.now()
    record = _switch(fake, tmp_path)
    assert record.result is RunResult.SUCCEEDED
    codes = [
        r.code
        for r in fake.emulator.request_log()
        if r.verb == "patch" and r.resource == "deployments"
    ]
    assert codes.count(429) == 2 and codes.count(200) == 4
    assert fake.clock.now() - sim_began >= 6.0  # two Retry-After: 3 waits


def test_pods_that_never_start_fail_the_wave(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """When cluster-b's pods never become ready the first wave times out (in simulated time)
    and the run does not report success; no second wave starts."""
    topology = [
        cluster("cluster-a", startup=0.5),
        cluster("cluster-b", startup=0.5),
        namespace(),
        cpp("team-cpp", "t1", static_team()[3]["spec"]["placement"]),
    ]
    topology += [deployment(f"web-{i}", "t1", 5) for i in range(4)]
    fake = make_karmada_fake(topology)
    fake.emulator.set_pods_fail("cluster-b")
    fake.advance(1.0)
    events: list[Any] = []
    record = _switch(fake, tmp_path, on_event=events.append)
    assert record.result is not RunResult.SUCCEEDED
    assert [e.wave for e in events if isinstance(e, ev.WaveStarted)] == [1]
    failed = [e for e in events if isinstance(e, ev.WaveFinished)]
    assert failed and failed[0].result != "succeeded"
