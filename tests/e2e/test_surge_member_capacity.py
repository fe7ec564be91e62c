"""What a surge's room is counted from: the members' capacity, read by the shared budget, shows
room as soon as another tenant's pods are gone (no waiting for Karmada's next Cluster status
refresh); the budget hears of a surge once its pods exist."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

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
    NS,
    client_for,
    cpp,
    load_one,
    namespace,
    schedule_text,
    write_schedule,
)
from tidal.daemon.budget import SharedBudget
from tidal.domain.clock import SystemClock
from tidal.engine.budget import SurgeBudget, Versions
from tidal.engine.journal import InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.engine.switch import run_switch
from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import KarmadaClient
from tidal.karmada.informer import SharedReads
from tidal.karmada.views import BindingView
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


class _RelayWatch(Ledger):
    """A Ledger that, when told the surge runs, notes how many replicas of web-0 in cluster-b
    the binding's status shows then (what Karmada relayed from the member so far)."""

    def __init__(self, client: KarmadaClient) -> None:
        super().__init__(True)
        self.client = client
        self.relayed_at_running: int | None = None

    def relayed(self) -> dict[str, int | None]:
        (binding,) = [
            b
            for b in list_bindings(self.client, NS, cluster_scoped=False)[0]
            if b["metadata"]["name"] == "web-0-deployment"
        ]
        return BindingView.of(binding).member_replicas()

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        self.relayed_at_running = self.relayed().get("cluster-b")
        super().running(holder, versions)


@pytest.mark.parametrize("source", ["members", "cluster-status"])
def test_reading_the_members_the_budget_hears_of_a_surge_before_karmada_relays_its_pods(
    make_switch_emulator: Any, tmp_path: Path, source: str
) -> None:
    """Karmada relays member status to the binding 3 s late here (60 s on the emulator's 20x
    clock): reading the members, the
    wave tells the budget its surged pods exist as soon as the member's pods in its namespace
    have grown by the room it leased, while the binding still shows the day's one replica;
    reading Cluster status (the control), only once the binding shows all five."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"statusDelaySeconds": 60},
    }
    emu = make_switch_emulator([settings, *team([5])])
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, member_capacity=source == "members")
    (loaded,) = load_schedules([surge_schedule(tmp_path, FULL_AVAILABILITY)]).schedules
    ledger = _RelayWatch(client)
    end = time.monotonic() + 15
    while ledger.relayed() != {"cluster-a": 4, "cluster-b": 1} and time.monotonic() < end:
        time.sleep(0.1)  # the day's replicas reach the binding
    emu.set_pods_fail("cluster-b")  # the surged pods exist and never become ready
    with reads.in_use():
        if reads.members is not None:  # a daemon that has watched cluster-b before
            reads.members.free(["cluster-b"])
            end = time.monotonic() + 10
            while not reads.members.free(["cluster-b"])[0] and time.monotonic() < end:
                time.sleep(0.05)
        thread, records = _night_in_background(client, loaded, ledger, reads)
        end = time.monotonic() + 20
        while ledger.relayed_at_running is None and time.monotonic() < end:
            time.sleep(0.05)
        emu.set_pods_fail("cluster-b", False)
        thread.join(60)
    (record,) = records
    assert str(record.result) == "succeeded", record.reason
    assert [verb for verb, _, _ in ledger.calls] == ["reserve", "running", "release"]
    assert ledger.relayed_at_running == (1 if source == "members" else 5)


def test_a_member_that_refuses_its_watches_is_read_from_its_cluster_status(
    make_switch_emulator: Any, tmp_path: Path
) -> None:
    """The default capacity source on a member whose RBAC refuses the proxied watches: one
    warning names the member and the fix, the wave's room comes from Cluster status, and the
    surge switch succeeds."""
    emu = make_switch_emulator(team([5]))
    emu.server.members.refusing.add("cluster-b")
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, member_capacity=True)
    (loaded,) = load_schedules([surge_schedule(tmp_path, FULL_AVAILABILITY)]).schedules
    budget = SharedBudget(SystemClock())
    with capture_logs() as logs:
        thread, records = _night_in_background(client, loaded, budget.for_schedule("team-s"), reads)
        thread.join(60)
    (record,) = records
    assert str(record.result) == "succeeded", record.reason
    refused = [e for e in logs if e["event"] == "member_capacity_refused"]
    assert [(e["cluster"], e["fallback"]) for e in refused] == [("cluster-b", "cluster-status")]
    assert "TIDAL_SCHEDULER__CAPACITY_SOURCE=cluster-status" in refused[0]["fix"]
