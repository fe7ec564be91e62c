"""`tidal status` times: each schedule's own zone with its abbreviation (or --utc), expired
holds dropped, lines not cut at 80 columns when stdout is not a terminal, and the kubeconfig
found the standard way (or the paths tried named)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from tidal.cli.main import cli
from tidal.daemon.state import StateStore
from tidal.domain.windows import Controls, Hold
from tidal.karmada.client import KarmadaClient
from tidal.karmada.state_objects import ensure_namespace
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e
REPO = Path(__file__).parents[2]
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d"


def _schedules(tmp_path: Path) -> Path:
    folder = tmp_path / "schedules"
    folder.mkdir()
    shutil.copy(REPO / "schedules" / "team-1005.yaml", folder)  # Asia/Shanghai
    return folder


def _status(folder: Path, kubeconfig: Path, *options: str) -> str:
    result = CliRunner().invoke(
        cli, ["status", "--schedules", str(folder), "--kubeconfig", str(kubeconfig), *options]
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def _hold(emulator: Emulator, kubeconfig: Path, until: datetime) -> None:
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    ensure_namespace(client, "tidal-system")
    hold = Hold("day", until, until - timedelta(hours=3))
    StateStore(client, "tidal-system").update_controls("team-1005", lambda c: Controls(hold=hold))


def test_times_are_in_the_schedules_zone_with_its_abbreviation(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    """Next start and the hold's end are shown in Asia/Shanghai as CST; --utc shows UTC."""
    folder = _schedules(tmp_path)
    _hold(emulator, kubeconfig, datetime.now(UTC) + timedelta(hours=2))
    table = _status(folder, kubeconfig)
    row = " ".join(line for line in table.splitlines() if "│" in line)
    assert re.search(TIME + " CST", row), table
    assert re.search("until " + TIME + " CST", row), table
    assert " UTC" not in row
    utc = " ".join(line for line in _status(folder, kubeconfig, "--utc").splitlines())
    assert re.search("until " + TIME + " UTC", utc) and " CST" not in utc


def test_columns_are_not_cut_when_stdout_is_not_a_terminal(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    """Piped, the table keeps every value whole (no ellipsis) however wide it gets."""
    folder = _schedules(tmp_path)
    _hold(emulator, kubeconfig, datetime.now(UTC) + timedelta(hours=2))
    table = _status(folder, kubeconfig)
    assert "…" not in table
    assert max(len(line) for line in table.splitlines()) > 80


def test_expired_holds_are_dropped(emulator: Emulator, kubeconfig: Path, tmp_path: Path) -> None:
    """A hold whose end has passed is shown neither in the table nor in the JSON."""
    folder = _schedules(tmp_path)
    _hold(emulator, kubeconfig, datetime.now(UTC) - timedelta(minutes=5))
    assert "hold" not in _status(folder, kubeconfig)
    (entry,) = json.loads(_status(folder, kubeconfig, "-o", "json"))["schedules"]
    assert entry["hold"] is None


def test_without_kubeconfig_status_names_the_paths_it_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --kubeconfig, no TIDAL_KUBECONFIG, KUBECONFIG unset, not in a cluster and no
    ~/.kube/config: one line naming what was tried and how to fix it, exit 1."""
    for var in ("TIDAL_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["status", "--schedules", str(_schedules(tmp_path))])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert "KUBECONFIG" in line and "in-cluster" in line
    assert str(tmp_path / ".kube" / "config") in line and "--kubeconfig" in line


def test_without_kubeconfig_status_uses_the_kubeconfig_variable(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBECONFIG is honoured when neither --kubeconfig nor TIDAL_KUBECONFIG is given."""
    monkeypatch.delenv("TIDAL_KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = CliRunner().invoke(cli, ["status", "--schedules", str(_schedules(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "team-1005" in result.stdout


def test_a_schedule_waiting_in_the_daemons_queue_says_for_what_and_since_when(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    """What the daemon published (tidal-queue) shows as `waiting for surge capacity since`
    in the schedule's zone, and under `waiting` in the JSON; a garbled queue shows nothing."""
    from tidal.daemon.budget import CapacityWait
    from tidal.daemon.queue import QueuePublisher, queue_report
    from tidal.domain.clock import FakeClock
    from tidal.karmada.state_objects import get_configmap, update_configmap

    folder = _schedules(tmp_path)
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    ensure_namespace(client, "tidal-system")
    since = datetime(2026, 12, 3, 15, 0, 5, tzinfo=UTC)
    clock = FakeClock(since + timedelta(seconds=30))
    wait = CapacityWait("team-1005", "r/w1", since, {"cluster-b": {"nvidia.com/gpu": 2.0}})
    report = queue_report(
        {}, {"team-1005": wait}, {"cluster-b": {"nvidia.com/gpu": 6.0}}, clock.now()
    )
    assert QueuePublisher(client, "tidal-system", "solo", clock).publish(report, True)
    table = " ".join(line for line in _status(folder, kubeconfig).splitlines() if "│" in line)
    assert "waiting for surge capacity since 2026-12-03 23:00 CST" in table
    (entry,) = json.loads(_status(folder, kubeconfig, "-o", "json"))["schedules"]
    assert entry["waiting"] == {
        "reason": "capacity",
        "since": since.isoformat(),
        "short": {"cluster-b": {"nvidia.com/gpu": 2.0}},
    }
    obj = get_configmap(client, "tidal-system", "tidal-queue")
    assert obj is not None
    obj["data"] = {"queue": "{not json"}
    update_configmap(client, obj)
    (entry,) = json.loads(_status(folder, kubeconfig, "-o", "json"))["schedules"]
    assert entry["waiting"] is None
