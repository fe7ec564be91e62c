"""The metrics a daemon exports after a good and a failed switch, as Prometheus reads them."""

from __future__ import annotations

import subprocess
from typing import Any

import structlog
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from tidal.engine.events import (
    FloorBreached,
    FloorObserved,
    PolicyChanged,
    RunFinished,
    RunStarted,
    WaveFinished,
    WaveStarted,
)
from tidal.engine.states import FailureReason, PolicyAction, RunResult, Trigger, WaveResult
from tidal.karmada.events import ObjectRef, configmap_ref
from tidal.metrics import Metrics, ScheduleLabels
from tidal.observe import EngineObserver

SCHEDULE = ScheduleLabels("team-a", ["night", "day"], ["cluster-a", "cluster-b"])
FINISHED_AT = 1_790_000_000.0


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition, keyed by name and labels."""
    text = metrics.render().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: Metrics, name: str, **labels: str) -> float:
    """One sample's value; KeyError when the series is missing."""
    return samples(metrics)[(name, frozenset(labels.items()))]


def team_a(metrics: Metrics, name: str, **labels: str) -> float:
    """One sample's value of schedule team-a's series `name`."""
    return value(metrics, name, schedule="team-a", **labels)


class FakeRecorder:
    """Collects the Events the observer would write."""

    def __init__(self) -> None:
        self.events: list[tuple[ObjectRef, str, str, str]] = []

    def record(
        self, involved: ObjectRef, reason: str, message: str, event_type: str = "Normal"
    ) -> bool:
        self.events.append((involved, reason, message, event_type))
        return True


def good_run(observe: EngineObserver, run_id: str = "r1") -> None:
    """A two-wave night switch that succeeds."""
    common: dict[str, Any] = {"schedule": "team-a", "window": "night", "run_id": run_id}
    observe(RunStarted(**common, workloads=4, waves=2, trigger=Trigger.TOUCH))
    observe(
        PolicyChanged(
            **common,
            kind="ClusterPropagationPolicy",
            policy="team-a",
            action=PolicyAction.PATCH,
            lazy_added=True,
        )
    )
    for wave in (1, 2):
        observe(
            WaveStarted(**common, wave=wave, workloads=("ns/Deployment/a",), trigger=Trigger.TOUCH)
        )
        observe(FloorObserved(**common, wave=wave, cluster="cluster-b", min_ready=2, required=1))
        observe(
            WaveFinished(**common, wave=wave, result=WaveResult.SUCCEEDED, duration_seconds=12.0)
        )
    observe(RunFinished(**common, result=RunResult.SUCCEEDED, duration_seconds=40.0))


def failed_run(observe: EngineObserver, run_id: str = "r2") -> None:
    """A day switch whose first wave breaks the floor in cluster-b and halts."""
    common: dict[str, Any] = {"schedule": "team-a", "window": "day", "run_id": run_id}
    observe(RunStarted(**common, workloads=4, waves=2, trigger=Trigger.TOUCH))
    observe(
        PolicyChanged(
            **common, kind="PropagationPolicy", policy="team-a/inference", action=PolicyAction.PATCH
        )
    )
    observe(WaveStarted(**common, wave=1, workloads=("ns/Deployment/a",), trigger=Trigger.TOUCH))
    observe(
        FloorBreached(
            **common,
            wave=1,
            cluster="cluster-b",
            workload="ns/Deployment/a",
            ready=0,
            required=1,
            floor="cluster-b>=1",
        )
    )
    observe(
        WaveFinished(
            **common,
            wave=1,
            result=WaveResult.FAILED,
            failure=FailureReason.FLOOR_BREACH,
            reason="ns/Deployment/a has 0 ready in cluster-b",
            duration_seconds=3.0,
        )
    )
    observe(
        RunFinished(**common, result=RunResult.FAILED, reason="wave 1 failed", duration_seconds=5.0)
    )


