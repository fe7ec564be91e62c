"""What a surge's room is counted from: the members' capacity, read by the shared budget, shows
room as soon as another tenant's pods are gone (no waiting for Karmada's next Cluster status
refresh); the budget hears of a surge once its pods exist."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import (
    FULL_AVAILABILITY,
    GPU,
    Ledger,
    gpu_cluster,
    gpu_deployment,
    scale,
    surge_schedule,
    team,
)
from tests.e2e.switch_helpers import (
    DAY,
    client_for,
    cpp,
    load_one,
    namespace,
    schedule_text,
    write_schedule,
)
from tidal.daemon.budget import SharedBudget
from tidal.domain.clock import SystemClock
from tidal.engine.budget import SurgeBudget
from tidal.engine.journal import InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient
from tidal.karmada.informer import SharedReads
from tidal.loading import load_schedules
from tidal_sim.emulator import Emulator

ROLLOUT = """
    waveSize: 100%
    pauseBetweenWaves: 0s
    waveTimeout: 8s
    surge: {headroomPercent: 0, whenNoRoom: refuse}
    floors:
      - minAvailablePercent: 100
"""


def _platform() -> list[dict[str, Any]]:
    """cluster-b holds team t1's one day replica and a filler of 4 GPUs, and 4 GPUs free; its
    Cluster status is refreshed once an hour (so never during the test)."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"memberPods": True, "clusterStatusUpdateSeconds": 3600},
    }
    filler = gpu_deployment("filler", 4)
    filler["metadata"]["labels"]["team"] = "filler"
    return [
        settings,
        gpu_cluster("cluster-a", 64, startup=0.5),
        gpu_cluster("cluster-b", 9, startup=0.5),
        namespace(),
        cpp("team-cpp", "t1", DAY),
        cpp("filler-cpp", "filler", {"clusterAffinity": {"clusterNames": ["cluster-b"]}}),
        gpu_deployment("web", 5),
        filler,
    ]


def _night_in_background(
    client: KarmadaClient, loaded: Any, budget: SurgeBudget, reads: SharedReads | None = None
) -> tuple[threading.Thread, list[RunRecord]]:
    """The schedule's night window switching in a thread (with the daemon's shared reads when
    given); its record lands in the list once it ends."""
    records: list[RunRecord] = []

    def night() -> None:
        with reads.in_use() if reads is not None else contextlib.nullcontext():
            records.append(
                run_switch(
                    client,
                    loaded,
                    "night",
                    clock=SystemClock(),
                    journal=InMemoryJournal(),
                    budget=budget,
                    reads=reads,
                )
            )

    thread = threading.Thread(target=night)
    thread.start()
    return thread, records


def _b_status_counts_everything(emu: Emulator) -> bool:
    """A Cluster status refresh written now (an allocatable change is written at once)."""
    emu.set_capacity("cluster-b", {"pods": "999"})
    time.sleep(0.3)
    cluster = emu.store.get(emu._cluster_type(), None, "cluster-b")
    allocated = cluster["status"]["resourceSummary"].get("allocated") or {}
    return str(allocated.get(GPU)) == "5"


@pytest.mark.parametrize("source", ["members", "cluster-status"])
def test_room_another_tenant_gives_back_is_granted_before_the_next_status_refresh(
    make_switch_emulator: Any, tmp_path: Path, source: str
) -> None:
    """Another team's surge holds cluster-b's 4 free GPUs, so this team's surge waits for room;
    then the filler leaves. Reading the members, the wave is granted and the switch succeeds
    while Cluster status still shows the filler; reading Cluster status (the control), the
    wave never sees the room and times out."""
    emu = make_switch_emulator(_platform())
    assert _b_status_counts_everything(emu)
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, member_capacity=source == "members")
    budget = SharedBudget(SystemClock())
    other = {"cluster-b": {GPU: 4.0}}
    assert budget.for_schedule("team-other").reserve("team-other/r/w1", other, other)
    loaded = load_one(write_schedule(tmp_path, schedule_text("team-t1", ROLLOUT)))
    thread, records = _night_in_background(client, loaded, budget.for_schedule("team-t1"), reads)
    end = time.monotonic() + 10
    while not budget.waiting() and time.monotonic() < end:
        time.sleep(0.05)
    assert budget.waiting(), "the wave never asked for room"
    scale(client, "filler", 0)
    thread.join(30)
    (record,) = records
    cluster = emu.store.get(emu._cluster_type(), None, "cluster-b")
    assert str(cluster["status"]["resourceSummary"]["allocated"].get(GPU)) == "5"  # stale
    if source == "members":
        assert str(record.result) == "succeeded", record.reason
    else:
        assert str(record.result) == "failed" and "no room" in str(record.reason)


def test_the_budget_hears_of_a_surge_once_its_pods_exist_not_once_they_are_ready(
    make_switch_emulator: Any, tmp_path: Path
) -> None:
    """While the surged pods exist but cannot become ready, the budget is told they run
    (capacity counts a pod from its creation), once; the wave itself still waits for them."""
    emu = make_switch_emulator(team([5]))
    client = client_for(emu, tmp_path)
    (loaded,) = load_schedules([surge_schedule(tmp_path, FULL_AVAILABILITY)]).schedules
    ledger = Ledger(True)
    emu.set_pods_fail("cluster-b")
    thread, records = _night_in_background(client, loaded, ledger)
    end = time.monotonic() + 15
    while ("running" not in [c[0] for c in ledger.calls]) and time.monotonic() < end:
        time.sleep(0.05)
    verbs = [verb for verb, _, _ in ledger.calls]
    assert verbs == ["reserve", "running"], verbs  # told, and not released: still waiting
    emu.set_pods_fail("cluster-b", False)
    thread.join(30)
    (record,) = records
    assert str(record.result) == "succeeded", record.reason
    assert [verb for verb, _, _ in ledger.calls] == ["reserve", "running", "release"]
