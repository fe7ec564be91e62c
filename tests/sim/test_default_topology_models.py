"""The default topology shows both sides of the resource-model rule: clusters with GPU grades
take GPU DynamicWeight teams, and a cluster left with Karmada's default models has no room for
them from v1.18 on (v1.17 falls back to its resource summary)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.http_helpers import call
from tidal_sim.clock import ManualClock
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.version import KarmadaVersion

BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/ai-app/resourcebindings"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


def _settled(make_emulator: Any, version: KarmadaVersion) -> Emulator:
    emu: Emulator = make_emulator(DEFAULT_TOPOLOGY, clock=ManualClock(), karmada_version=version)
    emu.advance(30.0)  # three Cluster status refreshes: modelings reported, bindings scheduled
    return emu


def _spread(emu: Emulator, binding: str) -> dict[str, int]:
    _, obj = call(emu, "GET", f"{BINDINGS}/{binding}")
    return {c["name"]: c.get("replicas", 0) for c in obj["spec"].get("clusters") or []}


def _model_resources(emu: Emulator, cluster: str) -> set[str]:
    _, obj = call(emu, "GET", f"{CLUSTERS}/{cluster}")
    return {r["name"] for m in obj["spec"]["resourceModels"] for r in m["ranges"]}


@pytest.mark.parametrize("version", [KarmadaVersion.V1_18, KarmadaVersion.V1_19])
def test_default_models_leave_no_room_for_gpus_from_v1_18(
    make_emulator: Any, version: KarmadaVersion
) -> None:
    """pkg/apis/cluster/mutation/mutation.go SetDefaultClusterResourceModels gives cluster-c
    cpu/memory grades only; v1.18.0 pkg/estimator/client/general.go buildModelNodes then builds
    nodes without nvidia.com/gpu, so team 4004's GPU replicas all go to cluster-b, while the
    GPU grades of cluster-a and cluster-b schedule every team-2001 workload."""
    emu = _settled(make_emulator, version)
    assert _model_resources(emu, "cluster-c") == {"cpu", "memory"}
    assert _model_resources(emu, "cluster-b") == {"cpu", "memory", "nvidia.com/gpu"}
    assert _spread(emu, "embed-4004-00-deployment") == {"cluster-b": 2}
    for index in range(20):
        assert sum(_spread(emu, f"rank-2001-{index:02d}-deployment").values()) > 0


def test_default_models_fall_back_to_the_summary_in_v1_17(make_emulator: Any) -> None:
    """v1.17.0 general.go getMaximumReplicasBasedOnResourceModels errors on the missing
    nvidia.com/gpu and maxAvailableReplicas uses cluster-c's summary (64 GPUs): team 4004 takes
    a share of cluster-c."""
    emu = _settled(make_emulator, KarmadaVersion.V1_17)
    assert _spread(emu, "embed-4004-00-deployment").get("cluster-c", 0) > 0
