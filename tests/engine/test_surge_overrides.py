"""A wave's grouped overrides on the emulator: one per distinct split; a workload whose split
is fitted joins its new group before it leaves its old one; a lifted one leaves at once, and
an emptied group goes; the release deletes the wave's by their labels in one request."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tidal.domain.clock import SystemClock
from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import SurgeRecord
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction
from tidal.engine.surge_overrides import remove_overrides, write_overrides
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import list_overrides

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext

pytestmark = pytest.mark.e2e


@dataclass
class _Run:
    """What the override steps read of a run (tidal.engine.inflight.SwitchContext)."""

    client: KarmadaClient
    schedule: str = "team-g"
    run_id: str = "r1"
    wave_timeout: float = 10.0
    clock: SystemClock = field(default_factory=SystemClock)
    collection_refused: set[str] = field(default_factory=set)
    overrides_written: dict[str, Any] = field(default_factory=dict)
    saves: int = 0

    def save(self) -> None:
        self.saves += 1


def _workloads(*names: str) -> dict[str, Workload]:
    out = {}
    for name in names:
        w = Workload(WorkloadKey(NS, name, "Deployment", "apps/v1"), {}, None, "team-cpp")
        out[w.name] = w
    return out


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
    run = _Run(client)
    ctx = cast("SwitchContext", run)
    workloads = _workloads("web-0", "web-1", "web-2")
    w0, w1, w2 = workloads
    record = SurgeRecord({w0: {"cluster-b": 5}, w1: {"cluster-b": 5}, w2: {"cluster-b": 6}})
    write_overrides(ctx, 1, record, workloads, direction=Direction.FORWARD)
    assert _selected(client) == {5: ["web-0", "web-1"], 6: ["web-2"]}
    assert len(record.overrides) == 2

    emu.reset_requests()
    before = {name: dict(split) for name, split in record.targets.items()}
    record.targets[w0] = {"cluster-b": 6}
    write_overrides(ctx, 1, record, workloads, direction=Direction.FORWARD, before=before)
    assert _selected(client) == {5: ["web-1"], 6: ["web-0", "web-2"]}
    names = {v.replicas()["cluster-b"]: v.name for v in list_overrides(client, schedule="team-g")}
    puts = [r.name for r in emu.request_log() if r.verb == "update"]
    assert puts == [names[6], names[5]]  # web-0 held by the 5 group until the 6 group has it
    assert run.saves

    emu.reset_requests()
    before = {name: dict(split) for name, split in record.targets.items()}
    record.targets[w1] = {}
    write_overrides(ctx, 1, record, workloads, direction=Direction.FORWARD, before=before)
    writes = [(r.verb, r.name) for r in emu.request_log() if r.verb != "get"]
    assert writes == [("delete", names[5])]  # the 6 group, unchanged, is not written
    assert _selected(client) == {6: ["web-0", "web-2"]}
    assert len(record.overrides) == 1

    emu.reset_requests()
    remove_overrides(
        ctx, 1, record, direction=Direction.FORWARD, deadline=run.clock.monotonic() + 10
    )
    assert [r.verb for r in emu.request_log()] == ["deletecollection"]
    assert record.overrides == [] and list_overrides(client, schedule="team-g") == []
