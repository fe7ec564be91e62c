"""A daemon started on a schedule directory with nothing in it says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tidal.daemon.app import Daemon, Wiring
from tidal.karmada.client import KarmadaClient
from tidal.settings import load_settings

pytestmark = pytest.mark.e2e


def test_an_empty_schedule_directory_warns_at_start(emulator: Any, tmp_path: Path) -> None:
    """No schedule file: `no_schedules`, a warning naming the directory, as the daemon starts."""
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    empty = tmp_path / "schedules"
    empty.mkdir()
    settings = load_settings(schedules=empty, port=0, identity="a")
    daemon = Daemon(settings, client=client, wiring=Wiring(watch=False))
    with capture_logs() as logs:
        daemon.start(serve_http=False)
    daemon.shutdown(0)
    (warning,) = [e for e in logs if e["event"] == "no_schedules"]
    assert warning["log_level"] == "warning" and warning["directory"] == str(empty)
    assert warning["files"] == 0
