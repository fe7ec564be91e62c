"""The team estimator on each --karmada target: a DynamicWeight team's split follows the team's
capacity, not the cluster's. On real Karmada the capacity is `tidal estimator` (started by
tools.realkarmada beside karmada-scheduler, which asks it over gRPC), reading the team's
ResourceQuota through Karmada's cluster proxy; on the emulator it is the emulator's own team
estimator (EmulatorSettings teamEstimator), with the same capacity."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.e2e.targets import EmulatorTarget, Placement, RealTarget, Target, kubectl
from tests.e2e.test_targets_dynamic import team_objects
from tidal.cli.main import cli

pytestmark = pytest.mark.e2e

CLUSTERS = ("cluster-a", "cluster-b")
RANK = "ai-app/Deployment/rank-2001-01"  # 4 replicas, one GPU each, DynamicWeight
ZERO_ON_B = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {name: e2e}
spec:
  teams:
    - name: team-2001
      namespaces: [ai-app]
      clusters:
        cluster-b: {quota: true}
"""
CAP_ON_B = ZERO_ON_B.replace("{quota: true}", "{replicas: 0}")


def _rank_only() -> list[dict[str, Any]]:
    return [
        d
        for d in team_objects()
        if d["kind"] != "Deployment" or d["metadata"]["name"] == "rank-2001-01"
    ]


def _quota_zero_gpus(target: RealTarget, cluster: str) -> None:
    """The team's namespace on `cluster` may request no GPU (a ResourceQuota on the member)."""
    kubectl(
        target._kubeconfigs[cluster],
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ai-app"}},
                    {
                        "apiVersion": "v1",
                        "kind": "ResourceQuota",
                        "metadata": {"name": "team-2001-gpus", "namespace": "ai-app"},
                        "spec": {"hard": {"requests.nvidia.com/gpu": "0"}},
                    },
                ],
            }
        ),
    )


def _no_quota(target: RealTarget, cluster: str) -> None:
    kubectl(
        target._kubeconfigs[cluster],
        "delete",
        "resourcequota",
        "team-2001-gpus",
        "-n",
        "ai-app",
        "--ignore-not-found",
    )


def _emulator_capacity(target: EmulatorTarget, replicas_on_b: int | None) -> None:
    """The emulator's own team estimator: team 2001 may hold `replicas_on_b` on cluster-b."""
    from tidal_sim.controllers.team_estimator import parse_team_estimator

    spec = {
        "teams": []
        if replicas_on_b is None
        else [
            {
                "name": "team-2001@cluster-b",
                "cluster": "cluster-b",
                "teamSelector": {"matchLabels": {"atms-app/teamid": "2001"}},
                "replicas": replicas_on_b,
            }
        ]
    }
    estimator = target.emu.topology.settings.team_estimator
    estimator.teams = parse_team_estimator(spec).teams


def _placed(now: Placement, workload: str) -> dict[str, tuple[int, int]]:
    return {c: now.get((workload, c), (0, 0)) for c in CLUSTERS}


def _rank_ready_on_a(now: Placement) -> bool:
    return _placed(now, RANK) == {"cluster-a": (4, 4), "cluster-b": (0, 0)}


@pytest.fixture
def plane_work(target: Target, request: pytest.FixtureRequest) -> Path | None:
    """The real plane's work dir (its estimator's teams file, pid, ports); None on the emulator."""
    if not isinstance(target, RealTarget):
        return None
    work: Path = request.getfixturevalue("real_plane").work
    return work


