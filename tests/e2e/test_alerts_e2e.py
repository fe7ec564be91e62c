"""End to end: a real Prometheus scrapes tidal's /metrics, evaluates the shipped rules and
fires TidalWaveFailed; every dashboard panel query runs against it without error."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e import alert_scenario
from tests.e2e.prometheus_harness import Prometheus, free_port, wait_for
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
from tidal.engine.states import FailureReason, PolicyAction, RunResult, Trigger, WaveResult
from tidal.metrics import Metrics, ScheduleLabels
from tidal.observe import EngineObserver

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


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
            wait_for(
                "the first scrape of the preset series",
                lambda: prometheus.query(
                    'tidal_wave_failures_total{schedule="team-a",window="night"}'
                ),
                30,
            )
            assert prometheus.firing("TidalWaveFailed") is None

            observe = EngineObserver(metrics)
            common: dict[str, Any] = {"schedule": "team-a", "window": "night", "run_id": "r-1"}
            observe(RunStarted(**common, workloads=2, waves=1, trigger=Trigger.TOUCH))
            observe(
                PolicyChanged(
                    **common,
                    kind="ClusterPropagationPolicy",
                    policy="team-a",
                    action=PolicyAction.PATCH,
                )
            )
            observe(
                WaveStarted(**common, wave=1, workloads=("ns/Deployment/a",), trigger=Trigger.TOUCH)
            )
            observe(
                FloorBreached(
                    **common,
                    wave=1,
                    cluster="cluster-b",
                    workload="ns/Deployment/a",
                    ready=0,
                    required=1,
                    floor="cluster-b",
                )
            )
            observe(
                WaveFinished(
                    **common,
                    wave=1,
                    result=WaveResult.FAILED,
                    failure=FailureReason.FLOOR_BREACH,
                    duration_seconds=2.0,
                )
            )
            observe(RunFinished(**common, result=RunResult.FAILED, duration_seconds=3.0))

            alert = wait_for(
                "TidalWaveFailed to fire",
                lambda: prometheus.firing("TidalWaveFailed", schedule="team-a", window="night"),
                30,
            )
            assert alert["labels"] == {
                "alertname": "TidalWaveFailed",
                "severity": "critical",
                "schedule": "team-a",
                "window": "night",
                "reason": "floor_breach",
                "team": "team-a",
            }
            assert "team-a" in alert["annotations"]["summary"]
            wait_for(
                "TidalFloorBreached to fire",
                lambda: prometheus.firing(
                    "TidalFloorBreached", schedule="team-a", cluster="cluster-b"
                ),
                30,
            )
            assert prometheus.firing("TidalNoLeader") is None
            assert_dashboard_queries_run(prometheus)
    finally:
        server.stop()


def assert_exposition_clean_and_counted(url: str, failed: int, succeeded: int) -> None:
    """A replica's own /metrics passes `promtool check metrics` and counts its runs: `failed`
    night switches (a wave timed out) and `succeeded` day switches."""
    promtool = shutil.which("promtool")
    with urllib.request.urlopen(url, timeout=5) as response:
        exposition = response.read()
    if promtool is not None:
        result = subprocess.run(
            [promtool, "check", "metrics"],
            input=exposition,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, (result.stdout + result.stderr).decode()
    values = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(exposition.decode())
        for s in family.samples
    }

    def get(name: str, **labels: str) -> float:
        return values[(name, frozenset(labels.items()))]

    night = {"schedule": "team-42", "window": "night"}
    day = {"schedule": "team-42", "window": "day"}
    assert get("tidal_switch_runs_total", **night, result="failed") == failed
    assert get("tidal_switch_runs_total", **night, result="succeeded") == 0
    assert get("tidal_switch_runs_total", **day, result="succeeded") == succeeded
    assert get("tidal_switch_runs_total", **day, result="failed") == 0
    assert get("tidal_wave_failures_total", **night, reason="timeout") == failed
    assert get("tidal_waves_total", **night, result="failed") == failed
    assert (get("tidal_waves_total", **day, result="succeeded") > 0) == bool(succeeded)
    assert get("tidal_last_success_timestamp_seconds", **night) == 0
    assert (get("tidal_last_success_timestamp_seconds", **day) > 0) == bool(succeeded)
    assert (
        get("tidal_last_wave_failure_timestamp_seconds", **night, reason="timeout") > 0
    ) == bool(failed)
    assert get("tidal_switch_duration_seconds_count", **night) == failed
    assert get("tidal_schedules_loaded") == 1


def _utc_hhmm(moment: datetime) -> str:
    return moment.strftime("%H:%M")


def _events(emulator: Any) -> list[tuple[str, str, str]]:
    """(involved kind, involved name, reason) of every Event in the emulator."""
    from kubernetes import client

    config = client.Configuration()
    config.host = emulator.url
    config.api_key = {"authorization": "Bearer sim:e2e"}
    with client.ApiClient(config) as api:
        items = client.CoreV1Api(api).list_event_for_all_namespaces().items
    return [
        (str(e.involved_object.kind), str(e.involved_object.name), str(e.reason)) for e in items
    ]


def _start_daemon(
    tmp_path: Path, kubeconfig: Path, port: int, identity: str, log: Any
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "TIDAL_LOG_FORMAT": "json",
        "TIDAL_LOG_LEVEL": "INFO",
        "TIDAL_STATE_NAMESPACE": "tidal-system",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tidal",
            "run",
            "--schedules",
            str(tmp_path / "schedules"),
            "--kubeconfig",
            str(kubeconfig),
            "--port",
            str(port),
            "--identity",
            identity,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def test_tidal_run_wave_failure_fires_tidal_wave_failed(make_emulator: Any, tmp_path: Path) -> None:
    """Two `tidal run` replicas against the emulator, cluster-b unable to start pods: Prometheus
    fires TidalWaveFailed once for team-42/night (reason timeout) although the standby exports
    0; after a good day switch the leader's exposition counts one good and one failed switch;
    the Events tell the same story; every dashboard query runs."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=True))
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    # The night window started a minute ago: the leader catches it up at start-up.
    night = _utc_hhmm(datetime.now(UTC) - timedelta(minutes=1))
    alert_scenario.write_schedule(
        tmp_path / "schedules", night, _utc_hhmm(datetime.now(UTC) + timedelta(hours=12))
    )
    ports = [free_port(), free_port()]
    targets = [f"127.0.0.1:{port}" for port in ports]
    logs = [tmp_path / f"tidal-run-{i}.log" for i in range(2)]
    with (
        Prometheus(tmp_path / "prometheus", targets) as prometheus,
        logs[0].open("wb") as log0,
        logs[1].open("wb") as log1,
    ):
        daemons = [
            _start_daemon(tmp_path, kubeconfig, ports[0], "e2e-0", log0),
            _start_daemon(tmp_path, kubeconfig, ports[1], "e2e-1", log1),
        ]
        try:
            wait_for("Prometheus to scrape both replicas", prometheus.targets_up, 30)
            alert = wait_for(
                "TidalWaveFailed to fire",
                lambda: prometheus.firing("TidalWaveFailed", schedule="team-42", window="night"),
                60,
                interval=0.5,
            )
            assert alert["labels"] == {
                "alertname": "TidalWaveFailed",
                "severity": "critical",
                "schedule": "team-42",
                "window": "night",
                "reason": "timeout",
                "team": "team-42",
            }
            assert (
                len(
                    [
                        a
                        for a in prometheus.alerts()
                        if a["labels"]["alertname"] == "TidalWaveFailed"
                    ]
                )
                == 1
            )
            # An edit brings the day window forward to this minute: the reload catches it up,
            # and the workloads go back to cluster-a, where pods start.
            alert_scenario.write_schedule(
                tmp_path / "schedules", night, _utc_hhmm(datetime.now(UTC))
            )
            wait_for(
                "the day switch to succeed",
                lambda: prometheus.query(
                    'tidal_switch_runs_total{window="day",result="succeeded"} == 1'
                ),
                60,
            )
            (leader,) = prometheus.query('tidal_leader{job="tidal"} == 1')
            (standby,) = prometheus.query('tidal_leader{job="tidal"} == 0')
            assert_exposition_clean_and_counted(
                f"http://{leader['metric']['instance']}/metrics", failed=1, succeeded=1
            )
            assert_exposition_clean_and_counted(
                f"http://{standby['metric']['instance']}/metrics", failed=0, succeeded=0
            )
            # The day success does not resolve the night's failure: only a night success does.
            assert prometheus.firing("TidalWaveFailed", schedule="team-42", window="night")
            assert prometheus.firing("TidalNoLeader") is None
            assert_dashboard_queries_run(prometheus)
            events = _events(emulator)
            assert ("ConfigMap", "tidal-run-team-42", "WaveFailed") in events
            assert ("ClusterPropagationPolicy", "team-42", "WaveFailed") in events
            assert ("ConfigMap", "tidal-run-team-42", "SwitchStarted") in events
        except BaseException:
            for path in logs:
                print(f"--- {path.name}", path.read_text()[-4000:], sep="\n")
            raise
        finally:
            for daemon in daemons:
                _stop(daemon)
