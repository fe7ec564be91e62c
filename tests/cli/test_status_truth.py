"""`tidal status` says what is actually in force, from the cluster, and fails on a missing
input with exit 2 naming the path."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import (
    MakeEmulator,
    invoke_cli,
    schedule_text,
    weights_window,
    write_schedule,
)
from tidal.cli.main import cli

pytestmark = pytest.mark.e2e


def test_status_of_a_missing_schedules_directory_exits_2_naming_it(tmp_path: Path) -> None:
    """`tidal status --schedules /nonexistent`: one line naming the path, exit 2, before any
    kubeconfig is looked for."""
    missing = tmp_path / "nonexistent"
    result = CliRunner().invoke(cli, ["status", "--schedules", str(missing)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert str(missing) in line and "--schedules" in line


def _hh_mm(at: datetime) -> str:
    return f"{at:%H:%M}"


def test_after_a_manual_night_switch_status_says_night_is_in_force(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The schedule puts day in force now (its start an hour ago, night's in two hours);
    `tidal switch --window night` succeeded and nothing drifted: status says night is in
    force, from the cluster, and that the schedule would have day."""
    now = datetime.now(UTC)
    windows = weights_window(
        "night", _hh_mm(now + timedelta(hours=2)), {"cluster-b": 1}
    ) + weights_window("day", _hh_mm(now - timedelta(hours=1)), {"cluster-a": 4, "cluster-b": 1})
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-s", "waveSize: 4\npauseBetweenWaves: 0s\nwaveTimeout: 20s\n", windows=windows
        ),
    )
    kubeconfig = make_switch_emulator().write_kubeconfig(tmp_path / "kubeconfig")
    switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert switched.exit_code == 0, switched.output
    result = CliRunner().invoke(
        cli, ["status", "--schedules", str(path), "--kubeconfig", str(kubeconfig), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["schedules"]
    assert entry["drift"] == []
    in_force = entry["windowInForce"]
    assert (in_force["window"], in_force["source"], in_force["scheduled"]) == (
        "night",
        "cluster",
        "day",
    )
    table = (
        CliRunner()
        .invoke(cli, ["status", "--schedules", str(path), "--kubeconfig", str(kubeconfig)])
        .stdout
    )
    assert "not day as scheduled" in table