def test_preset_exports_every_known_series_at_zero() -> None:
    """Before any run, every schedule/window/cluster combination is exported with value 0."""
    metrics = Metrics()
    metrics.preset([SCHEDULE])
    got = samples(metrics)
    for window in ("night", "day"):
        for result in ("succeeded", "failed", "rolled_back"):
            assert (
                got[
                    (
                        "tidal_switch_runs_total",
                        frozenset(
                            {"schedule": "team-a", "window": window, "result": result}.items()
                        ),
                    )
                ]
                == 0
            )
        for reason in (
            "floor_breach",
            "timeout",
            "unschedulable",
            "binding_not_found",
            "api_error",
        ):
            assert team_a(metrics, "tidal_wave_failures_total", window=window, reason=reason) == 0
        assert (
            team_a(
                metrics, "tidal_last_wave_failure_timestamp_seconds", window=window, reason=reason
            )
            == 0
        )
        assert team_a(metrics, "tidal_last_success_timestamp_seconds", window=window) == 0
        assert team_a(metrics, "tidal_windows_missed_total", window=window) == 0
        assert team_a(metrics, "tidal_window_period_seconds", window=window) == 86400
    for cluster in ("cluster-a", "cluster-b"):
        assert team_a(metrics, "tidal_floor_breaches_total", cluster=cluster) == 0
    assert value(metrics, "tidal_leader") == 0


def test_one_good_and_one_failed_switch_are_counted() -> None:
    """After a good night switch and a failed day switch the counters say exactly that."""
    metrics = Metrics()
    metrics.preset([SCHEDULE])
    observe = EngineObserver(metrics, wall_clock=lambda: FINISHED_AT)
    good_run(observe)
    failed_run(observe)

    def runs(window: str, result: str) -> float:
        return team_a(metrics, "tidal_switch_runs_total", window=window, result=result)

    assert (runs("night", "succeeded"), runs("night", "failed")) == (1, 0)
    assert (runs("day", "succeeded"), runs("day", "failed")) == (0, 1)
    assert team_a(metrics, "tidal_waves_total", window="night", result="succeeded") == 2
    assert team_a(metrics, "tidal_waves_total", window="day", result="failed") == 1
    assert team_a(metrics, "tidal_wave_failures_total", window="day", reason="floor_breach") == 1
    assert team_a(metrics, "tidal_wave_failures_total", window="day", reason="timeout") == 0
    assert team_a(metrics, "tidal_floor_breaches_total", cluster="cluster-b") == 1
    assert team_a(metrics, "tidal_floor_min_ready_replicas", cluster="cluster-b") == 0
    assert team_a(metrics, "tidal_floor_required_replicas", cluster="cluster-b") == 1
    assert team_a(metrics, "tidal_last_success_timestamp_seconds", window="night") == FINISHED_AT
    assert team_a(metrics, "tidal_last_success_timestamp_seconds", window="day") == 0
    assert (
        team_a(
            metrics,
            "tidal_last_wave_failure_timestamp_seconds",
            window="day",
            reason="floor_breach",
        )
        == FINISHED_AT
    )
    assert (
        team_a(
            metrics,
            "tidal_last_wave_failure_timestamp_seconds",
            window="night",
            reason="floor_breach",
        )
        == 0
    )
    assert team_a(metrics, "tidal_switch_duration_seconds_count", window="night") == 1
    assert team_a(metrics, "tidal_switch_duration_seconds_sum", window="night") == 40
    assert team_a(metrics, "tidal_wave_duration_seconds_count", window="night") == 2


def test_daemon_hooks_count_requests_scheduler_errors_and_config() -> None:
    """Request hook, APScheduler listener, leader, reload and next-run setters all export."""
    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MISSED, JobExecutionEvent

    metrics = Metrics()
    metrics.on_request("list", "resourcebindings", 200)
    metrics.on_request("PATCH", "clusterpropagationpolicies", 409)
    metrics.on_request("get", "clusters", 0)
    metrics.on_scheduler_event(JobExecutionEvent(EVENT_JOB_ERROR, "j", None, None))
    metrics.on_scheduler_event(JobExecutionEvent(EVENT_JOB_MISSED, "j", None, None))
    metrics.set_leader(True)
    metrics.config_loaded({"schedules/a.yaml": True, "schedules/b.yaml": False}, 1)
    metrics.set_next_run("team-a", "night", 1_790_003_600.0)
    metrics.window_missed("team-a", "day")
    assert (
        value(
            metrics,
            "tidal_kube_api_requests_total",
            verb="patch",
            resource="clusterpropagationpolicies",
            code="409",
        )
        == 1
    )
    assert (
        value(metrics, "tidal_kube_api_requests_total", verb="get", resource="clusters", code="0")
        == 1
    )
    assert value(metrics, "tidal_scheduler_job_errors_total", event="error") == 1
    assert value(metrics, "tidal_scheduler_job_errors_total", event="missed") == 1
    assert value(metrics, "tidal_scheduler_job_errors_total", event="max_instances") == 0
    assert value(metrics, "tidal_leader") == 1
    assert value(metrics, "tidal_schedule_config_valid", file="schedules/b.yaml") == 0
    assert value(metrics, "tidal_schedules_loaded") == 1
    assert team_a(metrics, "tidal_next_run_timestamp_seconds", window="night") == 1_790_003_600.0
    assert team_a(metrics, "tidal_windows_missed_total", window="day") == 1
    metrics.config_loaded({"schedules/a.yaml": True}, 1)
    assert (
        "tidal_schedule_config_valid",
        frozenset({"file": "schedules/b.yaml"}.items()),
    ) not in samples(metrics)


