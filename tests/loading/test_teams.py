"""The TeamCapacity file: rules read, every bad field located with its fix."""

from __future__ import annotations

from datetime import time
from pathlib import Path

import pytest

from tidal.loading.teams import TeamsFileError, load_teams

GOOD = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {name: platform}
spec:
  timeZone: Europe/Berlin
  teams:
    - name: team-2001
      namespaces: [team-2001]
      clusters:
        cluster-a:
          quota: true
          nodePool: {matchLabels: {pool: team-2001}}
          replicas: 40
          windows: [{from: "22:00", to: "06:00", replicas: 0}]
        "*": {quota: true}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "teams.yaml"
    path.write_text(text)
    return path


def test_good_file(tmp_path: Path) -> None:
    """Namespaces, per-cluster rules, the any-cluster rule and the windowed cap are read."""
    teams = load_teams(_write(tmp_path, GOOD))
    team = teams.of_namespace("team-2001")
    assert team is not None and team.name == "team-2001"
    rule = team.on("cluster-a")
    assert rule is not None and rule.quota and rule.pool == {"matchLabels": {"pool": "team-2001"}}
    assert rule.cap.at(time(23)) == 0 and rule.cap.at(time(12)) == 40
    other = team.on("cluster-z")
    assert other is not None and other.quota and other.pool is None
    assert teams.quota_namespaces("cluster-b") == {"team-2001"}
    assert teams.pools("cluster-b") == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "timeZone: Europe/Berlin",
            "timeZone: Mars/Olympus",
            "spec.timeZone: Value error, unknown",
        ),
        ('from: "22:00"', 'from: "25:99"', "not a time of day; write HH:MM"),
        ("replicas: 40", "replicas: -1", "spec.teams.0.clusters.cluster-a.replicas"),
        ("quota: true\n          nodePool", "qouta: true\n          nodePool", "qouta: Extra"),
        ("namespaces: [team-2001]", "namespaces: []", "namespaces, its templateSelector"),
        ("kind: TeamCapacity", "kind: TidalSchedule", "kind: Input should be 'TeamCapacity'"),
    ],
)
def test_bad_fields_are_located(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """A bad field gives FILE:LINE:COL and the field's path, one line each."""
    path = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(TeamsFileError) as exc:
        load_teams(path)
    assert str(path) in str(exc.value) and expected in str(exc.value)
    assert all(line.startswith(str(path) + ":") for line in str(exc.value).splitlines())


def test_a_namespace_belongs_to_one_team(tmp_path: Path) -> None:
    """Two teams claiming one namespace is an error naming it."""
    text = (
        GOOD
        + """\
    - name: team-9
      namespaces: [team-2001]
      clusters: {"*": {quota: true}}
"""
    )
    with pytest.raises(TeamsFileError, match="team-2001 is already team team-2001's"):
        load_teams(_write(tmp_path, text))


def test_not_yaml(tmp_path: Path) -> None:
    """A file that is not YAML is one located error."""
    with pytest.raises(TeamsFileError, match=r"teams.yaml:\d+:\d+: "):
        load_teams(_write(tmp_path, "spec: [unclosed"))


def test_teams_by_template_labels_may_share_a_namespace(tmp_path: Path) -> None:
    """templateSelector tells teams of one namespace apart; a team naming neither namespaces
    nor a selector is refused."""
    text = GOOD.replace(
        "namespaces: [team-2001]",
        "namespaces: [ai-app]\n      templateSelector: {matchLabels: {atms-app/teamid: '2001'}}",
    )
    text += """\
    - name: team-4004
      namespaces: [ai-app]
      templateSelector: {matchLabels: {atms-app/teamid: '4004'}}
      clusters: {"*": {quota: true}}
"""
    teams = load_teams(_write(tmp_path, text))
    owner = teams.team_of("ai-app", {"atms-app/teamid": "4004"})
    assert owner is not None and owner.name == "team-4004"
    assert teams.team_of("ai-app", {"atms-app/teamid": "9"}) is None
    with pytest.raises(TeamsFileError, match="namespaces, its templateSelector"):
        load_teams(_write(tmp_path, GOOD.replace("      namespaces: [team-2001]\n", "")))
