"""`tidal run` input errors, and the operator commands (status, suspend, resume, skip, hold)
against the emulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.daemon.test_daemon import schedule_yaml
from tidal.cli.controls import parse_until
from tidal.cli.main import cli
from tidal.daemon.state import StateStore
from tidal.karmada.client import KarmadaClient


def test_run_with_missing_schedules_directory_is_one_line_exit_1(tmp_path: Path) -> None:
    """A schedules directory that does not exist: one line naming the flag, exit 1."""
    result = CliRunner().invoke(cli, ["run", "--schedules", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "schedules directory" in result.output and "--schedules" in result.output
    assert "Traceback" not in result.output


def test_run_with_bad_setting_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad TIDAL_* value is reported with its name, exit 1."""
    monkeypatch.setenv("TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS", "soon")
    result = CliRunner().invoke(cli, ["run", "--schedules", str(tmp_path)])
    assert result.exit_code == 1
    assert "TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS" in result.output


@pytest.fixture
def env(emulator: Any, tmp_path: Path) -> dict[str, Any]:
    sched = tmp_path / "schedules"
    sched.mkdir()
    (sched / "team-a.yaml").write_text(schedule_yaml("team-a"))
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    from tidal.karmada.state_objects import ensure_namespace

    ensure_namespace(client, "tidal-system")
    return {"args": ["--schedules", str(sched), "--kubeconfig", str(kubeconfig)], "client": client}


@pytest.mark.e2e
def test_controls_persist_and_show_in_status(env: dict[str, Any]) -> None:
    """suspend/skip/hold write the state; status -o json shows them; resume clears suspend."""
    runner, args = CliRunner(), env["args"]
    assert runner.invoke(cli, ["suspend", "team-a", *args]).exit_code == 0
    assert runner.invoke(cli, ["skip", "team-a", *args]).exit_code == 0
    held = runner.invoke(cli, ["hold", "team-a", "--window", "day", "--until", "06:00", *args])
    assert held.exit_code == 0, held.output
    controls = StateStore(env["client"], "tidal-system").read("team-a").controls
    assert controls.suspended and controls.skip_start is not None and controls.hold is not None
    status = runner.invoke(cli, ["status", "-o", "json", *args])
    assert status.exit_code == 0, status.output
    (entry,) = json.loads(status.output)["schedules"]
    assert entry["name"] == "team-a" and entry["suspended"] is True
    assert entry["hold"]["window"] == "day" and entry["nextStart"] is not None
    assert runner.invoke(cli, ["resume", "team-a", *args]).exit_code == 0
    assert not StateStore(env["client"], "tidal-system").read("team-a").controls.suspended
    table = runner.invoke(cli, ["status", *args])
    assert table.exit_code == 0 and "team-a" in table.output


@pytest.mark.e2e
def test_controls_refuse_unknown_schedule_and_window(env: dict[str, Any]) -> None:
    """An unknown schedule or window is a one-line error with exit 1."""
    runner, args = CliRunner(), env["args"]
    unknown = runner.invoke(cli, ["suspend", "nope", *args])
    assert unknown.exit_code == 1 and "no schedule 'nope'" in unknown.output
    bad = runner.invoke(cli, ["hold", "team-a", "--window", "noon", "--until", "06:00", *args])
    assert bad.exit_code == 1 and "noon" in bad.output


def test_until_parses_local_hh_mm_and_iso() -> None:
    """--until HH:MM is the next such local time; ISO 8601 with offset is taken as given."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    tz = ZoneInfo("Asia/Shanghai")
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)  # 20:00 local
    assert parse_until("07:00", tz, now) == datetime(2026, 6, 2, 7, tzinfo=tz)
    assert parse_until("2026-06-02T01:00:00+00:00", tz, now) == datetime(2026, 6, 2, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="--until"):
        parse_until("tomorrow", tz, now)


def test_run_listens_on_the_address_it_is_given(
    emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TIDAL_LISTEN_ADDRESS=127.0.0.1 serves /healthz on loopback only; the default stays
    0.0.0.0; a value that is not an IP address is a one-line setting error."""
    from tidal.daemon.app import Daemon, Wiring
    from tidal.settings import SettingsError, load_settings

    assert load_settings().listen_address == "0.0.0.0"
    with pytest.raises(SettingsError, match=r"TIDAL_LISTEN_ADDRESS: .*IP address"):
        load_settings(listen_address="every-interface")
    monkeypatch.setenv("TIDAL_LISTEN_ADDRESS", "127.0.0.1")
    (tmp_path / "schedules").mkdir()
    settings = load_settings(schedules=tmp_path / "schedules", port=0, identity="a")
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    daemon = Daemon(settings, client=client, wiring=Wiring(watch=False)).start()
    try:
        assert daemon.http is not None
        assert daemon.http.server.server_address[0] == "127.0.0.1"
    finally:
        daemon.shutdown(0)
