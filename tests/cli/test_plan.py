"""`tidal plan` against the emulator: the dry run shows waves and predictions, exits 3 when a
floor would break, and writes nothing either way."""

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
metadata: {name: team-p}
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
    waveSize: 50%
    floors:
      - clusters: [FLOOR_CLUSTER]
        minReadyReplicas: 1
"""

WRITES = ("create", "update", "patch", "delete")


def _setup(make_emulator: Any, tmp_path: Path, floor_cluster: str, replicas: int = 5
           ) -> tuple[Any, Path, Path]:
    topo = [cluster("cluster-a", startup=0.5), cluster("cluster-b", startup=0.5), namespace(),
            cpp("team-cpp", "t1", static_placement({"cluster-a": 4, "cluster-b": 1}))]
    topo += [deployment(f"web-{i}", "t1", replicas) for i in range(4)]
    emu = make_emulator(topo, clock=ScaledClock(20.0))
    time.sleep(0.4)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", floor_cluster))
    emu.reset_requests()
    return emu, kubeconfig, path


def test_safe_plan_shows_waves_and_exits_0(make_emulator: Any, tmp_path: Path) -> None:
    """A safe plan lists two waves and the predicted 0/100 end state, and writes nothing."""
    emu, kubeconfig, path = _setup(make_emulator, tmp_path, "cluster-b")
    result = CliRunner().invoke(cli, ["plan", str(path), "--window", "night", "--kubeconfig",
                                      str(kubeconfig), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["safe"] is True and len(data["waves"]) == 2
    assert data["steps"][0]["assigned"] == {"cluster-a": 16, "cluster-b": 4}
    assert data["steps"][-1]["assigned"] == {"cluster-b": 20}
    assert data["trigger"] == "touch"
    assert not [r for r in emu.request_log() if r.verb in WRITES]
    table = CliRunner().invoke(cli, ["plan", str(path), "--window", "night", "--kubeconfig",
                                     str(kubeconfig)])
    assert table.exit_code == 0 and "wave 2" in table.stdout


def test_unsafe_plan_exits_3_and_switch_writes_nothing(make_emulator: Any,
                                                       tmp_path: Path) -> None:
    """A floor on cluster-a that the night weights break: plan exits 3, switch writes nothing."""
    emu, kubeconfig, path = _setup(make_emulator, tmp_path, "cluster-a")
    result = CliRunner().invoke(cli, ["plan", str(path), "--window", "night", "--kubeconfig",
                                      str(kubeconfig), "-o", "json"])
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["safe"] is False
    switched = CliRunner().invoke(cli, ["switch", str(path), "--window", "night",
                                        "--kubeconfig", str(kubeconfig), "--yes", "-o", "json"])
    assert switched.exit_code == 3, switched.output
    assert not [r for r in emu.request_log() if r.verb in WRITES]


def test_unknown_window_is_invalid_input(tmp_path: Path) -> None:
    """A window the schedule does not have exits 1 with a one-line error."""
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", "cluster-b"))
    result = CliRunner().invoke(cli, ["plan", str(path), "--window", "noon"])
    assert result.exit_code == 1
    assert "no window 'noon'" in result.stderr