def test_two_metrics_objects_share_nothing() -> None:
    """Each Metrics owns its registry: counting in one leaves another untouched."""
    first, second = Metrics(), Metrics()
    first.on_request("get", "clusters", 200)
    assert (
        value(first, "tidal_kube_api_requests_total", verb="get", resource="clusters", code="200")
        == 1
    )
    assert "tidal_kube_api_requests_total" not in {n for n, _ in samples(second)}


def test_forget_schedule_drops_its_series() -> None:
    """A removed schedule's series disappear from the exposition."""
    metrics = Metrics()
    metrics.preset([SCHEDULE, ScheduleLabels("team-b", ["night"])])
    metrics.forget_schedule("team-a")
    schedules = {dict(labels).get("schedule") for _, labels in samples(metrics)}
    assert "team-a" not in schedules
    assert "team-b" in schedules


def test_observer_records_kubernetes_events_on_state_and_changed_policies() -> None:
    """Each run writes SwitchStarted/Wave*/FloorBreached/Switch* Events on state and policies."""
    recorder = FakeRecorder()
    observe = EngineObserver(
        Metrics(),
        recorder=recorder,  # type: ignore[arg-type]
        state_object=lambda s: configmap_ref(f"tidal-{s}", "tidal-system"),
    )
    good_run(observe)
    failed_run(observe)
    by_target: dict[str, list[str]] = {}
    for ref, reason, _, _ in recorder.events:
        by_target.setdefault(f"{ref.kind}/{ref.namespace}/{ref.name}", []).append(reason)
    assert by_target["ConfigMap/tidal-system/tidal-team-a"] == [
        "SwitchStarted",
        "WaveSucceeded",
        "WaveSucceeded",
        "SwitchSucceeded",
        "SwitchStarted",
        "FloorBreached",
        "WaveFailed",
        "SwitchFailed",
    ]
    assert by_target["ClusterPropagationPolicy/None/team-a"] == [
        "SwitchStarted",
        "WaveSucceeded",
        "WaveSucceeded",
        "SwitchSucceeded",
    ]
    assert by_target["PropagationPolicy/team-a/inference"] == [
        "SwitchStarted",
        "FloorBreached",
        "WaveFailed",
        "SwitchFailed",
    ]
    warnings = {reason for _, reason, _, kind in recorder.events if kind == "Warning"}
    assert warnings == {"FloorBreached", "WaveFailed", "SwitchFailed"}


def test_observer_never_raises_into_the_engine() -> None:
    """A recorder that blows up is logged (with the run's context) and swallowed; metrics count."""

    class Broken:
        def record(self, *args: object) -> bool:
            raise RuntimeError("apiserver on fire")

    metrics = Metrics()
    observe = EngineObserver(
        metrics,
        recorder=Broken(),  # type: ignore[arg-type]
        state_object=lambda s: configmap_ref("x", "y"),
    )
    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        good_run(observe)
    assert logs and all(entry["event"] == "kube_event_failed" for entry in logs)
    assert all(entry["run_id"] == "r1" and entry["schedule"] == "team-a" for entry in logs)
    assert {entry.get("wave") for entry in logs} == {None, 1, 2}
    assert team_a(metrics, "tidal_switch_runs_total", window="night", result="succeeded") == 1


