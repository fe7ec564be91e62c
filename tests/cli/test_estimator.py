"""`tidal estimator` and `tidal estimator check`: input errors, and the check against a running
estimator and the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import cluster
from tidal.cli.main import cli
from tidal.domain.teams import ClusterRule, TeamRule, Teams
from tidal.estimator.app import EstimatorApp
from tidal.estimator.check import ask
from tidal.karmada.client import KarmadaClient
from tidal.settings import EstimatorSettings
from tidal_sim.testing.plugin import MakeEmulator


def test_help_names_the_flags() -> None:
    """--help lists the teams file, the gRPC port and the check sub-command."""
    result = CliRunner().invoke(cli, ["estimator", "--help"])
    assert result.exit_code == 0
    assert "--teams" in result.output and "--grpc-port" in result.output
    assert "check" in result.output


def test_no_teams_file_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a teams file: one line naming the flag and the variable, exit 1."""
    monkeypatch.delenv("TIDAL_ESTIMATOR__TEAMS", raising=False)
    result = CliRunner().invoke(cli, ["estimator"])
    assert result.exit_code == 1
    assert "--teams" in result.output and "TIDAL_ESTIMATOR__TEAMS" in result.output
    assert "Traceback" not in result.output


def test_bad_teams_file_is_located(tmp_path: Path) -> None:
    """A teams file with a bad field: FILE:LINE:COL, exit 1, nothing served."""
    path = tmp_path / "teams.yaml"
    path.write_text("apiVersion: tidal.io/v1alpha1\nkind: TeamCapacity\nspec: {teems: []}\n")
    result = CliRunner().invoke(cli, ["estimator", "--teams", str(path)])
    assert result.exit_code == 1
    assert f"{path}:3:" in result.output and "teems" in result.output


def test_bad_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A staleness bound below the refresh interval is refused, naming the variables."""
    monkeypatch.setenv("TIDAL_ESTIMATOR__STALE_SECONDS", "5")
    result = CliRunner().invoke(cli, ["estimator", "--teams", str(tmp_path / "t.yaml")])
    assert result.exit_code == 1
    assert "STALE_SECONDS" in result.output and "REFRESH_SECONDS" in result.output


def test_check_reports_per_cluster(make_emulator: MakeEmulator, tmp_path: Path) -> None:
    """check: exit 1 while karmada-scheduler has not asked for a cluster, 0 once it has."""
    emu = make_emulator([cluster("cluster-a"), cluster("cluster-b")])
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    teams = Teams((TeamRule("t", frozenset({"t"}), {"*": ClusterRule(quota=True)}),))
    settings = EstimatorSettings(address="127.0.0.1", grpc_port=0)
    app = EstimatorApp(
        settings, KarmadaClient.from_kubeconfig(kubeconfig), teams, http_port=0
    ).start()
    try:
        args = [
            "estimator",
            "check",
            "--kubeconfig",
            str(kubeconfig),
            "--estimator",
            f"127.0.0.1:{app.grpc_port}",
            "--status-url",
            f"http://127.0.0.1:{app.http_port}",
        ]
        first = CliRunner().invoke(cli, args)
        assert first.exit_code == 1, first.output
        assert "cluster-a:" in first.output and "has not asked" in first.output
        for name in ("cluster-a", "cluster-b"):  # as karmada-scheduler asks: with the object
            ask(f"127.0.0.1:{app.grpc_port}", name, workload="kind=Deployment, name=t/w")
        second = CliRunner().invoke(cli, args)
        assert second.exit_code == 0, second.output
        assert "asked 1 time(s)" in second.output
        assert (
            "karmada-scheduler-estimator-cluster-b.karmada-system.svc.cluster.local:10352"
            in second.output
        )
    finally:
        app.stop(0)


def test_teams_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    """The serving estimator reads a changed teams file again; a broken edit keeps the last
    good teams and says so in a log event."""
    import os

    from structlog.testing import capture_logs

    from tidal.cli.estimator import _reloader

    path = tmp_path / "teams.yaml"
    text = "apiVersion: tidal.io/v1alpha1\nkind: TeamCapacity\nspec: {teams: []}\n"
    path.write_text(text)
    reload = _reloader(path)
    assert reload() is None  # unchanged
    path.write_text(
        text.replace(
            "teams: []", "teams: [{name: t, namespaces: [t], clusters: {'*': {quota: true}}}]"
        )
    )
    os.utime(path, (1, 1))
    teams = reload()
    assert teams is not None and teams.of_namespace("t") is not None
    path.write_text("kind: nonsense\n")
    os.utime(path, (2, 2))
    with capture_logs() as logs:
        assert reload() is None
    assert [e["event"] for e in logs] == ["estimator_teams_invalid"]
