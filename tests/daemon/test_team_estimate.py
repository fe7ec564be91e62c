"""The daemon's runs plan with the team estimator's answers when TIDAL_ESTIMATOR__TEAMS is set."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from tests.e2e.switch_helpers import cluster
from tidal.daemon.app import EngineRunSwitch
from tidal.karmada.client import KarmadaClient
from tidal.settings import load_settings
from tidal_sim.testing.plugin import MakeEmulator

TEAMS = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
spec:
  teams:
    - {name: t, namespaces: [ai-app], clusters: {cluster-a: {replicas: 3}}}
"""


def test_team_estimate_per_run(make_emulator: MakeEmulator, tmp_path: Path) -> None:
    """No teams file: no team estimate; a teams file: its cap answers (3 - 0 held); a broken
    one: none, with a log event."""
    emu = make_emulator([cluster("cluster-a"), cluster("cluster-b")])
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kubeconfig"))
    assert EngineRunSwitch(load_settings())._team(client) is None
    path = tmp_path / "teams.yaml"
    path.write_text(TEAMS)
    team = EngineRunSwitch(load_settings(estimator={"teams": path}))._team(client)
    assert team is not None
    assert team("ai-app", "Deployment", "w", {"cpu": 1.0}, ["cluster-a", "cluster-b"]) == {
        "cluster-a": 3,
        "cluster-b": -1,
    }
    path.write_text("kind: nonsense\n")
    with capture_logs() as logs:
        assert EngineRunSwitch(load_settings(estimator={"teams": path}))._team(client) is None
    assert [e["event"] for e in logs] == ["estimator_teams_invalid"]
