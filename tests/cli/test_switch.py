"""`tidal switch -o json` against the emulator: the run record's keys and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.switch_helpers import MakeEmulator, invoke_cli, schedule_text, write_schedule
from tests.sim.http_helpers import call as emu_call
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-s",
    """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: TIMEOUT
""",
)


def _setup(
    make_switch_emulator: MakeEmulator, tmp_path: Path, timeout: str, b_cpu: str = "1000"
) -> tuple[Emulator, Path, Path]:
    emu = make_switch_emulator(cpu="1", b_cpu=b_cpu)
    return (
        emu,
        emu.write_kubeconfig(tmp_path / "kubeconfig"),
        write_schedule(tmp_path, SCHEDULE.replace("TIMEOUT", timeout)),
    )


def test_switch_prints_the_run_record_and_exits_0(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """-o json prints {schedule, window, runId, result, startedAt, finishedAt, waves}."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    result = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert {"schedule", "window", "runId", "result", "startedAt", "finishedAt", "waves"} <= set(
        record
    )
    assert record["result"] == "succeeded" and record["schedule"] == "team-s"
    assert [
        set(w) >= {"index", "workloads", "result", "reason", "startedAt", "finishedAt"}
        for w in record["waves"]
    ] == [True, True]
    assert record["waves"][0]["workloads"] == ["ai-app/Deployment/web-0", "ai-app/Deployment/web-1"]


