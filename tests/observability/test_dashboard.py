"""The Grafana dashboard: well-formed, covers what operators need, and every query parses."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ruamel.yaml import YAML

from tests.observability import dashboard

REQUIRED_TITLES = {
    "Next switch per schedule and window",
    "Last successful switch per schedule and window",
    "Wave results over time",
    "Floor margin per cluster",
    "Karmada API error rate",
    "Leader",
    "Schedules waiting",
    "Capacity leased per cluster",
}


def test_dashboard_has_the_panels_operators_need() -> None:
    """Next/last switch, wave results, floor margin, API errors, leader, the queue and the
    capacity leased are all there."""
    board = dashboard.load()
    titles = {p["title"] for p in dashboard.panels(board)}
    assert titles >= REQUIRED_TITLES
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard.panels(board):
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}"


def test_every_panel_query_parses(promtool: str, tmp_path: Path) -> None:
    """promtool parses every panel query (each checked as a recording rule's expression)."""
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": expr}
                    for i, (_, expr) in enumerate(dashboard.queries())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yaml"
    with path.open("w") as out:
        YAML(typ="safe").dump(rules, out)
    result = subprocess.run(
        [promtool, "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
