"""Wave numbers agree everywhere: plan -o json, switch -o json, status and Events all count
waves from 1 (metrics carry no wave label; engine events the same numbers as Events)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import MakeEmulator, invoke_cli, schedule_text, write_schedule
from tidal.cli.main import cli
from tidal.karmada.client import KarmadaClient

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-n",
    """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 20s
""",
)


def _event_waves(client: KarmadaClient) -> list[int]:
    events = client.resource_for("v1", "Event")
    items = client.request("list", events, "GET", events.path("tidal-system")).get("items", [])
    found = (re.match(r"Wave (\d+) succeeded", str(e.get("message"))) for e in items)
    return sorted(int(m.group(1)) for m in found if m)


def test_plan_switch_status_logs_and_events_number_waves_alike(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The same two waves are 1 and 2 in the plan, the run record, status and Events."""
    emu = make_switch_emulator()
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = write_schedule(tmp_path, SCHEDULE)
    planned = json.loads(invoke_cli("plan", path, kubeconfig, "-o", "json").stdout)
    plan_waves = [w["index"] for w in planned["waves"]]
    assert plan_waves == [1, 2]
    assert [s["wave"] for s in planned["steps"][1:-1]] == plan_waves
    switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert switched.exit_code == 0, switched.output
    record: dict[str, Any] = json.loads(switched.stdout)
    assert [w["index"] for w in record["waves"]] == plan_waves
    assert [w["workloads"] for w in record["waves"]] == [
        [x["workload"] for x in w["workloads"]] for w in planned["waves"]
    ]
    assert _event_waves(KarmadaClient.from_kubeconfig(kubeconfig)) == plan_waves
    status = CliRunner().invoke(
        cli,
        ["status", "--schedules", str(path.parent), "--kubeconfig", str(kubeconfig), "-o", "json"],
    )
    assert status.exit_code == 0, status.output
    (entry,) = json.loads(status.stdout)["schedules"]
    assert [w["index"] for w in entry["lastRun"]["waves"]] == plan_waves
