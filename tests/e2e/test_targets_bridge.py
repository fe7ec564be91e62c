"""Bridges on each --karmada target (no empty workload propagation): a 1- and a 2-replica
Deployment all in cluster-a by day (4:1) move to cluster-b at night and back by day with
`strategy: surge` under `minAvailablePercent: 100`; on the members no workload is ever below
its replicas, each ends at its share, and the policy ends at the window's placement."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    NS,
    cpp,
    deployment,
    namespace,
    schedule_text,
    static_placement,
    switch,
    weights_window,
    write_schedule,
)
from tests.e2e.targets import Placement, RealTarget, Target
from tidal.domain.placement import Placement as PolicyPlacement
from tidal.karmada import policies as policies_api
from tidal.karmada.names import BRIDGE_PLACEMENT
from tidal.karmada.views import PolicyView

pytestmark = pytest.mark.e2e

TEAM = "1099"
POLICY = "team-1099-cpp"
REPLICAS = {f"{NS}/Deployment/bridge-1": 1, f"{NS}/Deployment/bridge-2": 2}
ROLLOUT = """
    waveSize: 1
    pauseBetweenWaves: 0s
    waveTimeout: {timeout}s
    floors:
      - minAvailablePercent: 100
"""


def _objects() -> list[dict[str, Any]]:
    policy = cpp(POLICY, TEAM, static_placement({"cluster-a": 4, "cluster-b": 1}))
    policy["metadata"]["labels"] = {"atms-app/teamid": TEAM}  # what a real reset deletes
    policy["spec"]["resourceSelectors"][0]["labelSelector"] = {"matchLabels": {"team": TEAM}}
    out = [namespace(), policy]
    for key, n in REPLICAS.items():
        out.append(deployment(key.rsplit("/", 1)[-1], TEAM, n))
    return out


def _all_in(cluster: str) -> Any:
    def ok(now: Placement) -> bool:
        return all(
            now.get((w, cluster), (0, 0)) == (n, n)
            and sum(a for (x, _c), (a, _r) in now.items() if x == w) == n
            for w, n in REPLICAS.items()
        )

    return ok


def _below(timeline: list[dict[str, Any]], since: float) -> list[str]:
    """Each moment a workload had fewer ready replicas on the members than its spec. Samples
    of one moment (one sampler round reads every member) count together: in a round that saw
    the destination become ready and the source go, the order of its samples means nothing."""
    ready: dict[str, dict[str, int]] = {}
    out = []
    for t, samples in itertools.groupby(timeline, key=lambda s: s["t"]):
        changed = set()
        for s in samples:
            if s["workload"] in REPLICAS:
                ready.setdefault(s["workload"], {})[s["cluster"]] = s["ready"]
                changed.add(s["workload"])
        for w in sorted(changed):
            total = sum(ready[w].values())
            if t >= since and total < REPLICAS[w]:
                out.append(f"{w} at {t}: {total} ready {ready[w]}")
    return out


def test_small_workloads_are_bridged_night_and_day(target: Target, tmp_path: Path) -> None:
    """Night then day succeed; no member ever shows a workload below its replicas; each
    ends all in cluster-b, then all in cluster-a; no bridge placement is left."""
    if isinstance(target, RealTarget):
        target.reset()
    target.apply(_objects())
    target.wait_serving(_all_in("cluster-a"), REPLICAS, "day placement, all ready", None)
    windows = weights_window("night", "23:00", {"cluster-b": 1}, policy=POLICY) + weights_window(
        "day", "07:00", {"cluster-a": 4, "cluster-b": 1}, policy=POLICY
    )
    path = write_schedule(
        tmp_path,
        schedule_text("team-bridge", ROLLOUT.format(timeout=int(target.patience)), windows=windows),
    )
    client = target.client()
    for window, home in (("night", "cluster-b"), ("day", "cluster-a")):
        t0 = target.now()
        record = switch(client, path, window, policy_settle=target.policy_settle)
        assert record.result == "succeeded", record.to_json()
        target.wait_serving(_all_in(home), REPLICAS, f"{window}: all in {home}", 30)
        assert _below(target.timeline(), t0) == []
        view = PolicyView(policies_api.get_policy(client, "ClusterPropagationPolicy", POLICY, None))
        assert BRIDGE_PLACEMENT not in view.annotations
        assert (
            PolicyPlacement(view.spec["placement"]).content()["replicaScheduling"][
                "replicaSchedulingType"
            ]
            == "Divided"
        )


def test_a_sampler_round_counts_as_one_moment() -> None:
    """A round that saw the destination become ready and the source go is no dip, whatever
    the order of its samples; a later round with fewer ready than the spec is one."""
    w = f"{NS}/Deployment/bridge-1"

    def sample(t: float, cluster: str, ready: int) -> dict[str, Any]:
        return {"t": t, "workload": w, "cluster": cluster, "assigned": ready, "ready": ready}

    moved = [
        sample(1.0, "cluster-a", 1),
        sample(2.0, "cluster-b", 0),
        sample(3.0, "cluster-a", 0),
        sample(3.0, "cluster-b", 1),
    ]
    assert _below(moved, 0.0) == []
    assert _below([*moved, sample(4.0, "cluster-b", 0)], 0.0) == [
        f"{w} at 4.0: 0 ready {{'cluster-a': 0, 'cluster-b': 0}}"
    ]
