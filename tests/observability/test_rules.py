"""The shipped alert rules: syntactically valid and proven by promtool's unit tests."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "tidal" / "rules" / "tidal-alerts.yaml"
RULE_TESTS = sorted((ROOT / "tests" / "rules").glob("*.yaml"))
ALERTS = {
    "TidalWaveFailed",
    "TidalSwitchOverdue",
    "TidalFloorBreached",
    "TidalScheduleConfigInvalid",
    "TidalNoLeader",
    "TidalWindowMissed",
    "TidalScheduleBlocked",
    "TidalSwitchRefused",
    "TidalSwitchWorkerErrors",
    "TidalJournalLost",
    "TidalPolicyDrift",
    "TidalClockSkew",
    "TidalLeftoverObjects",
}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def _rules() -> list[dict[str, Any]]:
    doc = YAML(typ="safe").load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_check_rules(promtool: str) -> None:
    """`promtool check rules` accepts the shipped rules file."""
    result = _run(promtool, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("test_file", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_unit_tests(test_file: Path, promtool: str) -> None:
    """`promtool test rules` passes: each alert fires and stays quiet when it should."""
    result = _run(promtool, "test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_shipped_with_severity_summary_and_description() -> None:
    """Each alert exists with a severity, a summary and a description."""
    rules = _rules()
    assert {r["alert"] for r in rules} == ALERTS
    for rule in rules:
        assert rule["labels"]["severity"] in {"critical", "warning"}
        assert set(rule["annotations"]) >= {"summary", "description"}


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    """The promtool tests hold, for every alert, a case where it fires and one where it does not."""
    fired: set[str] = set()
    quiet: set[str] = set()
    for test_file in RULE_TESTS:
        doc = YAML(typ="safe").load(test_file.read_text())
        for case in doc["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert fired >= ALERTS
    assert quiet >= ALERTS


def test_every_alert_links_its_runbook_section_and_names_the_team() -> None:
    """runbook_url points at a heading of docs/runbooks.md; every alert carries `team` (joined
    from tidal_schedule_info, or fixed to "(all)" for fleet-wide alerts)."""
    import re

    runbooks = (ROOT / "docs" / "runbooks.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", runbooks, re.M)
    }
    for rule in _rules():
        url = rule["annotations"]["runbook_url"]
        path, _, anchor = url.partition("#")
        assert path == "docs/runbooks.md" and anchor in anchors, (rule["alert"], url)
        assert anchor == rule["alert"].lower()
        assert (
            "tidal:schedule_team:info" in rule["expr"]
            or "tidal_schedule_info" in rule["expr"]
            or rule["labels"].get("team") == "(all)"
        ), rule["alert"]
