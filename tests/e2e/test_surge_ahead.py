"""Surges raised ahead of their turn (tidal.engine.pacing): wave 2's overrides go up while
wave 1 settles when the destination has room for both and the budget grants it at once; not
when the plan has no room for both, nor when the budget refuses; a crash while wave 2 is
raised ahead resumes clean; a halt or a rollback with wave 2 raised gives everything back."""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.e2e.daemon_helpers import wait_for
from tests.e2e.surge_helpers import (
    Ledger,
    dips,
    no_overrides,
    scale,
    slow_startup,
    splits,
    surge_schedule,
    team,
)
from tests.e2e.switch_helpers import MakeEmulator, client_for, load_one
from tests.engine.crashing import crash_run, wave_starts
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.budget import Need, Versions
from tidal.engine.journal import InMemoryJournal
from tidal.engine.planning import build_plan
from tidal.engine.states import RunResult, SurgeStep
from tidal.engine.sweeper import LeftoverKind, find_leftovers
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import list_overrides

pytestmark = pytest.mark.e2e

ROLLOUT = "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n"


def _night(
    client: KarmadaClient, path: Path, **kwargs: Any
) -> tuple[Any, list[MutableMapping[str, Any]]]:
    """The night switch, its structured log entries captured."""
    with capture_logs() as logs:
        record = run_switch(
            client,
            load_one(path),
            "night",
            clock=SystemClock(),
            journal=kwargs.pop("journal", InMemoryJournal()),
            **kwargs,
        )
    return record, logs


def _named(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e.get("event") == event]


def _override_writes(emu: Any) -> list[tuple[str, int]]:
    """Each override create or update, and when (the request log's sequence numbers)."""
    return [
        (r.verb, r.seq)
        for r in emu.request_log()
        if r.resource == "overridepolicies" and r.verb in ("create", "update") and not r.dry_run
    ]


def _first_touch(emu: Any) -> int:
    return int(
        min(r.seq for r in emu.request_log() if r.resource == "deployments" and r.verb == "patch")
    )


def _no_leftover_objects(client: KarmadaClient) -> None:
    """Neither the run's overrides nor a bridge placement stays (the sweeper's view; a halt
    keeps the temporary Lazy on purpose, for the next run of the window)."""
    no_overrides(client)
    kept = [x for x in find_leftovers(client, {}) if x.kind is not LeftoverKind.LAZY]
    assert kept == []


def test_wave_2_is_raised_while_wave_1_settles_when_the_room_allows(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Four 5-replica workloads (4:1, night all in cluster-b) in waves of 2, cluster-b with
    room for every surge: wave 2 joins the run's override (one split) before wave 1 moves (its
    first touch), and the plan announced both surges held at once."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, ROLLOUT)
    sp = build_plan(client, load_one(path).schedule, "night")
    assert [room.raised_to for room in sp.plan.rooms] == [2, 2]
    assert sp.plan.rooms[0].extra["cluster-b"]["nvidia.com/gpu"] == 16.0  # 2 waves x 2 x 4
    before = splits(emu)
    emu.reset_requests()
    t0 = emu.clock.now()
    record, logs = _night(client, path)
    assert record.result == "succeeded", record.to_json()
    ahead = _named(logs, "surge_raised_ahead")
    assert [(e["wave"], e["during"], len(e["workloads"])) for e in ahead] == [(2, 1, 2)]
    order = [e["event"] for e in logs if e["event"] in ("surge_raised_ahead", "wave_succeeded")]
    assert order[:2] == ["surge_raised_ahead", "wave_succeeded"]
    # one override for the run's one split: created for wave 1, joined by wave 2, both before
    # wave 1 moves; nothing written after
    assert [verb for verb, seq in _override_writes(emu) if seq < _first_touch(emu)] == [
        "create",
        "update",
    ]
    assert len(_override_writes(emu)) == 2
    assert dips(emu, t0, before, splits(emu)) == []
    no_overrides(client)


