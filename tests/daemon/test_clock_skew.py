"""Clock skew: a replica whose clock is 150 s ahead of the API server's (measured from its
Date header) refuses to act, with a log event, a metric and (in the rules) an alert; once the
clocks agree again it acts."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.daemon.test_app import NIGHT, wait_for
from tests.daemon.test_daemon import NS, FakeEngine, schedule_yaml
from tidal.daemon.app import Daemon, Wiring
from tidal.domain.clock import FakeClock
from tidal.karmada.client import KarmadaClient
from tidal.metrics import Metrics
from tidal.settings import load_settings

pytestmark = pytest.mark.e2e


def _metric(metrics: Metrics, name: str) -> float | None:
    value = metrics.registry.get_sample_value(name)
    return None if value is None else float(value)


def test_skewed_clock_refuses_to_act_until_the_clocks_agree(emulator: Any, tmp_path: Path) -> None:
    """The API server's Date is 150 s behind: no run, clock_skew logged, skew published."""
    emulator.server.date_skew_seconds = -150.0
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    sched = tmp_path / "schedules"
    sched.mkdir()
    (sched / "team-a.yaml").write_text(schedule_yaml("team-a"))
    engine, metrics = FakeEngine(), Metrics()
    settings = load_settings(schedules=sched, port=0, state_namespace=NS, identity="solo")
    skewed = FakeClock(NIGHT + timedelta(seconds=5))
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=skewed, run_switch=engine, metrics=metrics, watch=False),
    )
    with capture_logs() as logs:
        daemon.start(serve_http=False)
        try:
            assert wait_for(lambda: any(e["event"] == "clock_skew" for e in logs), 10)
            time.sleep(0.3)
            assert engine.calls == []
            skew = _metric(metrics, "tidal_clock_skew_seconds")
            assert skew is not None and 148 <= skew <= 152
            assert _metric(metrics, "tidal_clock_skew_max_seconds") == 30.0
            event = next(e for e in logs if e["event"] == "clock_skew")
            assert event["reason"] == "clock_skew" and event["log_level"] == "error"
            emulator.server.date_skew_seconds = 0.0
            daemon.resync("test")
            assert wait_for(lambda: engine.calls, 10)
            assert [c[1] for c in engine.calls] == ["night"]
        finally:
            daemon.shutdown(grace_seconds=5)


def test_client_measures_the_servers_clock(emulator: Any, tmp_path: Path) -> None:
    """clock_offset() is how far our clock is ahead of the server's, to about a second."""
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    assert client.clock_offset() is None
    from tidal.karmada.clusters import list_clusters

    list_clusters(client)
    offset = client.clock_offset()
    assert offset is not None and abs(offset) <= 1.5
    emulator.server.date_skew_seconds = 40.0
    list_clusters(client)
    offset = client.clock_offset()
    assert offset is not None and -41.5 <= offset <= -38.5
