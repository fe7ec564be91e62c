"""The daemon's queue against the emulator: runs share one budget, who waits for a slot or for
capacity shows in /status, in `tidal status` and in the metrics; a failing run gives back."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.daemon.test_app import get, wait_for
from tests.daemon.test_daemon import NIGHT, NS, schedule_yaml
from tidal.daemon.app import Daemon, Wiring
from tidal.daemon.status import build_status
from tidal.domain.clock import FakeClock
from tidal.engine.journal import RunState
from tidal.engine.states import Phase, RunResult
from tidal.karmada.client import KarmadaClient
from tidal.karmada.state_objects import ensure_namespace
from tidal.loading import load_schedules
from tidal.metrics import Metrics
from tidal.settings import load_settings

pytestmark = pytest.mark.e2e
GPUS = {"cluster-b": {"nvidia.com/gpu": 4.0}}


@dataclass
class SurgingEngine:
    """Stands in for a surging switch: one wave reserves 4 GPUs of cluster-b (all there is),
    holds them until its schedule's event is set, then releases (or fails, if told)."""

    release: dict[str, threading.Event] = field(default_factory=dict)
    fail: set[str] = field(default_factory=set)
    granted: list[str] = field(default_factory=list)

    def __call__(
        self,
        client: Any,
        loaded: Any,
        window_name: str,
        *,
        clock: Any,
        journal: Any,
        on_event: Any,
        run_id: str | None = None,
        resume: Any = None,
        budget: Any = None,
        reads: Any = None,
    ) -> Any:
        name = loaded.schedule.name
        state = RunState(schedule=name, window=window_name, run_id=run_id or "x")
        state.phase = Phase.WAVES
        journal.save(state)
        holder = f"{state.run_id}/wave-1"
        deadline = time.monotonic() + 10
        while not budget.reserve(holder, GPUS, GPUS):
            assert time.monotonic() < deadline, f"{name} never got capacity"
            time.sleep(0.02)
        self.granted.append(name)
        self.release.setdefault(name, threading.Event()).wait(10)
        if name in self.fail:
            raise RuntimeError(f"{name}: the policy is broken")  # the budget is not released
        budget.release(holder)
        state.phase, state.result = Phase.DONE, RunResult.SUCCEEDED
        journal.save(state)
        return state


def write(sched: Path, name: str, priority: int = 0) -> None:
    text = schedule_yaml(name).replace(
        "  catchUpWindow: 30m\n", f"  catchUpWindow: 30m\n  priority: {priority}\n"
    )
    (sched / f"{name}.yaml").write_text(text)


def start(
    client: KarmadaClient, sched: Path, engine: SurgingEngine, slots: int
) -> tuple[Daemon, Metrics, FakeClock]:
    clock = FakeClock(NIGHT + timedelta(seconds=1))
    settings = load_settings(
        schedules=sched,
        port=0,
        state_namespace=NS,
        identity="solo",
        scheduler={
            "max_concurrent_switches": slots,
            "resync_seconds": 3600,
            "capacity_settle_seconds": 0,
        },
    )
    metrics = Metrics()
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=engine, metrics=metrics, watch=False),
    )
    daemon.queue.interval = 0.0
    daemon.start()
    return daemon, metrics, clock


@pytest.fixture
def client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    c = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    ensure_namespace(c, NS)
    return c


