"""`tidal plan --teams`: DynamicWeight splits predicted as min(general, team estimate), from the
same answers the estimator serves; clusters whose resource models grade no requested resource
are named, one line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.switch_helpers import (
    NS,
    MakeEmulator,
    cluster,
    cpp,
    deployment,
    dynamic_placement,
    invoke_cli,
    latest,
    namespace,
    policy_file,
    schedule_text,
    swap_window,
    write_schedule,
)

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-dyn",
    windows=swap_window(
        "night",
        "22:00",
        swap_from="dyn-day",
        swap_to="policies/dyn-night.yaml",
        trigger="rebalance",
    ),
    rollout="""
    waveSize: 50%
    pauseBetweenWaves: 0s
    waveTimeout: 30s
""",
)
TEAMS = f"""\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {{name: t}}
spec:
  teams:
    - name: t2
      namespaces: [{NS}]
      clusters:
        cluster-a: {{replicas: 0}}
"""


def _plan(make_switch_emulator: MakeEmulator, tmp_path: Path, *options: str) -> dict[str, object]:
    topo = [
        cluster("cluster-a", cpu="40"),
        cluster("cluster-b", cpu="40"),
        namespace(),
        cpp("dyn-day", "t2", dynamic_placement()),
    ]
    topo += [deployment(f"job-{i}", "t2", 4, cpu="1") for i in range(4)]
    emu = make_switch_emulator(topo)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = policy_file(cpp("dyn-night", "t2", dynamic_placement()))
    path = write_schedule(tmp_path, SCHEDULE, {"policies/dyn-night.yaml": night})
    result = invoke_cli("plan", path, kubeconfig, "-o", "json", *options)
    assert result.exit_code in (0, 3), result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def _end(data: dict[str, object]) -> dict[str, int]:
    steps = data["steps"]
    assert isinstance(steps, list)
    end: dict[str, int] = steps[-1]["assigned"]
    return end


def test_team_cap_moves_the_predicted_split(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Without the team file the split spreads over both clusters; with a team cap of 0 on
    cluster-a, the plan predicts every replica on cluster-b."""
    spread = _end(_plan(make_switch_emulator, tmp_path / "a"))
    assert spread.get("cluster-a", 0) > 0
    teams = tmp_path / "teams.yaml"
    teams.write_text(TEAMS)
    capped = _end(_plan(make_switch_emulator, tmp_path / "b", "--teams", str(teams)))
    assert capped == {"cluster-b": 16}


def test_bad_teams_file_exits_1(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """A bad teams file: located one-line error, exit 1."""
    teams = tmp_path / "teams.yaml"
    teams.write_text(TEAMS.replace("replicas: 0", "replicas: none"))
    topo = [cluster("cluster-a"), namespace()]
    emu = make_switch_emulator(topo)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = write_schedule(
        tmp_path,
        SCHEDULE,
        {"policies/dyn-night.yaml": policy_file(cpp("dyn-night", "t2", dynamic_placement()))},
    )
    result = invoke_cli("plan", path, kubeconfig, "--teams", str(teams))
    assert result.exit_code == 1
    assert f"{teams}:" in result.output and "replicas" in result.output


def test_models_without_gpu_grades_are_named_per_cluster(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Clusters whose resource models grade cpu only, and DynamicWeight workloads requesting a
    GPU: one warning line per cluster, naming the resource (the general estimator answers 0)."""
    inf = "9223372036854775807"
    topo = [cluster("cluster-a", cpu="40"), cluster("cluster-b", cpu="40")]
    for c in topo:
        c["spec"]["resourceModels"] = [
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": inf}]}
        ]
        c["status"]["resourceSummary"]["allocatableModelings"] = [{"grade": 0, "count": 2}]
    jobs = [deployment(f"job-{i}", "t2", 2, cpu="1") for i in range(2)]
    for job in jobs:
        job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
            "nvidia.com/gpu"
        ] = "1"
    emu = make_switch_emulator(
        [*topo, namespace(), cpp("dyn-day", "t2", dynamic_placement()), *jobs]
    )
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = policy_file(cpp("dyn-night", "t2", dynamic_placement()))
    path = write_schedule(tmp_path, SCHEDULE, {"policies/dyn-night.yaml": night})
    result = invoke_cli("plan", path, kubeconfig, "-o", "json")
    warnings = [w for w in json.loads(result.stdout)["warnings"] if "resource models" in w]
    assert len(warnings) == 2, result.stdout
    assert all("grade no nvidia.com/gpu" in w and "2 workload(s)" in w for w in warnings)


def test_switch_with_teams_ends_where_the_plan_said(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`tidal switch --teams` with the emulator's own team estimator holding the same capacity
    (none on cluster-a): the waves succeed and end where `tidal plan --teams` said."""
    from tidal_sim.controllers.team_estimator import parse_team_estimator

    topo = [
        cluster("cluster-a", cpu="40"),
        cluster("cluster-b", cpu="40"),
        namespace(),
        cpp("dyn-day", "t2", dynamic_placement()),
    ]
    topo += [deployment(f"job-{i}", "t2", 4, cpu="1") for i in range(4)]
    emu = make_switch_emulator(topo)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = policy_file(cpp("dyn-night", "t2", dynamic_placement()))
    path = write_schedule(tmp_path, SCHEDULE, {"policies/dyn-night.yaml": night})
    teams = tmp_path / "teams.yaml"
    teams.write_text(TEAMS)
    plan = json.loads(
        invoke_cli("plan", path, kubeconfig, "-o", "json", "--teams", str(teams)).stdout
    )
    emu.topology.settings.team_estimator.teams = parse_team_estimator(
        {
            "teams": [
                {
                    "name": "t2@cluster-a",
                    "cluster": "cluster-a",
                    "teamSelector": {"matchLabels": {"team": "t2"}},
                    "replicas": 0,
                }
            ]
        }
    ).teams
    result = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json", "--teams", str(teams))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == "succeeded"
    final: dict[str, int] = {}
    for (_, member), (assigned, _) in latest(emu).items():
        final[member] = final.get(member, 0) + assigned
    assert {k: v for k, v in final.items() if v} == _end(plan) == {"cluster-b": 16}