def test_estimator_team_quota_decides_the_dynamic_split(
    target: Target, plane_work: Path | None, fidelity: dict[str, Any]
) -> None:
    """Team 2001 may use no GPU on cluster-b (its ResourceQuota there): the DynamicWeight
    workload goes all to cluster-a, though cluster-b has free GPUs. karmada-scheduler asked the
    estimator about both members, and `tidal estimator check` says so."""
    if isinstance(target, RealTarget):
        from tools.realkarmada import estimator

        assert plane_work is not None
        target.reset()
        target.model_gpus()
        _quota_zero_gpus(target, "cluster-b")
        estimator.set_teams(plane_work, ZERO_ON_B)
    else:
        assert isinstance(target, EmulatorTarget)
        _emulator_capacity(target, 0)
    try:
        target.apply(_rank_only())
        after = target.wait_for(_rank_ready_on_a, "rank-2001-01 all on cluster-a", 120)
        fidelity["split"] = _placed(after, RANK)
        if isinstance(target, RealTarget):
            from tools.realkarmada import estimator

            assert plane_work is not None
            seen = estimator.status(plane_work)
            assert seen is not None
            asked = seen["asked"]
            assert all(asked.get(c, {}).get("requests", 0) > 0 for c in CLUSTERS), asked
            info = estimator.info(plane_work)
            result = CliRunner().invoke(
                cli,
                [
                    "estimator",
                    "check",
                    "--kubeconfig",
                    str(target.kubeconfig),
                    "--estimator",
                    f"127.0.0.1:{info['grpc']}",
                    "--status-url",
                    f"http://127.0.0.1:{info['http']}",
                ],
            )
            fidelity["check"] = result.output
            assert result.exit_code == 0, result.output
    finally:
        if isinstance(target, RealTarget):
            from tools.realkarmada import estimator

            assert plane_work is not None
            estimator.set_teams(plane_work, estimator.NO_TEAMS)
            _no_quota(target, "cluster-b")
        else:
            assert isinstance(target, EmulatorTarget)
            _emulator_capacity(target, None)


def test_estimator_killed_the_scheduler_falls_back(
    target: Target, plane_work: Path | None, fidelity: dict[str, Any]
) -> None:
    """With the team's cluster-b capacity at 0 the workload goes to cluster-a; with the estimator
    gone (killed; on the emulator: suspended) a new workload is still scheduled, by the general
    estimate alone; on real Karmada, started again after the scheduler, it is asked again
    without restarting the scheduler (its gRPC channel reconnects)."""
    if isinstance(target, RealTarget):
        from tools.realkarmada import estimator

        assert plane_work is not None
        target.reset()
        target.model_gpus()
        estimator.set_teams(plane_work, CAP_ON_B)
    else:
        assert isinstance(target, EmulatorTarget)
        _emulator_capacity(target, 0)
    try:
        target.apply(_rank_only())
        target.wait_for(_rank_ready_on_a, "rank-2001-01 all on cluster-a", 120)
        if isinstance(target, RealTarget):
            from tools.realkarmada import estimator

            assert plane_work is not None
            estimator.kill(plane_work)
        else:
            assert isinstance(target, EmulatorTarget)
            target.emu.topology.settings.team_estimator.suspended = True
        other = "ai-app/Deployment/rank-2001-02"
        target.apply(
            [
                d
                for d in team_objects()
                if d["kind"] == "Deployment" and d["metadata"]["name"] == "rank-2001-02"
            ]
        )

        def scheduled(now: Placement) -> bool:
            return sum(n for n, _ in _placed(now, other).values()) == 1

        after = target.wait_for(scheduled, "rank-2001-02 scheduled without the estimator", 120)
        fidelity["without_estimator"] = _placed(after, other)
        if isinstance(target, RealTarget):  # started again: the scheduler's channel reconnects
            from tools.realkarmada import estimator

            assert plane_work is not None
            estimator.start(plane_work)
            estimator.set_teams(plane_work, CAP_ON_B)
            # the scheduler's channel redials on grpc-go's reconnect back-off (1 s, x1.6 with
            # jitter) after the few seconds it was down: a binding scheduled before that falls
            # back to the general estimate and is not asked again
            time.sleep(6)
            third = "ai-app/Deployment/rank-2001-03"
            target.apply(
                [
                    d
                    for d in team_objects()
                    if d["kind"] == "Deployment" and d["metadata"]["name"] == "rank-2001-03"
                ]
            )
            back = target.wait_for(
                lambda now: _placed(now, third) == {"cluster-a": (2, 2), "cluster-b": (0, 0)},
                "rank-2001-03 on cluster-a once the estimator is back",
                120,
            )
            fidelity["estimator_back"] = _placed(back, third)
    finally:
        if isinstance(target, RealTarget):
            from tools.realkarmada import estimator

            assert plane_work is not None
            if estimator.status(plane_work) is None:
                estimator.start(plane_work)
            estimator.set_teams(plane_work, estimator.NO_TEAMS)
        else:
            assert isinstance(target, EmulatorTarget)
            target.emu.topology.settings.team_estimator.suspended = False
            _emulator_capacity(target, None)


CAP_A = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {name: e2e}
spec:
  teams:
    - name: team-2001
      namespaces: [ai-app]
      clusters:
        cluster-a: {replicas: 0}
