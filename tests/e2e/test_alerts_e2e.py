"""End to end: a real Prometheus scrapes tidal's /metrics, evaluates the shipped rules and
fires TidalWaveFailed; every dashboard panel query runs against it without error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.prometheus_harness import Prometheus, wait_for
from tests.observability import dashboard
from tidal.daemon.http import HealthServer
from tidal.engine.events import (
    FloorBreached,
    PolicyChanged,
    RunFinished,
    RunStarted,
    WaveFinished,
    WaveStarted,
)
from tidal.metrics import Metrics, ScheduleLabels
from tidal.observe import EngineObserver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _ok() -> tuple[bool, str]:
    return True, "ok"


def assert_dashboard_queries_run(prometheus: Prometheus) -> None:
    """Every panel query of the dashboard runs against the live Prometheus without error."""
    for title, expr in dashboard.queries():
        try:
            prometheus.query(expr)
        except AssertionError as exc:
            pytest.fail(f"dashboard panel {title!r}: {exc}")


def test_failed_wave_fires_tidal_wave_failed_on_a_real_prometheus(tmp_path: Path) -> None:
    """A wave failure reported to EngineObserver makes a real Prometheus fire TidalWaveFailed."""
    metrics = Metrics()
    metrics.preset([ScheduleLabels("team-a", ["night", "day"], ["cluster-a", "cluster-b"])])
    metrics.set_leader(True)
    server = HealthServer(0, _ok, _ok, metrics.render, host="127.0.0.1").start()
    try:
        with Prometheus(tmp_path, [f"127.0.0.1:{server.port}"]) as prometheus:
            wait_for("the first scrape of the preset series", lambda: prometheus.query(
                'tidal_wave_failures_total{schedule="team-a",window="night"}'), 30)
            assert prometheus.firing("TidalWaveFailed") is None

            observe = EngineObserver(metrics)
            common: dict[str, Any] = {"schedule": "team-a", "window": "night", "run_id": "r-1"}
            observe(RunStarted(**common, workloads=2, waves=1, trigger="touch"))
            observe(PolicyChanged(**common, kind="ClusterPropagationPolicy", policy="team-a",
                                  action="patch"))
            observe(WaveStarted(**common, wave=1, workloads=("ns/Deployment/a",),
                                trigger="touch"))
            observe(FloorBreached(**common, wave=1, cluster="cluster-b",
                                  workload="ns/Deployment/a", ready=0, required=1,
                                  floor="cluster-b"))
            observe(WaveFinished(**common, wave=1, result="failed", failure="floor_breach",
                                 duration_seconds=2.0))
            observe(RunFinished(**common, result="failed", duration_seconds=3.0))

            alert = wait_for("TidalWaveFailed to fire", lambda: prometheus.firing(
                "TidalWaveFailed", schedule="team-a", window="night"), 30)
            assert alert["labels"] == {"alertname": "TidalWaveFailed", "severity": "critical",
                                       "schedule": "team-a", "window": "night",
                                       "reason": "floor_breach"}
            assert "team-a" in alert["annotations"]["summary"]
            wait_for("TidalFloorBreached to fire", lambda: prometheus.firing(
                "TidalFloorBreached", schedule="team-a", cluster="cluster-b"), 30)
            assert prometheus.firing("TidalNoLeader") is None
            assert_dashboard_queries_run(prometheus)
    finally:
        server.stop()