def test_promtool_check_metrics_is_clean(promtool: str) -> None:
    """`promtool check metrics` finds nothing to complain about in the exposition."""
    metrics = Metrics()
    metrics.preset([SCHEDULE])
    observe = EngineObserver(metrics, wall_clock=lambda: FINISHED_AT)
    good_run(observe)
    failed_run(observe)
    metrics.on_request("list", "resourcebindings", 200)
    result = subprocess.run(
        [promtool, "check", "metrics"],
        input=metrics.render(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr).decode()
    assert result.stdout.strip() == b"" and result.stderr.strip() == b""


def test_window_period_follows_the_gaps_between_starts() -> None:
    """A weekday window's period spans the weekend; a skipped date lengthens a daily one."""
    from datetime import UTC, date, datetime

    from tidal.domain.windows import WindowTimes
    from tidal.metrics import window_period_seconds

    times = WindowTimes(
        "Europe/Berlin",
        (("night", "23:00"), ("day", "0 7 * * 1-5")),
        frozenset({date(2026, 12, 25)}),
    )
    wednesday = datetime(2026, 12, 2, 12, tzinfo=UTC)
    saturday = datetime(2026, 12, 5, 12, tzinfo=UTC)
    christmas = datetime(2026, 12, 25, 12, tzinfo=UTC)
    hours = 3600.0
    assert window_period_seconds(times, "night", wednesday) == 24 * hours
    assert window_period_seconds(times, "day", wednesday) == 24 * hours
    assert window_period_seconds(times, "day", saturday) == 72 * hours
    assert window_period_seconds(times, "night", christmas) == 48 * hours
    metrics = Metrics()
    metrics.preset([SCHEDULE])
    metrics.publish_window_times(
        "team-a", WindowTimes("UTC", (("night", "0 23 * * 1-5"), ("day", "07:00"))), saturday
    )
    assert team_a(metrics, "tidal_window_period_seconds", window="night") == 72 * hours
    sunday_seven = datetime(2026, 12, 6, 7, tzinfo=UTC).timestamp()
    assert team_a(metrics, "tidal_next_run_timestamp_seconds", window="day") == sunday_seven
    metrics.preset([SCHEDULE])  # a reload keeps the published period
    assert team_a(metrics, "tidal_window_period_seconds", window="night") == 72 * hours


def test_restore_last_run_publishes_a_persisted_success_never_backwards() -> None:
    """A persisted succeeded run sets last-success; an older one or a failure does not."""
    from types import SimpleNamespace

    metrics = Metrics()
    metrics.preset([SCHEDULE])
    metrics.restore_last_run(
        SimpleNamespace(
            schedule="team-a",
            window="night",
            result="succeeded",
            finished_at="2026-12-02T23:05:00Z",
        )
    )
    newer = team_a(metrics, "tidal_last_success_timestamp_seconds", window="night")
    assert newer == 1796252700.0
    metrics.restore_last_run(
        SimpleNamespace(
            schedule="team-a",
            window="night",
            result="succeeded",
            finished_at="2026-12-01T23:05:00+00:00",
        )
    )
    metrics.restore_last_run(
        SimpleNamespace(
            schedule="team-a", window="day", result="failed", finished_at="2026-12-03T07:05:00Z"
        )
    )
    assert team_a(metrics, "tidal_last_success_timestamp_seconds", window="night") == newer
    assert team_a(metrics, "tidal_last_success_timestamp_seconds", window="day") == 0


def test_queue_metrics_follow_waits_and_leases() -> None:
    """Waiting schedules by reason and since when; a wait that ends is observed once; capacity
    no longer leased drops to 0 rather than keeping its last value."""
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    m = Metrics()
    t0 = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
    gpus = {"cluster-b": {"nvidia.com/gpu": 4.0}}
    m.set_queue({"team-a": t0}, {"team-b": SimpleNamespace(since=t0)}, gpus, t0)
    assert value(m, "tidal_schedules_waiting", reason="slot") == 1
    assert value(m, "tidal_schedules_waiting", reason="capacity") == 1
    assert (
        value(
            m,
            "tidal_schedule_waiting_since_timestamp_seconds",
            schedule="team-b",
            reason="capacity",
        )
        == t0.timestamp()
    )
    assert value(m, "tidal_capacity_leased", cluster="cluster-b", resource="nvidia.com/gpu") == 4
    later = t0 + timedelta(seconds=90)
    m.set_queue({}, {}, {}, later)
    assert value(m, "tidal_schedules_waiting", reason="capacity") == 0
    assert (
        value(
            m,
            "tidal_schedule_waiting_since_timestamp_seconds",
            schedule="team-b",
            reason="capacity",
        )
        == 0
    )
    assert value(m, "tidal_schedule_wait_seconds_sum", reason="capacity") == 90
    assert value(m, "tidal_schedule_wait_seconds_count", reason="slot") == 1
    assert value(m, "tidal_capacity_leased", cluster="cluster-b", resource="nvidia.com/gpu") == 0
