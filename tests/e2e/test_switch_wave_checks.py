"""Checks made before each wave: a destination cluster gone NotReady fails the wave with its
own reason; a hand edit of a policy since this run wrote it halts the run, and nothing (not
even a rollback) overwrites the edit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import wait_for
from tests.e2e.switch_helpers import (
    NS,
    MakeEmulator,
    client_for,
    latest,
    schedule_text,
    switch,
    write_schedule,
)
from tidal.domain.prediction import ClusterFacts
from tidal.engine import events as ev
from tidal.karmada import policies
from tidal.karmada.informer import SharedReads

pytestmark = pytest.mark.e2e

EDIT: dict[str, Any] = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": 1},
            ]
        },
    },
    "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
}


def _schedule(tmp: Path, on_failure: str) -> Path:
    rollout = (
        f"waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 20s\nonFailure: {on_failure}"
        "\nfloors:\n  - clusters: [cluster-b]\n    minReadyReplicas: 1"
    )
    return write_schedule(tmp, schedule_text("team-w", rollout))


def _wave_2_fails_with(
    emu: Any,
    client: Any,
    path: Path,
    on_event: Callable[[Any], None],
    failure: str,
    reads: SharedReads | None = None,
) -> Any:
    """A run alone with its own informers, faults cleared after it: it fails, and its wave 2
    fails with `failure` before it starts; its run record."""
    events: list[Any] = []
    try:
        record = switch(
            client,
            path,
            "night",
            events=events,
            on_event=on_event,
            reads=reads or SharedReads(client, private=True),
        )
    finally:
        emu.faults.clear()
    assert record.result == "failed", record.to_json()
    failed = [e for e in events if isinstance(e, ev.WaveFinished) and e.result == "failed"]
    assert [(e.wave, e.failure) for e in failed] == [(2, failure)]
    assert not [e for e in events if isinstance(e, ev.WaveStarted) and e.wave == 2]
    return record


def test_a_destination_cluster_gone_not_ready_fails_the_next_wave(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b goes NotReady after wave 1 (and the run's Cluster watch has seen it): wave 2
    fails at once with cluster_not_ready and moves nothing into it."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="1000")
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, private=True)

    def b_down() -> bool:
        return any(
            c.name == "cluster-b" and not c.ready
            for c in map(ClusterFacts.from_cluster, reads.list_clusters())
        )

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            emu.set_cluster_ready("cluster-b", False, reason="ClusterNotReachable")
            wait_for(b_down, 10, "the run's Cluster informer to see cluster-b NotReady")

    events: list[Any] = []
    record = switch(
        client,
        _schedule(tmp_path, "halt"),
        "night",
        events=events,
        on_event=on_event,
        reads=reads,
    )
    assert record.result == "failed", record.to_json()
    assert [(w.index, w.result) for w in record.waves] == [(1, "succeeded"), (2, "failed")]
    failed = [e for e in events if isinstance(e, ev.WaveFinished) and e.result == "failed"]
    assert [(e.wave, e.failure) for e in failed] == [(2, "cluster_not_ready")]
    assert "cluster-b" in record.waves[1].reason and "NotReady" in record.waves[1].reason
    assert not [e for e in events if isinstance(e, ev.WaveStarted) and e.wave == 2]
    now = latest(emu)
    for name in ("web-2", "web-3"):
        assert now[(f"{NS}/Deployment/{name}", "cluster-a")][0] >= 1


@pytest.mark.parametrize("on_failure", ["halt", "rollback"])
def test_a_hand_edit_mid_run_halts_and_is_never_overwritten(
    make_switch_emulator: MakeEmulator, tmp_path: Path, on_failure: str
) -> None:
    """The policy is edited by hand after wave 1, the moment it ends (whether or not the
    run's policy watch has delivered it yet): wave 2 fails with policy_drift, the run halts
    (even with onFailure rollback) and the policy keeps the edit."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="1000")
    client = client_for(emu, tmp_path)

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            policies.patch_policy(
                client, "ClusterPropagationPolicy", "team-cpp", None, {"spec": {"placement": EDIT}}
            )

    record = _wave_2_fails_with(
        emu, client, _schedule(tmp_path, on_failure), on_event, "policy_drift"
    )
    assert "team-cpp" in record.reason and "edited" in record.reason
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    placement = policy["spec"]["placement"]
    assert (
        placement["replicaScheduling"]["weightPreference"]
        == EDIT["replicaScheduling"]["weightPreference"]
    )


@pytest.mark.parametrize("on_failure", ["halt", "rollback"])
def test_a_hand_edit_the_stuck_policy_watch_never_delivers_still_halts(
    make_switch_emulator: MakeEmulator, tmp_path: Path, on_failure: str
) -> None:
    """The run's policy watch is stuck (open, silent: the edit never reaches its cache) when
    the policy is edited by hand after wave 1: the drift check does not trust that cache;
    wave 2 fails with policy_drift and the edit stays."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="1000")
    client = client_for(emu, tmp_path)

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            emu.faults.inject(type="stall-watch", resource="clusterpropagationpolicies")
            policies.patch_policy(
                client, "ClusterPropagationPolicy", "team-cpp", None, {"spec": {"placement": EDIT}}
            )

    _wave_2_fails_with(emu, client, _schedule(tmp_path, on_failure), on_event, "policy_drift")
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    weights = policy["spec"]["placement"]["replicaScheduling"]["weightPreference"]
    assert weights == EDIT["replicaScheduling"]["weightPreference"]


def test_a_cluster_gone_not_ready_while_the_cluster_watch_is_down_fails_the_next_wave(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """After wave 1 the run's Cluster watch is cut and every new one refused (500), then
    cluster-b goes NotReady: the cache that stopped following still shows it Ready, and is
    not read; wave 2 fails with cluster_not_ready and moves nothing into it."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="1000")
    client = client_for(emu, tmp_path)
    reads = SharedReads(client, private=True)

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            emu.faults.inject(type="error", verb="watch", resource="clusters")
            emu.faults.inject(type="drop-watch", resource="clusters")
            emu.set_cluster_ready("cluster-b", False, reason="ClusterNotReachable")
            # the cut must have reached the run's informer: no client can know of it sooner
            clusters = reads.informers["clusters"]
            wait_for(lambda: not clusters.live, 10, "the run's Cluster watch to end")

    _wave_2_fails_with(
        emu, client, _schedule(tmp_path, "halt"), on_event, "cluster_not_ready", reads
    )
