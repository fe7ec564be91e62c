"""The example DynamicWeight team (schedules/team-2001.yaml) on each --karmada target: training
takes most of cluster-a's GPUs, then the night window swaps the team's policy and rebalances its
Deployments in waves; replicas leave cluster-a, and `tidal plan` is compared with the result."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.scenario_checks import split
from tests.e2e.switch_helpers import load_one, switch
from tests.e2e.targets import Placement, RealTarget, Target
from tidal.engine import events as ev
from tidal.engine.planning import build_plan
from tidal_sim.emulator import DEFAULT_TOPOLOGY

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CLUSTERS = ("cluster-a", "cluster-b")
TRAINING_GPUS = 144  # of cluster-a's 160


# What the plan cannot see on a real plane: the Cluster objects give nodes per grade, not which
# node each replica leaves nor its free resources, and whether the 10 s status refresh fell
# between two waves that ran without a pause. Not re-run on real Karmada since the planner
# learnt the two causes found there (wave snapshot, no room from replicas leaving coarse grades).
PLAN_VS_REAL = (
    "tidal plan's DynamicWeight split differs from real Karmada's where per-node "
    "grades or the status refresh between waves decide it "
    "(docs/fidelity.md#tidal-plan-against-real-dynamicweight-placements)"
)


def team_objects() -> list[dict[str, Any]]:
    """The demo topology's namespace ai-app, team-2001-cpp-day (Lazy, DynamicWeight) and team
    2001's Deployments."""
    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    return [
        d
        for d in docs
        if (d["kind"] == "Namespace" and d["metadata"]["name"] == "ai-app")
        or d.get("metadata", {}).get("labels", {}).get("atms-app/teamid") == "2001"
    ]


def fast_schedule(tmp: Path, wave_timeout: float, pause: str = "0s") -> Path:
    doc = yaml.safe_load((REPO / "schedules" / "team-2001.yaml").read_text())
    doc["spec"]["rollout"].update(pauseBetweenWaves=pause, waveTimeout=f"{int(wave_timeout)}s")
    shutil.copytree(REPO / "schedules" / "policies", tmp / "policies")
    path = tmp / "team-2001.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _all_ready(replicas: dict[str, int]) -> Any:
    def ok(now: Placement) -> bool:
        return all(
            sum(now.get((w, c), (0, 0))[0] for c in CLUSTERS) == n
            and sum(now.get((w, c), (0, 0))[1] for c in CLUSTERS) == n
            for w, n in replicas.items()
        )

    return ok


def _in_a(now: Placement) -> int:
    return sum(
        a for (w, c), (a, _) in now.items() if c == "cluster-a" and w.startswith("ai-app/")
    )  # not the training


def test_dynamic_team_swap_and_rebalance_waves(
    target: Target, fidelity: dict[str, Any], tmp_path: Path
) -> None:
    """After training fills cluster-a, the swap + rebalance waves move the team's replicas off
    it and every wave ends with all replicas ready, each workload where `tidal plan` said (on
    the emulator; on real Karmada a mismatch is an xfail naming how many, docs/fidelity.md).
    The plan follows pkg/scheduler/core/division_algorithm.go dynamicFreshScale with the
    estimates of pkg/estimator/client/general.go read once per wave."""
    if isinstance(target, RealTarget):
        target.reset()
        target.model_gpus()
    objs = team_objects()
    target.apply(objs)
    replicas = {
        f"ai-app/Deployment/{d['metadata']['name']}": d["spec"]["replicas"]
        for d in objs
        if d["kind"] == "Deployment"
    }
    names = sorted(replicas)
    before = target.wait_serving(_all_ready(replicas), replicas, "team 2001 all ready")
    fidelity["before"] = split(before, names, CLUSTERS)
    target.occupy_gpus("cluster-a", TRAINING_GPUS)

    # a pause of one Cluster status refresh (10 s; the emulator's clock runs 20x) between waves,
    # as the example's 1m does: each wave is then scheduled against what the last one left
    path = fast_schedule(
        tmp_path, target.patience, "10s" if isinstance(target, RealTarget) else "1s"
    )
    plan = build_plan(target.client(), load_one(path).schedule, "night")
    predicted = {p.name: dict(p.after) for p in plan.plan.workloads}
    waves: list[dict[str, Any]] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished):
            waves.append(
                {"result": event.result, "placements": split(target.placements(), names, CLUSTERS)}
            )

    t0 = target.now()
    record = switch(
        target.client(), path, "night", on_event=on_event, policy_settle=target.policy_settle
    )
    assert record.result == "succeeded", record.to_json()
    assert len(record.waves) >= 2
    after = target.wait_for(_all_ready(replicas), "team 2001 all ready after the switch", 60)
    for seen, wave in zip(waves, record.waves, strict=True):
        seen["workloads"] = wave.workloads
    actual = {w: {c: n for c, (n, _) in split(after, [w], CLUSTERS)[w].items() if n} for w in names}
    fidelity["night"] = {
        "waves": waves,
        "final": split(after, names, CLUSTERS),
        "predicted": predicted,
        "seconds": round(target.now() - t0, 1),
    }
    # Real Karmada's initial DynamicWeight spread varies from run to run (docs/fidelity.md);
    # whatever it was, the night leaves cluster-a's last GPUs to training.
    fidelity["night"]["in_a_before_after"] = [_in_a(before), _in_a(after)]
    assert _in_a(after) == 0 or _in_a(after) < _in_a(before), (before, after)
    mismatched = {w: [predicted.get(w), actual[w]] for w in names if predicted.get(w) != actual[w]}
    fidelity["night"]["plan_mismatches"] = mismatched
    if mismatched and isinstance(target, RealTarget):
        pytest.xfail(f"{PLAN_VS_REAL} ({len(mismatched)} of {len(names)} workloads)")
    assert not mismatched, mismatched


# Before v1.18 a resource the models lack falls back to the resource summary (docs/fidelity.md).
MODELS_IGNORE_UNMODELLED_FROM = (1, 18)
RESOURCE_MODELS = (
    "Karmada >= v1.18 grades Clusters with default resource models that know only "
    "cpu and memory; its general estimator then finds room for no pod requesting "
    "nvidia.com/gpu, so a DynamicWeight GPU workload stays Unschedulable until the "
    "Clusters get GPU-aware models (docs/fidelity.md#resource-models)"
)


def test_gpu_dynamic_workload_schedules_with_karmadas_own_resource_models(
    target: Target, request: pytest.FixtureRequest
) -> None:
    """A DynamicWeight Deployment requesting a GPU is placed and ready with the Clusters'
    resource models as Karmada creates them (on real Karmada >= v1.18: a strict xfail)."""
    if isinstance(target, RealTarget):
        if target.release >= MODELS_IGNORE_UNMODELLED_FROM:
            request.applymarker(pytest.mark.xfail(strict=True, reason=RESOURCE_MODELS))
        target.reset()
        target.default_models()
    objs = [
        d
        for d in team_objects()
        if d["kind"] != "Deployment" or d["metadata"]["name"] == "rank-2001-01"
    ]
    target.apply(objs)
    target.wait_for(_all_ready({"ai-app/Deployment/rank-2001-01": 4}), "rank-2001-01 ready", 60)
