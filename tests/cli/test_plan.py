"""`tidal plan` against the emulator: the dry run shows waves and predictions, exits 3 when a
floor would break, and writes nothing either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import MakeEmulator, invoke_cli, schedule_text, write_schedule, writes
from tidal.cli.main import cli
from tidal.sim.emulator import Emulator

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text("team-p", """
    waveSize: 50%
    floors:
      - clusters: [FLOOR_CLUSTER]
        minReadyReplicas: 1
""")


def _setup(make_switch_emulator: MakeEmulator, tmp_path: Path, floor_cluster: str
           ) -> tuple[Emulator, Path, Path]:
    emu = make_switch_emulator()
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", floor_cluster))
    emu.reset_requests()
    return emu, kubeconfig, path


def test_safe_plan_shows_waves_and_exits_0(make_switch_emulator: MakeEmulator,
                                           tmp_path: Path) -> None:
    """A safe plan lists two waves and the predicted 0/100 end state, and writes nothing."""
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-b")
    result = invoke_cli("plan", path, kubeconfig, "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["safe"] is True and len(data["waves"]) == 2
    assert data["steps"][0]["assigned"] == {"cluster-a": 16, "cluster-b": 4}
    assert data["steps"][-1]["assigned"] == {"cluster-b": 20}
    assert data["trigger"] == "touch"
    assert not writes(emu)
    table = invoke_cli("plan", path, kubeconfig)
    assert table.exit_code == 0 and "wave 2" in table.stdout


def test_unsafe_plan_exits_3_and_switch_writes_nothing(
        make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """A floor on cluster-a that the night weights break: plan exits 3, switch writes nothing."""
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-a")
    result = invoke_cli("plan", path, kubeconfig, "-o", "json")
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["safe"] is False
    switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert switched.exit_code == 3, switched.output
    assert not writes(emu)


def test_unknown_window_is_invalid_input(tmp_path: Path) -> None:
    """A window the schedule does not have exits 1 with a one-line error."""
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", "cluster-b"))
    result = CliRunner().invoke(cli, ["plan", str(path), "--window", "noon"])
    assert result.exit_code == 1
    assert "no window 'noon'" in result.stderr


def test_capacity_starved_static_switch_is_warned_or_refused_naming_workloads(
        make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """Static weights ignore free capacity (pkg/scheduler/core/assignment.go: assignByStatic
    WeightStrategy uses no estimator), so moving 4x5 one-cpu replicas into a 6-cpu cluster-b
    would leave pods Pending until waveTimeout: `tidal plan` names the workloads and the
    missing resources, as a warning while the floors hold and a refusal (exit 3) when the
    Pending replicas break one (here: 60% of each workload ready), before any write."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="6")
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    emu.reset_requests()
    (tmp_path / "plain").mkdir()
    (tmp_path / "guarded").mkdir()
    plain = write_schedule(tmp_path / "plain", schedule_text("team-p", "waveSize: 50%\n"))
    warned = invoke_cli("plan", plain, kubeconfig, "-o", "json")
    assert warned.exit_code == 0, warned.output
    notes = [w for w in json.loads(warned.stdout)["warnings"] if "do not fit" in w]
    assert notes and "cluster-b" in notes[0] and "cpu" in notes[0]
    assert "ai-app/Deployment/web-" in notes[0]
    guarded = write_schedule(tmp_path / "guarded", schedule_text(
        "team-p", "waveSize: 50%\nfloors:\n  - minAvailablePercent: 60\n"))
    refused = invoke_cli("plan", guarded, kubeconfig, "-o", "json")
    assert refused.exit_code == 3, refused.output
    problems = json.loads(refused.stdout)["problems"]
    assert any("do not fit" in p and "ai-app/Deployment/web-" in p for p in problems)
    assert not writes(emu)