def test_waiting_for_capacity_shows_everywhere_and_a_failed_run_gives_back(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """Two teams due at once, room for one surge: the second waits for capacity (status
    endpoint, `tidal status`, metrics); the first fails without releasing (a broken policy),
    yet the daemon gives its room back and the second goes on."""
    sched = tmp_path / "schedules"
    sched.mkdir()
    write(sched, "team-a")
    write(sched, "team-b")
    engine = SurgingEngine(fail={"team-a", "team-b"})
    daemon, metrics, _ = start(client, sched, engine, slots=2)
    try:
        assert wait_for(lambda: len(engine.granted) == 1 and daemon.budget.waiting(), 10)
        first = engine.granted[0]
        second = "team-b" if first == "team-a" else "team-a"
        assert daemon.http is not None
        code, body = get(daemon.http.port, "/status")
        report = json.loads(body)
        assert code == 200
        assert report["waiting"][second]["reason"] == "capacity"
        assert report["waiting"][second]["since"] == (NIGHT + timedelta(seconds=1)).isoformat()
        assert report["leased"] == GPUS
        loaded = load_schedules([sched]).schedules

        def status() -> dict[str, Any]:
            report = build_status(client, NS, "tidal-leader", loaded, NIGHT, check_drift=False)
            return {s["name"]: s for s in report["schedules"]}

        assert wait_for(lambda: status()[second]["waiting"] is not None, 5)
        by_name = status()
        assert by_name[second]["waiting"]["reason"] == "capacity"
        assert by_name[first]["waiting"] is None
        text = metrics.render().decode()
        assert 'tidal_schedules_waiting{reason="capacity"} 1.0' in text
        assert 'tidal_capacity_leased{cluster="cluster-b",resource="nvidia.com/gpu"} 4.0' in text
        with capture_logs() as logs:
            engine.release[first].set()
            assert wait_for(lambda: engine.granted == [first, second], 10)
        assert any(
            e["event"] == "capacity_released"
            and e.get("reason") == "run_ended"
            and e["schedule"] == first
            for e in logs
        )
        engine.release.setdefault(second, threading.Event()).set()
        assert daemon.dispatcher.wait_idle(10)
        assert daemon.budget.leased() == {} and daemon.budget.waiting() == {}
        text = metrics.render().decode()
        assert 'tidal_schedules_waiting{reason="capacity"} 0.0' in text
        assert 'tidal_schedule_wait_seconds_count{reason="capacity"} 1.0' in text
    finally:
        for event in engine.release.values():
            event.set()
        daemon.shutdown(grace_seconds=5)


def test_waiting_for_a_slot_is_shown_and_priority_goes_first(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """One slot, three teams due at once: while one runs, the others wait for a slot (shown
    with since when; a routine pass of a team already switched is not); the higher-priority
    team goes before the earlier-queued one."""
    sched = tmp_path / "schedules"
    sched.mkdir()
    for name, priority in (("team-a", 0), ("team-b", 0), ("team-c", 9)):
        write(sched, name, priority)
    engine = SurgingEngine()
    daemon, metrics, _ = start(client, sched, engine, slots=1)
    try:
        assert wait_for(
            lambda: len(engine.granted) == 1 and len(daemon.dispatcher.waiting()) == 2, 10
        )
        first = engine.granted[0]
        waiting = daemon.dispatcher.waiting()
        assert set(waiting) == {"team-a", "team-b", "team-c"} - {first}
        assert daemon.http is not None
        report = json.loads(get(daemon.http.port, "/status")[1])
        assert {n: w["reason"] for n, w in report["waiting"].items()} == dict.fromkeys(
            waiting, "slot"
        )
        assert 'tidal_schedules_waiting{reason="slot"} 2.0' in metrics.render().decode()
        engine.release.setdefault(first, threading.Event()).set()
        assert wait_for(lambda: len(engine.granted) == 2, 10)
        daemon.dispatcher.submit(first, "resync")  # its start is handled: no switch waits
        assert wait_for(
            lambda: (
                set(daemon.dispatcher.waiting())
                == {"team-a", "team-b", "team-c"} - set(engine.granted)
            ),
            5,
        )
        for name in ("team-a", "team-b", "team-c"):
            engine.release.setdefault(name, threading.Event()).set()
        assert daemon.dispatcher.wait_idle(10)
        assert sorted(engine.granted) == ["team-a", "team-b", "team-c"]
        assert engine.granted.index("team-c") < engine.granted.index("team-b")
        assert daemon.dispatcher.waiting() == {}
    finally:
        for event in engine.release.values():
            event.set()
        daemon.shutdown(grace_seconds=5)
