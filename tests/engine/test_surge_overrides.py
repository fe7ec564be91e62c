"""The run's grouped overrides on the emulator: one per distinct split, shared by every wave
that holds it; a workload whose split is fitted joins its new group before it leaves its old
one; a lifted one leaves at once, and an emptied group goes; a second wave joins the groups in
one write each; the last release deletes them all by their labels in one request."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tidal.domain.clock import SystemClock
from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import SurgeRecord, WaveState
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction, SurgeStep
from tidal.engine.surge_overrides import sync
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import list_overrides

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext

pytestmark = pytest.mark.e2e


@dataclass
class _State:
    waves: list[WaveState] = field(default_factory=list)


@dataclass
class _Run:
    """What the override steps read of a run (tidal.engine.inflight.SwitchContext)."""

    client: KarmadaClient
    everyone: list[Workload]
    schedule: str = "team-g"
    run_id: str = "r1"
    wave_timeout: float = 10.0
    clock: SystemClock = field(default_factory=SystemClock)
    collection_refused: set[str] = field(default_factory=set)
    overrides_written: dict[str, Any] = field(default_factory=dict)
    state: _State = field(default_factory=_State)
    saves: int = 0

    def save(self) -> None:
        self.saves += 1

    def wave(self, index: int, record: SurgeRecord) -> SurgeRecord:
        keys = [WorkloadKey.parse(name) for name in record.targets]
        wave = WaveState(index, keys)
        wave.forward.surge = record
        self.state.waves.append(wave)
        record.advance(SurgeStep.RESERVED)
        return record


def _workloads(*names: str) -> list[Workload]:
    return [
        Workload(WorkloadKey(NS, name, "Deployment", "apps/v1"), {}, None, "team-cpp")
        for name in names
    ]


def _selected(client: KarmadaClient) -> dict[int, list[str]]:
    """cluster-b replicas -> the templates its override selects."""
    return {
        v.replicas()["cluster-b"]: sorted(name for *_rest, name in v.templates())
        for v in list_overrides(client, schedule="team-g")
    }


def test_groups_follow_fits_and_lifts_without_leaving_a_workload_unheld(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Three workloads, two splits: two overrides; web-0 fitted from 5 to 6 joins the 6 group
    (written first) before the 5 group lets it go; web-1 lifted empties the 5 group, which is
    deleted; the release deletes the rest in one request."""
    emu = make_switch_emulator(workloads=3, replicas=5)
    client = client_for(emu, tmp_path)
    workloads = _workloads("web-0", "web-1", "web-2")
    run = _Run(client, workloads)
    ctx = cast("SwitchContext", run)
    w0, w1, w2 = (w.name for w in workloads)
    record = run.wave(
        1, SurgeRecord({w0: {"cluster-b": 5}, w1: {"cluster-b": 5}, w2: {"cluster-b": 6}})
    )
    sync(ctx, Direction.FORWARD)
    assert _selected(client) == {5: ["web-0", "web-1"], 6: ["web-2"]}
    assert len(record.overrides) == 2

    emu.reset_requests()
    record.targets[w0] = {"cluster-b": 6}
    sync(ctx, Direction.FORWARD)
    assert _selected(client) == {5: ["web-1"], 6: ["web-0", "web-2"]}
    names = {v.replicas()["cluster-b"]: v.name for v in list_overrides(client, schedule="team-g")}
    puts = [r.name for r in emu.request_log() if r.verb == "update"]
    assert puts == [names[6], names[5]]  # web-0 held by the 5 group until the 6 group has it
    assert run.saves

    emu.reset_requests()
    record.targets[w1] = {}
    sync(ctx, Direction.FORWARD)
    writes = [(r.verb, r.name) for r in emu.request_log() if r.verb != "get"]
    assert writes == [("delete", names[5])]  # the 6 group, unchanged, is not written
    assert _selected(client) == {6: ["web-0", "web-2"]}
    assert len(record.overrides) == 1

    emu.reset_requests()
    record.advance(SurgeStep.RELEASING)
    sync(ctx, Direction.FORWARD)
    assert [r.verb for r in emu.request_log()] == ["deletecollection"]
    assert record.overrides == [] and list_overrides(client, schedule="team-g") == []


def test_waves_share_the_runs_groups_and_a_parked_one_stays_until_the_last_release(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Wave 2 needs the split wave 1 has: it joins wave 1's group with one update, no
    create; wave 1 parked keeps its member there; taking wave 2 out while wave 1 is parked
    is one update; the run's last release is one deletecollection."""
    emu = make_switch_emulator(workloads=4, replicas=5)
    client = client_for(emu, tmp_path)
    workloads = _workloads("web-0", "web-1", "web-2", "web-3")
    run = _Run(client, workloads)
    ctx = cast("SwitchContext", run)
    w0, w1, w2, w3 = (w.name for w in workloads)
    first = run.wave(1, SurgeRecord({w0: {"cluster-b": 5}, w1: {"cluster-b": 4}}))
    sync(ctx, Direction.FORWARD)
    first.advance(SurgeStep.SURGED)
    first.advance(SurgeStep.MOVING)
    first.advance(SurgeStep.PARKED)

    emu.reset_requests()
    second = run.wave(2, SurgeRecord({w2: {"cluster-b": 5}, w3: {"cluster-b": 5}}))
    sync(ctx, Direction.FORWARD)
    assert [r.verb for r in emu.request_log()] == ["update"]
    assert _selected(client) == {4: ["web-1"], 5: ["web-0", "web-2", "web-3"]}
    assert first.overrides and set(second.overrides) < set(first.overrides)

    emu.reset_requests()
    second.advance(SurgeStep.SURGED)
    second.advance(SurgeStep.RELEASING)
    sync(ctx, Direction.FORWARD)
    assert [r.verb for r in emu.request_log()] == ["update"]
    assert _selected(client) == {4: ["web-1"], 5: ["web-0"]}
    assert second.overrides == []

    emu.reset_requests()
    first.advance(SurgeStep.RELEASING)
    sync(ctx, Direction.FORWARD)
    assert [r.verb for r in emu.request_log()] == ["deletecollection"]
    assert first.overrides == [] and list_overrides(client, schedule="team-g") == []
