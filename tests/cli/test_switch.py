"""`tidal switch -o json` against the emulator: the run record's keys and the exit codes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import (
    cluster,
    cpp,
    deployment,
    namespace,
    static_placement,
    write_schedule,
)
from tidal.cli.main import cli
from tidal.sim.clock import ScaledClock

pytestmark = pytest.mark.e2e

SCHEDULE = """
apiVersion: tidal.io/v1alpha1
kind: TidalSchedule
metadata: {name: team-s}
spec:
  timeZone: UTC
  windows:
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          name: team-cpp
          patch:
            spec:
              placement:
                replicaScheduling:
                  weightPreference:
                    staticWeightList:
                      - targetCluster: {clusterNames: [cluster-b]}
                        weight: 1
  rollout:
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: TIMEOUT
"""


def _setup(make_emulator: Any, tmp_path: Path, timeout: str, b_cpu: str = "1000"
           ) -> tuple[Any, Path, Path]:
    topo = [cluster("cluster-a", startup=0.5), cluster("cluster-b", startup=0.5, cpu=b_cpu),
            namespace(), cpp("team-cpp", "t1", static_placement({"cluster-a": 4,
                                                                 "cluster-b": 1}))]
    topo += [deployment(f"web-{i}", "t1", 5, cpu="1") for i in range(4)]
    emu = make_emulator(topo, clock=ScaledClock(20.0))
    time.sleep(0.4)
    return (emu, emu.write_kubeconfig(tmp_path / "kubeconfig"),
            write_schedule(tmp_path, SCHEDULE.replace("TIMEOUT", timeout)))


def test_switch_prints_the_run_record_and_exits_0(make_emulator: Any, tmp_path: Path) -> None:
    """-o json prints {schedule, window, runId, result, startedAt, finishedAt, waves}."""
    _, kubeconfig, path = _setup(make_emulator, tmp_path, "20s")
    result = CliRunner().invoke(cli, ["switch", str(path), "--window", "night", "--kubeconfig",
                                      str(kubeconfig), "--yes", "-o", "json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert {"schedule", "window", "runId", "result", "startedAt", "finishedAt",
            "waves"} <= set(record)
    assert record["result"] == "succeeded" and record["schedule"] == "team-s"
    assert [set(w) >= {"index", "workloads", "result", "reason", "startedAt", "finishedAt"}
            for w in record["waves"]] == [True, True]
    assert record["waves"][0]["workloads"] == ["ai-app/Deployment/web-0",
                                               "ai-app/Deployment/web-1"]


def test_failed_wave_exits_2(make_emulator: Any, tmp_path: Path) -> None:
    """A wave that times out (pods pending in a full cluster) exits 2 with result failed."""
    _, kubeconfig, path = _setup(make_emulator, tmp_path, "2s", b_cpu="6")
    result = CliRunner().invoke(cli, ["switch", str(path), "--window", "night", "--kubeconfig",
                                      str(kubeconfig), "--yes", "-o", "json"])
    assert result.exit_code == 2, result.output
    record = json.loads(result.stdout)
    assert record["result"] == "failed"
    assert record["waves"][0]["result"] == "failed"
