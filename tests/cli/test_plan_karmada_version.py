"""`tidal plan --karmada-version`: the prediction follows the scheduler rules of the Karmada
release it is told, and on an emulator of that release it agrees with the switch's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    MakeEmulator,
    cluster,
    cpp,
    deployment,
    dynamic_placement,
    invoke_cli,
    namespace,
    policy_file,
    schedule_text,
    swap_window,
    write_schedule,
)

pytestmark = pytest.mark.e2e

WORKLOAD = "ai-app/Deployment/gpu-0"


def gpu_team(release: str) -> list[dict[str, Any]]:
    """An emulator of `release` with two GPU clusters that keep Karmada's default resource
    models (cpu and memory grades only; 16 and 40 GPUs in their summaries, 4 nodes each) and
    one Deployment of 4 replicas, 1 GPU each, placed 4:1 by static weights."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"karmadaVersion": release},
    }
    clusters = []
    for name, gpus in (("cluster-a", "16"), ("cluster-b", "40")):
        obj = cluster(name, cpu="512", startup=0.5)
        obj["metadata"]["annotations"]["sim.tidal.io/nodes"] = "4"
        obj["status"]["resourceSummary"]["allocatable"]["nvidia.com/gpu"] = gpus
        clusters.append(obj)
    workload = deployment("gpu-0", "t1", 4, cpu="1")
    container = workload["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["nvidia.com/gpu"] = "1"
    return [settings, *clusters, namespace(), cpp("team-cpp", "t1", DAY), workload]


SCHEDULE = schedule_text(
    "team-gpu",
    "waveSize: 1\n",
    windows=swap_window("night", "23:00", "team-cpp", "night.yaml", trigger="rebalance"),
)


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        # v1.17.0 general.go: the GPU is missing from the models, so the summaries answer:
        # 13 + 3 own and 39 + 1 own free GPUs -> Webster 1:3
        ("1.17", {"cluster-a": 1, "cluster-b": 3}),
        # v1.18.0 general.go buildModelNodes: no model node has a GPU, so only the workload's own
        # replicas count as available (Fresh): 3 and 1 -> it stays where it is
        ("1.18", {"cluster-a": 3, "cluster-b": 1}),
    ],
)
def test_plan_follows_the_release_and_agrees_with_its_scheduler(
    make_switch_emulator: MakeEmulator, tmp_path: Path, release: str, expected: dict[str, int]
) -> None:
    """A Fresh rebalance of a GPU DynamicWeight workload on default models: `tidal plan
    --karmada-version R` predicts what an emulator of release R then does, and the two
    releases differ (general.go getMaximumReplicasBasedOnResourceModels, v1.17.0 vs v1.18.0)."""
    emu = make_switch_emulator(gpu_team(release))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = cpp("team-cpp-night", "t1", dynamic_placement())
    path = write_schedule(tmp_path, SCHEDULE, {"night.yaml": policy_file(night)})

    planned = invoke_cli("plan", path, kubeconfig, "-o", "json", "--karmada-version", release)
    assert planned.exit_code == 0, planned.output
    (workload,) = [w for wave in json.loads(planned.stdout)["waves"] for w in wave["workloads"]]
    assert workload["workload"] == WORKLOAD
    assert workload["after"] == expected

    switched = invoke_cli(
        "switch", path, kubeconfig, "--yes", "-o", "json", "--karmada-version", release
    )
    assert switched.exit_code == 0, switched.output
    assert assigned(emu.timeline()) == expected, switched.output


def assigned(timeline: list[dict[str, Any]]) -> dict[str, int]:
    """The workload's last assigned replicas per cluster in the emulator's timeline."""
    last = {s["cluster"]: s["assigned"] for s in timeline if s["workload"] == WORKLOAD}
    return {c: n for c, n in sorted(last.items()) if n}


def test_a_plan_for_the_wrong_release_mispredicts(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Why the setting exists: planned with v1.18 rules against a v1.17 control plane, the
    prediction keeps the workload where the scheduler will not."""
    emu = make_switch_emulator(gpu_team("1.17"))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = cpp("team-cpp-night", "t1", dynamic_placement())
    path = write_schedule(tmp_path, SCHEDULE, {"night.yaml": policy_file(night)})
    planned = invoke_cli("plan", path, kubeconfig, "-o", "json", "--karmada-version", "1.18")
    (workload,) = [w for wave in json.loads(planned.stdout)["waves"] for w in wave["workloads"]]
    assert workload["after"] == {"cluster-a": 3, "cluster-b": 1}


def test_unsupported_release_is_refused_before_any_request(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A release the planner does not know: the flag is a usage error (exit 2) naming the
    choices, the variable one line naming TIDAL_KARMADA__VERSION (exit 1); neither reaches the
    API server."""
    from click.testing import CliRunner

    from tidal.cli.main import cli

    emu = make_switch_emulator(gpu_team("1.18"))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    night = cpp("team-cpp-night", "t1", dynamic_placement())
    path = write_schedule(tmp_path, SCHEDULE, {"night.yaml": policy_file(night)})
    emu.reset_requests()
    flag = invoke_cli("plan", path, kubeconfig, "--karmada-version", "1.16")
    assert flag.exit_code == 2
    assert "'--karmada-version'" in flag.stderr and "1.17" in flag.stderr
    env = CliRunner().invoke(
        cli,
        ["plan", str(path), "--window", "night", "--kubeconfig", str(kubeconfig)],
        env={"TIDAL_KARMADA__VERSION": "2.0"},
    )
    assert env.exit_code == 1
    assert env.stderr.strip().splitlines() == [
        "error: setting TIDAL_KARMADA__VERSION: Value error, unsupported Karmada release '2.0';"
        " choose one of 1.17, 1.18, 1.19 (got '2.0')"
    ]
    assert emu.request_log() == []
