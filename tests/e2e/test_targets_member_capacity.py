"""The members' capacity, watched through Karmada's cluster proxy, on each --karmada target:
it agrees with Karmada's own Cluster status once a refresh has counted the same pods, and
follows the members' pods without waiting for that refresh."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.e2e.targets import EmulatorTarget, Target
from tidal.domain.prediction import ClusterFacts
from tidal.karmada.client import CLUSTERS
from tidal.karmada.member_capacity import MemberCapacity

pytestmark = pytest.mark.e2e

GPU = "nvidia.com/gpu"
CLUSTER = "cluster-b"


def _until(check: Callable[[], bool], what: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, f"not within {seconds:g}s: {what}"
        time.sleep(0.2)


def test_member_capacity_agrees_with_cluster_status_and_follows_the_pods(target: Target) -> None:
    """GPUs and pods free per the members equal Cluster status's free (allocatable - allocated
    - allocating) once both count the same pods; training pods taking GPUs show in the members'
    figure no later than in the status."""
    if isinstance(target, EmulatorTarget):
        target.emu.mirror_member_pods()
    client = target.client()
    capacity = MemberCapacity(client)

    def members() -> dict[str, float]:
        free, _ = capacity.free([CLUSTER])
        return free.get(CLUSTER, {})

    def status() -> dict[str, float]:
        cluster = client.request("get", CLUSTERS, "GET", CLUSTERS.path(name=CLUSTER))
        return dict(ClusterFacts.from_cluster(cluster).free)

    def used() -> int:
        cluster = client.request("get", CLUSTERS, "GET", CLUSTERS.path(name=CLUSTER))
        allocated = cluster["status"]["resourceSummary"].get("allocated") or {}
        return int(allocated.get(GPU, "0"))

    def agree() -> bool:
        now, reported = members(), status()
        return bool(now) and all(now.get(r) == reported.get(r) for r in (GPU, "pods"))

    try:
        _until(agree, "the members' free GPUs and pods equal Cluster status's", 120)
        before = members()[GPU]
        target.occupy_gpus(CLUSTER, used() + 2)  # returns once status shows
        assert members()[GPU] <= before - 2  # the members' figure came no later
        _until(agree, "agreement again after the training pods", 120)
    finally:
        capacity.stop()