def test_no_wave_is_raised_ahead_when_the_plan_has_no_room_for_two(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b with room for one wave's surge at a time (21 GPUs, 4 in use, 10% headroom:
    15.3 usable against 8 a wave): the plan raises nothing ahead and neither does the run."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=21))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, ROLLOUT)
    sp = build_plan(client, load_one(path).schedule, "night")
    assert [room.raised_to for room in sp.plan.rooms] == [1, 2]
    emu.reset_requests()
    record, logs = _night(client, path)
    assert record.result == "succeeded", record.to_json()
    assert _named(logs, "surge_raised_ahead") == []
    creates = [seq for verb, seq in _override_writes(emu) if verb == "create"]
    assert len([seq for seq in creates if seq < _first_touch(emu)]) == 1
    no_overrides(client)


class OneHold(Ledger):
    """A budget with room for one hold at a time (a busy shared budget)."""

    def __init__(self) -> None:
        super().__init__(True)
        self.held: set[str] = set()

    def reserve(
        self, holder: str, need: Need, free: Need, versions: Versions | None = None
    ) -> bool:
        super().reserve(holder, need, free, versions)
        if self.held - {holder}:
            return False
        self.held.add(holder)
        return True

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        super().release(holder, versions)
        self.held.discard(holder)


def test_a_budget_that_refuses_leaves_wave_2_for_its_own_turn_and_no_waiter(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The plan has room for both, the budget for one hold: the look-ahead asks once, is
    refused, withdraws at once (a release, so a shared budget keeps no waiter) and wave 2
    surges at its own turn."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    budget = OneHold()
    record, logs = _night(client, surge_schedule(tmp_path, ROLLOUT), budget=budget)
    assert record.result == "succeeded", record.to_json()
    assert _named(logs, "surge_raised_ahead") == []
    calls = [(verb, holder.rsplit("/", 1)[1]) for verb, holder, _ in budget.calls]
    assert calls[:3] == [("reserve", "w1"), ("reserve", "w2"), ("release", "w2")]
    assert calls[3:] == [
        ("running", "w1"),
        ("release", "w1"),
        ("reserve", "w2"),
        ("running", "w2"),
        ("release", "w2"),
    ]
    no_overrides(client)


def _raised(event: Any) -> bool:
    return isinstance(event, ev.SurgeRaisedAhead) and event.wave == 2


@pytest.mark.parametrize(
    "when",
    [_raised, wave_starts(2)],
    ids=["just-raised-while-wave-1-starts", "at-wave-2-own-turn"],
)
def test_a_crash_with_wave_2_raised_ahead_resumes_clean(
    make_switch_emulator: MakeEmulator, tmp_path: Path, when: Callable[[Any], bool]
) -> None:
    """Crashed with wave 2's surge up ahead of its turn (journalled surged, never started):
    the resume raises nothing ahead, finds wave 2's overrides and replicas at its turn, puts
    back nothing that is there, and ends with every workload moved, no dip, nothing left."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    loaded = load_one(surge_schedule(tmp_path, ROLLOUT))
    before = splits(emu)
    t0 = emu.clock.now()
    journal = InMemoryJournal()
    crash_run(client, loaded, journal, when)
    state = journal.load("team-s")
    assert state is not None
    wave_2 = state.waves[1].forward.surge
    assert wave_2 is not None and wave_2.step is SurgeStep.SURGED and wave_2.overrides
    raised = {o.split("/")[-1] for o in wave_2.overrides}
    assert raised <= {v.name for v in list_overrides(client, schedule="team-s")}
    emu.reset_requests()
    with capture_logs() as logs:
        resumed = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert resumed.result == "succeeded", resumed.to_json()
    assert resumed.run_id == state.run_id
    assert _named(logs, "surge_raised_ahead") == []
    # every override of the journal was there
    assert [verb for verb, _seq in _override_writes(emu) if verb == "create"] == []
    after = splits(emu)
    assert all(set(split) == {"cluster-b"} for split in after.values()), after
    assert dips(emu, t0, before, after) == []
    _no_leftover_objects(client)


@pytest.mark.parametrize("on_failure", ["halt", "rollback"])
def test_an_abort_after_wave_1_gives_back_the_surge_raised_ahead(
    make_switch_emulator: MakeEmulator, tmp_path: Path, on_failure: str
) -> None:
    """The operator aborts between wave 1 and wave 2 (run.interlude), wave 2's surge up ahead:
    halted or rolled back, the run removes wave 2's overrides and gives its room back; the
    sweeper finds nothing left."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, ROLLOUT + f"onFailure: {on_failure}\n")
    budget = Ledger(True)
    asked: list[tuple[int, float]] = []

    def interlude(run_id: str, index: int, pause: float) -> str | None:
        asked.append((index, pause))
        return "aborted by the operator"

    record, logs = _night(client, path, budget=budget, interlude=interlude)
    assert asked == [(1, 0.0)]
    assert [e["wave"] for e in _named(logs, "surge_raised_ahead")] == [2]
    expected = RunResult.FAILED if on_failure == "halt" else RunResult.ROLLED_BACK
    assert record.result is expected, record.to_json()
    holders = {h for _verb, h, _ in budget.calls}
    for holder in holders:  # every hold (wave 2's raised one too) given back
        verbs = [v for v, h, _ in budget.calls if h == holder]
        assert verbs[-1] == "release", (holder, verbs)
    _no_leftover_objects(client)


def test_a_workload_scaled_while_its_wave_is_raised_ahead_is_followed_before_its_turn(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """web-2 (wave 2) scaled from 5 to 10 while wave 1's surged pods still start and wave 2 is
    raised ahead: its override is lifted at once (the surge_rescaled warning comes before wave
    2 starts), not left capping the new scale until wave 2's turn; the run succeeds with no
    override left."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    slow_startup(client, "cluster-b", 60)
    path = surge_schedule(tmp_path, ROLLOUT)
    scaler_client = client_for(emu, tmp_path / "scaler")

    def scale_once_raised() -> None:
        wait_for(lambda: _selects(scaler_client, "web-2"), 60, "wave 2 raised")
        scale(scaler_client, "web-2", 10)

    scaler = threading.Thread(target=scale_once_raised, daemon=True)
    scaler.start()
    record, logs = _night(client, path)
    scaler.join(10)
    assert record.result == "succeeded", record.to_json()
    order = [
        (e["event"], e.get("wave"), e.get("code"))
        for e in logs
        if e["event"] == "wave_started" or e.get("code") == "surge_rescaled"
    ]
    assert order.index(("warning", 2, "surge_rescaled")) < order.index(("wave_started", 2, None))
    no_overrides(client)


def _selects(client: KarmadaClient, name: str) -> bool:
    """An override of the run selects the template `name`."""
    return any(
        name == template
        for view in list_overrides(client, schedule="team-s")
        for *_rest, template in view.templates()
    )


class _SurgeSaves(InMemoryJournal):
    """An in-memory journal that notes wave 2's surge record (step, override names) as each
    save stores it."""

    def __init__(self) -> None:
        super().__init__()
        self.wave_2: list[tuple[SurgeStep, int]] = []

    def save(self, state: Any) -> None:
        super().save(state)
        record = state.waves[1].forward.surge if len(state.waves) > 1 else None
        if record is not None:
            seen = (record.step, len(record.overrides))
            if not self.wave_2 or self.wave_2[-1] != seen:
                self.wave_2.append(seen)


def test_a_surge_raised_ahead_is_journalled_with_its_names_before_its_first_write(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Wave 2 raised ahead: the first save that holds its record holds it reserved with its
    override named (a crash right after the write finds it), the next one holds it up; no
    save in between."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client = client_for(emu, tmp_path)
    journal = _SurgeSaves()
    record, logs = _night(client, surge_schedule(tmp_path, ROLLOUT), journal=journal)
    assert record.result == "succeeded", record.to_json()
    assert [e["wave"] for e in _named(logs, "surge_raised_ahead")] == [2]
    assert journal.wave_2[:2] == [(SurgeStep.RESERVED, 1), (SurgeStep.SURGED, 1)]