def test_failed_wave_exits_2(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """A wave that times out (pods pending in a full cluster) exits 2 with result failed."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "2s", b_cpu="6")
    result = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert result.exit_code == 2, result.output
    record = json.loads(result.stdout)
    assert record["result"] == "failed"
    assert record["waves"][0]["result"] == "failed"


def test_switch_without_yes_refuses_when_stdin_is_not_a_terminal(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """No terminal and no --yes: exit 4 with the one-line fix, and nothing is written."""
    from tests.e2e.switch_helpers import writes

    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    emu.reset_requests()
    result = invoke_cli("switch", path, kubeconfig)
    assert result.exit_code == 4, result.output
    assert result.stderr.strip() == "error: not a terminal: pass --yes to run without confirmation"
    assert not writes(emu)


def test_switch_answered_no_at_the_prompt_is_not_a_success(
    make_switch_emulator: MakeEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'n' at the confirmation prompt exits 5 (declined), not 0, and writes nothing."""
    from click.testing import CliRunner

    from tests.e2e.switch_helpers import writes
    from tidal.cli import switch as switch_cli
    from tidal.cli.main import cli

    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    monkeypatch.setattr(switch_cli, "stdin_is_terminal", lambda: True)
    emu.reset_requests()
    result = CliRunner().invoke(
        cli,
        ["switch", str(path), "--window", "night", "--kubeconfig", str(kubeconfig)],
        input="n\n",
    )
    assert result.exit_code == 5, result.output
    assert "declined: nothing written" in result.stderr
    assert not writes(emu)


def test_usage_error_exits_2() -> None:
    """A missing required option is a usage error: exit 2 (click's convention)."""
    from click.testing import CliRunner

    from tidal.cli.main import cli

    result = CliRunner().invoke(cli, ["switch", "x.yaml"])
    assert result.exit_code == 2
    assert "--window" in result.stderr


def test_a_halted_run_says_what_it_left_and_how_to_finish_or_undo(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A wave that times out halts with the policy Lazy: the text output names the policy
    left Lazy (and what it goes back to), the waves done, and the commands that finish the
    switch or lift the Lazy; -o json carries the same as leftLazy."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "2s", b_cpu="6")
    result = invoke_cli("switch", path, kubeconfig, "--yes")
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert (
        "left: ClusterPropagationPolicy team-cpp stays activationPreference: Lazy "
        "(tidal added it; it goes back to unset)" in err
    )
    assert (
        f"to finish: fix the cause, then `tidal switch {path} --window night "
        f"--kubeconfig {kubeconfig}` runs the waves not done and lifts the Lazy" in err
    )
    assert (
        "to undo: `kubectl patch clusterpropagationpolicy team-cpp --type merge -p "
        '\'{"spec":{"activationPreference":null}}\'`' in err
    )
    again = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    record = json.loads(again.stdout)
    assert record["leftLazy"] == [
        {"policy": "ClusterPropagationPolicy/team-cpp", "restoresTo": None}
    ]


def test_a_wave_timeout_names_the_stuck_workloads_and_the_likely_cause(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b has 6 CPUs for 20 one-CPU replicas: the wave times out with a reason naming
    each workload not converged, its replicas not ready per cluster, and the likely cause read
    from the Cluster's resource summary (pending pods, insufficient cpu)."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "3s", b_cpu="6")
    result = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert result.exit_code == 2, result.output
    reason = json.loads(result.stdout)["waves"][0]["reason"]
    assert reason.startswith("not converged within waveTimeout 3s: ")
    assert "not converged: ai-app/Deployment/web-0 (cluster-b: " in reason
    assert "not ready" in reason
    assert "likely cause: pods Pending in cluster-b: insufficient cpu (allocatable 6" in reason


def test_status_shows_manual_runs_and_manual_runs_write_events(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """After `tidal switch` succeeded and then failed, `tidal status` (table and JSON) shows
    that last run and its result, and the manual runs wrote their Kubernetes Events."""
    from click.testing import CliRunner

    from tidal.cli.main import cli

    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    assert invoke_cli("switch", path, kubeconfig, "--yes").exit_code == 0

    def status(*options: str) -> str:
        result = CliRunner().invoke(
            cli, ["status", "--schedules", str(tmp_path), "--kubeconfig", str(kubeconfig), *options]
        )
        assert result.exit_code == 0, result.output
        return result.stdout

    row = next(line for line in status().splitlines() if "team-s" in line)
    assert "night" in row and "succeeded" in row, row
    emu.set_pods_fail("cluster-a")
    path.write_text(path.read_text().replace("cluster-b", "cluster-a").replace("20s", "2s"))
    assert invoke_cli("switch", path, kubeconfig, "--yes").exit_code == 2
    row = next(line for line in status().splitlines() if "team-s" in line)
    assert "failed" in row, row
    (entry,) = json.loads(status("-o", "json"))["schedules"]
    assert entry["lastRun"]["result"] == "failed"
    assert entry["lastRun"]["startedBy"].startswith("cli:")
    _, events = emu_call(emu, "GET", "/api/v1/events")
    reasons = {e["reason"] for e in events["items"]}
    assert {"SwitchStarted", "SwitchSucceeded", "SwitchFailed"} <= reasons, reasons


def test_on_a_terminal_the_live_view_shows_each_wave_and_no_log_line(
    make_switch_emulator: MakeEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the live view on a terminal's stderr: each wave ends succeeded with all its
    workloads converged and ready/desired per cluster, and no log line (JSON or not) is
    mixed into it; stdout still carries the one result document."""
    from tidal.cli import switch as switch_cli

    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    monkeypatch.setattr(switch_cli, "stderr_is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "160")
    result = invoke_cli("switch", path, kubeconfig, "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == "succeeded"
    rows = [line for line in result.stderr.splitlines() if "succeeded" in line and "│" in line]
    assert len(rows) == 2, result.stderr  # one per wave, in the final view
    for row in rows:
        assert "2/2" in row and "cluster-b 10/10" in row, row  # 2 workloads x 5 replicas
    assert "run succeeded" in result.stderr
    assert not any(mark in result.stderr for mark in ('"event"', "gate_passed", "[info"))


def test_off_a_terminal_stdout_is_one_result_document_and_logs_go_to_stderr(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`tidal switch --yes` piped (no -o): stdout is exactly one JSON document, the run
    record; every log line is on stderr."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "20s")
    result = invoke_cli("switch", path, kubeconfig, "--yes")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["result"] == "succeeded" and record["schedule"] == "team-s"
    logged = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert "run_started" in logged and "run_finished" in logged