"""


def _team_capacity(target: Target, plane_work: Path | None, teams: str, on_a: int | None) -> None:
    """The team's cluster-a capacity: `teams` for tidal estimator on real Karmada, `on_a`
    replicas (None: no limit) for the emulator's own team estimator."""
    if isinstance(target, RealTarget):
        from tools.realkarmada import estimator

        assert plane_work is not None
        estimator.set_teams(plane_work, teams)
        return
    from tidal_sim.controllers.team_estimator import parse_team_estimator

    assert isinstance(target, EmulatorTarget)
    spec = {
        "teams": []
        if on_a is None
        else [
            {
                "name": "team-2001@cluster-a",
                "cluster": "cluster-a",
                "teamSelector": {"matchLabels": {"atms-app/teamid": "2001"}},
                "replicas": on_a,
            }
        ]
    }
    target.emu.topology.settings.team_estimator.teams = parse_team_estimator(spec).teams


def test_estimator_night_capacity_zero_consolidates_then_morning_spreads(
    target: Target, plane_work: Path | None, fidelity: dict[str, Any], tmp_path: Path
) -> None:
    """At night the team's cluster-a capacity goes to 0: the rebalance waves move every
    replica of team 2001 to cluster-b with each workload ready throughout (the schedule's floor),
    exactly where `tidal plan` with the same team capacity said; in the morning (no cap) the day
    window spreads them over both clusters again."""
    from datetime import UTC, datetime

    from tests.e2e.scenario_checks import split
    from tests.e2e.switch_helpers import load_one, switch
    from tests.e2e.test_targets_dynamic import _all_ready, fast_schedule
    from tidal.engine.planning import build_plan
    from tidal.estimator.planned import team_estimate
    from tidal.loading.teams import load_teams

    if isinstance(target, RealTarget):
        target.reset()
        target.model_gpus()
    objs = team_objects()
    replicas = {
        f"ai-app/Deployment/{d['metadata']['name']}": d["spec"]["replicas"]
        for d in objs
        if d["kind"] == "Deployment"
    }
    names = sorted(replicas)
    try:
        target.apply(objs)
        before = target.wait_serving(_all_ready(replicas), replicas, "team 2001 all ready")
        in_a = sum(n for (w, c), (n, _) in before.items() if c == "cluster-a" and w in replicas)
        assert in_a > 0, "the day spread left cluster-a empty already"
        _team_capacity(target, plane_work, CAP_A, 0)
        path = fast_schedule(
            tmp_path, target.patience, "10s" if isinstance(target, RealTarget) else "1s"
        )
        teams_file = tmp_path / "teams.yaml"
        teams_file.write_text(CAP_A)
        team = team_estimate(
            target.client(), load_teams(teams_file), lambda: datetime.now(UTC), 60.0
        )
        plan = build_plan(target.client(), load_one(path).schedule, "night", team=team)
        predicted = {p.name: dict(p.after) for p in plan.plan.workloads}
        record = switch(target.client(), path, "night", policy_settle=target.policy_settle)
        # succeeded: no wave broke the schedule's floor (onFailure: halt would have stopped it)
        assert record.result == "succeeded", record.to_json()
        night = target.wait_serving(
            _all_ready(replicas), replicas, "team 2001 all ready at night", 60
        )
        actual = {
            w: {c: n for c, (n, _) in split(night, [w], CLUSTERS)[w].items() if n} for w in names
        }
        fidelity["night"] = {"final": split(night, names, CLUSTERS), "predicted": predicted}
        assert all(set(a) == {"cluster-b"} for a in actual.values()), actual
        assert {w: predicted.get(w) for w in names} == actual

        _team_capacity(target, plane_work, estimator_no_teams(), None)
        record = switch(target.client(), path, "day", policy_settle=target.policy_settle)
        assert record.result == "succeeded", record.to_json()
        day = target.wait_for(_all_ready(replicas), "team 2001 all ready in the morning", 60)
        fidelity["day"] = split(day, names, CLUSTERS)
        assert sum(n for (w, c), (n, _) in day.items() if c == "cluster-a" and w in replicas) > 0
    finally:
        _team_capacity(target, plane_work, estimator_no_teams(), None)


def estimator_no_teams() -> str:
    from tools.realkarmada.estimator import NO_TEAMS

    return NO_TEAMS
