"""The Daemon's decisions against the emulator: catch-up once, missed, resume, reload, controls.

The engine is a stand-in passed in (dependency injection); state and Lease are real objects in
the emulator over HTTP; time is a FakeClock.
"""

from __future__ import annotations

import textwrap
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tidal.daemon.app import Daemon, Wiring
from tidal.daemon.reconcile import RunSwitch
from tidal.daemon.state import DaemonOutcome, StateStore
from tidal.domain.clock import FakeClock
from tidal.domain.windows import Controls, Hold
from tidal.engine.journal import RunState
from tidal.engine.states import Phase, RunResult
from tidal.karmada.client import KarmadaClient
from tidal.karmada.state_objects import ensure_namespace
from tidal.metrics import Metrics
from tidal.settings import load_settings

pytestmark = pytest.mark.e2e
NS = "tidal-system"
NIGHT = datetime(2026, 6, 1, 15, tzinfo=UTC)  # 23:00 Asia/Shanghai


def schedule_yaml(name: str, night: str = "23:00", day: str = "07:00", extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: tidal.io/v1alpha1
        kind: TidalSchedule
        metadata:
          name: {name}
        spec:
          timeZone: Asia/Shanghai
          catchUpWindow: 30m
        {extra}  windows:
            - name: night
              start: "{night}"
              policies:
                - kind: ClusterPropagationPolicy
                  name: {name}-cpp
                  patch: {{spec: {{placement: {{clusterAffinity: {{clusterNames: [cluster-b]}}}}}}}}
            - name: day
              start: "{day}"
              policies:
                - kind: ClusterPropagationPolicy
                  name: {name}-cpp
                  patch: {{spec: {{placement: {{clusterAffinity: {{clusterNames: [cluster-a]}}}}}}}}
        """)


@dataclass
class FakeEngine:
    """Stands in for tidal.engine.switch.run_switch: journals a run and returns its record."""

    calls: list[tuple[str, str, str | None, bool]] = field(default_factory=list)
    gate: threading.Event | None = None

    def __call__(
        self,
        client: Any,
        loaded: Any,
        window_name: str,
        *,
        clock: Any,
        journal: Any,
        on_event: Any,
        run_id: str | None = None,
        resume: Any = None,
        budget: Any = None,
        reads: Any = None,
    ) -> Any:
        name = loaded.schedule.name
        self.calls.append((name, window_name, run_id, resume is not None))
        state = resume or RunState(schedule=name, window=window_name, run_id=run_id or "x")
        state.phase = Phase.WAVES
        journal.save(state)
        if self.gate is not None:
            self.gate.wait(5)
        state.phase, state.result = "done", "succeeded"
        journal.save(state)
        return state


@pytest.fixture
def client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    c = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    ensure_namespace(c, NS)
    return c


@pytest.fixture
def sched_dir(tmp_path: Path) -> Path:
    d = tmp_path / "schedules"
    d.mkdir()
    (d / "team-a.yaml").write_text(schedule_yaml("team-a"))
    return d


def make_daemon(
    client: KarmadaClient,
    sched_dir: Path,
    clock: FakeClock,
    engine: RunSwitch,
    identity: str = "a",
    metrics: Metrics | None = None,
) -> Daemon:
    """A leading daemon over `sched_dir` on a fake clock and engine (no watcher thread)."""
    settings = load_settings(schedules=sched_dir, port=0, state_namespace=NS, identity=identity)
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=engine, watch=False, metrics=metrics),
    )
    daemon.directory.reload()
    assert daemon.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    return daemon


def renew(daemon: Daemon) -> None:
    """The fake clock jumped: renew the Lease as the elector thread would have."""
    assert daemon.elector.try_acquire_or_renew()  # type: ignore[union-attr]


def test_catch_up_inside_window_runs_exactly_once_across_restarts(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """Started 10 min after the night start: one catch-up; further passes and a restart: none."""
    clock, engine = FakeClock(NIGHT + timedelta(minutes=10)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "startup")
    daemon.reconciler("team-a", "resync")
    assert engine.calls == [("team-a", "night", "team-a-night-20260601-150000", False)]
    daemon.elector.release()
    again = make_daemon(client, sched_dir, clock, engine, identity="b")
    again.reconciler("team-a", "startup")
    assert len(engine.calls) == 1
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and (handled.window, handled.outcome) == ("night", "succeeded")


def test_start_outside_catch_up_window_is_recorded_missed(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """Started 31 min after the start: nothing runs, a missed window is logged and recorded
    (the schedule ran before: its day start was handled)."""
    from tidal.daemon.state import HandledRecord

    store = StateStore(client, NS)
    day = NIGHT - timedelta(hours=16)
    store.record_handled(
        store.read("team-a"), HandledRecord("day", day, DaemonOutcome.SUCCEEDED, "d", day)
    )
    clock, engine = FakeClock(NIGHT + timedelta(minutes=31)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "startup")
    assert engine.calls == []
    assert any(e["event"] == "window_missed" and e["window"] == "night" for e in logs)
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and handled.outcome == "missed"
    clock.advance(timedelta(hours=8))  # 07:31 local: the day start is 31 min old too
    renew(daemon)
    daemon.reconciler("team-a", "resync")
    assert engine.calls == []


def test_half_finished_run_is_resumed_not_restarted(client: KarmadaClient, sched_dir: Path) -> None:
    """An unfinished run in the state is handed back to the engine with resume=state."""
    store = StateStore(client, NS)
    store.save(RunState(schedule="team-a", window="night", run_id="r-old", phase=Phase.WAVES))
    clock, engine = FakeClock(NIGHT + timedelta(hours=3)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "leadership")
    assert engine.calls == [("team-a", "night", "r-old", True)]
    daemon.reconciler("team-a", "resync")
    assert len(engine.calls) == 1


def test_standby_does_nothing(client: KarmadaClient, sched_dir: Path) -> None:
    """A replica that does not hold the Lease never runs a window."""
    clock, engine = FakeClock(NIGHT), FakeEngine()
    make_daemon(client, sched_dir, clock, engine, identity="a")
    settings = load_settings(schedules=sched_dir, port=0, state_namespace=NS, identity="b")
    standby = Daemon(
        settings, client=client, wiring=Wiring(clock=clock, run_switch=engine, watch=False)
    )
    standby.directory.reload()
    assert not standby.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    standby.reconciler("team-a", "startup")
    assert engine.calls == []


def test_suspend_skip_and_hold_controls(client: KarmadaClient, sched_dir: Path) -> None:
    """Suspended: nothing; skip: tonight recorded skipped; hold day: night start does nothing."""
    store = StateStore(client, NS)
    clock, engine = FakeClock(NIGHT), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    store.update_controls("team-a", lambda c: Controls(suspended=True))
    daemon.reconciler("team-a", "window:night")
    store.update_controls("team-a", lambda c: Controls(skip_start=NIGHT))
    daemon.reconciler("team-a", "window:night")
    assert engine.calls == []
    state = store.read("team-a")
    assert state.handled is not None and state.handled.outcome == "skipped"
    assert state.controls.skip_start is None  # used up
    next_night = NIGHT + timedelta(days=1)
    hold = Hold("day", next_night + timedelta(hours=1), next_night - timedelta(hours=2))
    store.update_controls("team-a", lambda c: Controls(hold=hold))
    clock.set(next_night - timedelta(hours=2))
    renew(daemon)
    daemon.reconciler("team-a", "resync")  # day not handled since the skip: the hold runs it
    assert [c[1] for c in engine.calls] == ["day"]
    clock.set(next_night)
    renew(daemon)
    daemon.reconciler("team-a", "window:night")
    assert [c[1] for c in engine.calls] == ["day"]
    clock.set(hold.until + timedelta(minutes=1))
    renew(daemon)
    daemon.reconciler("team-a", "resync")  # the hold ended: night is due from its end
    assert [c[1] for c in engine.calls] == ["day", "night"]


def test_broken_edit_keeps_last_good_version_and_removed_is_unscheduled(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """A broken file keeps the old schedule (reported with FILE:LINE); a removed one is dropped."""
    clock, engine = FakeClock(NIGHT), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reload()
    assert daemon.scheduler.schedules() == {"team-a"}
    (sched_dir / "team-a.yaml").write_text(schedule_yaml("team-a", night="22:00"))
    daemon.reload()
    assert daemon.directory.get("team-a").schedule.window("night").start == "22:00"
    (sched_dir / "team-a.yaml").write_text("apiVersion: tidal.io/v1alpha1\nkind: [oops\n")
    with capture_logs() as logs:
        daemon.reload()
    assert daemon.directory.get("team-a").schedule.window("night").start == "22:00"
    invalid = [e for e in logs if e["event"] == "schedule_invalid"]
    assert invalid and invalid[0]["kept_last_good"] is True
    assert invalid[0]["error"].startswith(str(sched_dir / "team-a.yaml") + ":")
    (sched_dir / "team-a.yaml").unlink()
    daemon.reload()
    assert daemon.scheduler.schedules() == set()
    assert daemon.directory.get("team-a") is None


def test_window_trigger_only_enqueues_and_worker_runs_once(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """Two fires of one window while its switch runs coalesce: the switch runs once."""
    gate = threading.Event()
    clock, engine = FakeClock(NIGHT), FakeEngine(gate=gate)
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.dispatcher.start()
    try:
        daemon._window_fired("team-a", "night")
        for _ in range(50):
            if daemon.dispatcher.busy():
                break
            threading.Event().wait(0.02)
        daemon._window_fired("team-a", "night")  # returns at once: the job only enqueues
        gate.set()
        assert daemon.dispatcher.wait_idle(5)
    finally:
        daemon.dispatcher.stop(1)
    assert [c[1] for c in engine.calls] == ["night"]


def test_claimed_start_that_never_ran_is_restarted_once(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """A claim without any run state (claimant died at once) is run again, with its run id."""
    from tidal.daemon.state import HandledRecord

    store = StateStore(client, NS)
    store.record_handled(
        store.read("team-a"), HandledRecord("night", NIGHT, DaemonOutcome.STARTED, "team-a-night-x")
    )
    clock, engine = FakeClock(NIGHT + timedelta(minutes=5)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "leadership")
    daemon.reconciler("team-a", "resync")
    assert engine.calls == [("team-a", "night", "team-a-night-x", False)]
    handled = store.read("team-a").handled
    assert handled is not None and (handled.outcome, handled.at) == ("succeeded", NIGHT)


def test_finished_run_with_unrecorded_outcome_is_recorded_not_rerun(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """Crash between the engine's last save and the outcome write: the outcome is recorded."""
    from tidal.daemon.state import HandledRecord

    store = StateStore(client, NS)
    store.record_handled(
        store.read("team-a"), HandledRecord("night", NIGHT, DaemonOutcome.STARTED, "r9")
    )
    store.save(
        RunState(
            schedule="team-a",
            window="night",
            run_id="r9",
            phase=Phase.DONE,
            result=RunResult.ROLLED_BACK,
        )
    )
    clock, engine = FakeClock(NIGHT + timedelta(minutes=5)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "leadership")
    assert engine.calls == []
    handled = store.read("team-a").handled
    assert handled is not None and handled.outcome == "rolledBack"


def test_refused_plan_is_recorded_and_not_retried(client: KarmadaClient, sched_dir: Path) -> None:
    """An engine that refuses the plan: outcome 'refused' logged and stored; no retry loop."""

    def refusing(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("floor would break")

    clock = FakeClock(NIGHT)
    daemon = make_daemon(client, sched_dir, clock, refusing)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "window:night")
        daemon.reconciler("team-a", "resync")
    assert [e["event"] for e in logs].count("switch_not_started") == 1
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and handled.outcome == "refused"


def test_manual_run_lock_and_daemon_exclude_each_other(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """While `tidal switch` holds the schedule's run lock the daemon waits; then it runs."""
    from tidal.daemon.lease import manual_run_lock

    clock, engine = FakeClock(NIGHT), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    manual = manual_run_lock(client, NS, "team-a", "operator", clock)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "window:night")
    assert engine.calls == []
    busy = [e for e in logs if e["event"] == "schedule_busy"]
    assert busy and busy[0]["holder"] == "cli:operator"
    manual.release()
    daemon.reconciler("team-a", "resync")
    assert [c[1] for c in engine.calls] == ["night"]


def test_daemon_takes_over_a_run_lock_left_by_another_replica(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """A run lock still naming a dead daemon replica does not block the new leader."""
    from tidal.daemon.lease import KarmadaLeaseStore, RunLock, run_lock_name

    clock, engine = FakeClock(NIGHT), FakeEngine()
    stale = RunLock(
        KarmadaLeaseStore(client, NS, run_lock_name("team-a")), "team-a", "daemon:dead", clock
    )
    assert stale.try_acquire()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "window:night")
    assert [c[1] for c in engine.calls] == ["night"]


def test_hand_edited_policy_is_reported_as_drift_not_reverted(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """A policy edited after the window in force wrote it: policy_drift logged, no write."""
    from tidal.daemon.state import HandledRecord
    from tidal.engine.journal import PolicyRecord, content_hash
    from tidal.engine.policy_change import comparable
    from tidal.karmada.client import CLUSTER_PROPAGATION_POLICIES as CPP

    spec = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
        "placement": {"clusterAffinity": {"clusterNames": ["cluster-b"]}},
    }
    made = client.request(
        "create",
        CPP,
        "POST",
        CPP.path(),
        body={
            "apiVersion": CPP.api_version,
            "kind": CPP.kind,
            "metadata": {"name": "team-a-cpp"},
            "spec": spec,
        },
    )
    store = StateStore(client, NS)
    store.save(
        RunState(
            schedule="team-a",
            window="night",
            run_id="r1",
            phase=Phase.DONE,
            result=RunResult.SUCCEEDED,
            policies=[
                PolicyRecord(
                    "ClusterPropagationPolicy",
                    "team-a-cpp",
                    post_hash=content_hash(comparable(made["spec"])),
                )
            ],
        )
    )
    store.record_handled(
        store.read("team-a"), HandledRecord("night", NIGHT, DaemonOutcome.SUCCEEDED, "r1")
    )
    clock, engine = FakeClock(NIGHT + timedelta(hours=1)), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "resync")
    assert not [e for e in logs if e["event"] == "policy_drift"]
    made["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["cluster-a"]
    client.request("update", CPP, "PUT", CPP.path(None, "team-a-cpp"), body=made)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "resync")
        daemon.reconciler("team-a", "resync")  # reported once per change
    drift = [e for e in logs if e["event"] == "policy_drift"]
    assert len(drift) == 1 and drift[0]["policy"] == "ClusterPropagationPolicy/team-a-cpp"
    assert engine.calls == []
    got = client.request("get", CPP, "GET", CPP.path(None, "team-a-cpp"))
    assert got["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["cluster-a"]


def test_reload_never_interrupts_a_running_switch(client: KarmadaClient, sched_dir: Path) -> None:
    """Removing a schedule while its switch runs: jobs go, the switch finishes and is recorded."""
    gate = threading.Event()
    clock, engine = FakeClock(NIGHT), FakeEngine(gate=gate)
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reload()
    daemon.dispatcher.start()
    try:
        daemon._window_fired("team-a", "night")
        for _ in range(100):
            if engine.calls:
                break
            threading.Event().wait(0.02)
        (sched_dir / "team-a.yaml").unlink()
        daemon.reload()
        assert daemon.scheduler.schedules() == set()
        gate.set()
        assert daemon.dispatcher.wait_idle(5)
    finally:
        daemon.dispatcher.stop(1)
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and handled.outcome == "succeeded"


@pytest.mark.parametrize(
    ("object_name", "data"),
    [
        ("tidal-run-team-a", {"run": "{not json"}),
        ("tidal-run-team-a", {"run": '{"phase": "waves"}'}),
        ("tidal-sched-team-a", {"handled": "[1, 2"}),
        ("tidal-sched-team-a", {"controls": '{"hold": {"window": "day"}}'}),
    ],
)
def test_corrupt_state_object_is_one_located_error_per_pass(
    client: KarmadaClient, sched_dir: Path, object_name: str, data: dict[str, str]
) -> None:
    """A corrupt state ConfigMap: each pass logs one error naming the object (no traceback),
    counts it, marks the schedule blocked, and runs nothing; `tidal status` shows the block."""
    from tidal.daemon.status import build_status
    from tidal.karmada.state_objects import create_configmap
    from tidal.loading import load_schedules

    create_configmap(
        client,
        NS,
        object_name,
        data,
        {"app.kubernetes.io/managed-by": "tidal", "tidal.io/schedule": "team-a"},
    )
    clock, engine = FakeClock(NIGHT), FakeEngine()
    metrics = Metrics()
    daemon = make_daemon(client, sched_dir, clock, engine, metrics=metrics)
    for _ in range(2):
        with capture_logs() as logs:
            daemon.reconciler("team-a", "resync")
        errors = [e for e in logs if e["log_level"] == "error"]
        assert [e["event"] for e in errors] == ["state_corrupt"]
        assert errors[0]["object"] == f"{NS}/{object_name}"
        assert "exc_info" not in errors[0]
    assert engine.calls == []
    value = metrics.registry.get_sample_value
    assert value("tidal_state_corrupt_total", {"schedule": "team-a"}) == 2
    assert value("tidal_schedule_blocked", {"schedule": "team-a", "reason": "state_corrupt"}) == 1
    report = build_status(
        client,
        NS,
        daemon.settings.leader_election.lease_name,
        load_schedules([sched_dir]).schedules,
        NIGHT,
    )
    blocked = report["schedules"][0]["blocked"]
    assert blocked["reason"] == "state_corrupt" and object_name in blocked["message"]
    assert blocked["repair"] == f"kubectl --namespace {NS} delete configmap {object_name}"


def test_a_new_schedule_first_start_is_not_counted_missed(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """A start that predates a new schedule is recorded, not counted as missed; the next one
    that tidal did miss is counted."""

    clock, engine = FakeClock(NIGHT + timedelta(minutes=31)), FakeEngine()
    settings = load_settings(schedules=sched_dir, port=0, state_namespace=NS, identity="a")
    metrics = Metrics()
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=engine, metrics=metrics, watch=False),
    )
    daemon.reload()
    assert daemon.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    daemon.reconciler("team-a", "startup")
    missed = metrics.registry.get_sample_value
    labels = {"schedule": "team-a", "window": "night"}
    assert missed("tidal_windows_missed_total", labels) == 0
    clock.advance(timedelta(hours=8))
    renew(daemon)
    daemon.reconciler("team-a", "resync")
    assert missed("tidal_windows_missed_total", {**labels, "window": "day"}) == 1
    assert engine.calls == []


def test_refused_start_and_worker_error_are_counted(client: KarmadaClient, sched_dir: Path) -> None:
    """A start whose switch refuses to begin is counted by reason; a pass that raises an API
    error is counted and logged as one line with its class, no traceback."""
    from tidal.karmada.errors import Unavailable

    def refusing(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("patch: spec is null")

    clock = FakeClock(NIGHT)
    settings = load_settings(schedules=sched_dir, port=0, state_namespace=NS, identity="a")
    metrics = Metrics()
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=refusing, metrics=metrics, watch=False),
    )
    daemon.directory.reload()
    metrics.preset(daemon.directory.catalog.schedules.values())
    assert daemon.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    daemon.reconciler("team-a", "window:night")
    value = metrics.registry.get_sample_value
    assert (
        value(
            "tidal_switches_refused_total",
            {"schedule": "team-a", "window": "night", "reason": "internal"},
        )
        == 1
    )
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and handled.outcome == "refused"
    assert handled.reason == "internal: ValueError: patch: spec is null"

    def broken(name: str, reason: str) -> None:
        raise Unavailable("GET configmaps: 503 Service Unavailable", code=503)

    daemon.dispatcher.work = broken
    with capture_logs() as logs:
        daemon.dispatcher.start()
        daemon.dispatcher.submit("team-a", "resync")
        assert daemon.dispatcher.wait_idle(5)
    daemon.dispatcher.stop(1)
    errors = [e for e in logs if e["event"] == "switch_worker_error"]
    assert errors and all(e["error_class"] == "Unavailable" for e in errors)
    assert not any("exc_info" in e for e in errors)
    assert value("tidal_switch_worker_errors_total", {"schedule": "team-a"}) == len(errors)


def test_policy_drift_is_a_metric(client: KarmadaClient, sched_dir: Path) -> None:
    """The drift the reconciler finds is published as tidal_policy_drift (the docs' promise)."""

    metrics = Metrics()
    metrics.preset([])
    metrics.set_policy_drift("team-a", 2)
    assert metrics.registry.get_sample_value("tidal_policy_drift", {"schedule": "team-a"}) == 2


def test_a_refused_switch_is_located_counted_and_gauged(
    client: KarmadaClient, sched_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window whose policy write the apiserver refuses: the daemon logs one located line
    per refusal (FILE:LINE:COL at the patch field) with a reason class, not 'ValueError', and
    moves tidal_switches_refused_total and the last-refusal gauge the alert reads."""
    from tidal.engine.write_check import PolicyWritesRefused, WriteProblem

    def refusing(*args: Any, **kwargs: Any) -> Any:
        raise PolicyWritesRefused(
            "night",
            [
                WriteProblem(
                    0,
                    False,
                    "ClusterPropagationPolicy/team-a-cpp",
                    ("spec.placement.clusterAffinity",),
                    "admission webhook denied the request: cluster-b is cordoned",
                )
            ],
        )

    # A valid patch (the loader's schema check passes it) that the server refuses all the same
    metrics = Metrics()
    clock = FakeClock(NIGHT)
    daemon = make_daemon(client, sched_dir, clock, refusing, metrics=metrics)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "window:night")
    (event,) = [e for e in logs if e["event"] == "switch_not_started"]
    assert event["reason"] == "policy_invalid"
    (line,) = event["errors"]
    assert line.startswith(
        f"{sched_dir / 'team-a.yaml'}:14:38: spec.windows[0].policies[0]"
        ".patch.spec.placement.clusterAffinity: "
    )
    labels = {"schedule": "team-a", "window": "night", "reason": "policy_invalid"}
    assert metrics.registry.get_sample_value("tidal_switches_refused_total", labels) == 1
    assert (
        metrics.registry.get_sample_value("tidal_last_switch_refused_timestamp_seconds", labels)
        == NIGHT.timestamp()
    )


@pytest.mark.parametrize("late", [timedelta(minutes=10), timedelta(minutes=45)])
def test_a_window_run_by_hand_is_not_missed_nor_run_again(
    client: KarmadaClient, sched_dir: Path, late: timedelta
) -> None:
    """`tidal switch --window night` ran (and finished) after the night start, before the
    daemon came up: the daemon records that run's outcome for the start, neither 'missed'
    (no TidalWindowMissed) nor a second run, and publishes its success to the metrics."""

    manual = RunState(schedule="team-a", window="night", run_id="20260601-150500-abcd")
    manual.phase, manual.result = Phase.DONE, RunResult.SUCCEEDED
    manual.started_at = (NIGHT + timedelta(minutes=5)).isoformat()
    manual.finished_at = (NIGHT + timedelta(minutes=8)).isoformat()
    StateStore(client, NS).save(manual)
    clock, engine, metrics = FakeClock(NIGHT + late), FakeEngine(), Metrics()
    daemon = make_daemon(client, sched_dir, clock, engine, metrics=metrics)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "startup")
    assert engine.calls == []
    assert not any(e["event"] == "window_missed" for e in logs)
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None
    assert (handled.outcome, handled.run_id) == ("succeeded", manual.run_id)
    labels = {"schedule": "team-a", "window": "night"}
    assert not metrics.registry.get_sample_value("tidal_windows_missed_total", labels)
    assert (
        metrics.registry.get_sample_value("tidal_last_success_timestamp_seconds", labels)
        == (NIGHT + timedelta(minutes=8)).timestamp()
    )


def test_a_rerun_after_a_hold_expired_gets_its_own_run_id(
    client: KarmadaClient, sched_dir: Path
) -> None:
    """Night ran at its start; a hold put day in force for two hours; when the hold ends the
    night start runs again, under a new run id (the first run's record is not overwritten)."""
    store = StateStore(client, NS)
    clock, engine = FakeClock(NIGHT), FakeEngine()
    daemon = make_daemon(client, sched_dir, clock, engine)
    daemon.reconciler("team-a", "window:night")
    hold = Hold("day", NIGHT + timedelta(hours=3), NIGHT + timedelta(hours=1))
    store.update_controls("team-a", lambda c: Controls(hold=hold))
    clock.set(NIGHT + timedelta(hours=1))
    renew(daemon)
    daemon.reconciler("team-a", "resync")
    clock.set(hold.until + timedelta(seconds=10))
    renew(daemon)
    daemon.reconciler("team-a", "resync")
    assert [c[1] for c in engine.calls] == ["night", "day", "night"]
    ids = [c[2] for c in engine.calls]
    assert len(set(ids)) == 3, ids


def test_a_new_schedules_first_start_is_not_missed(client: KarmadaClient, sched_dir: Path) -> None:
    """A schedule tidal never managed, loaded two hours after its last start: that start is
    recorded as before tidal managed it, not missed (no TidalWindowMissed on day one); the
    next start runs."""

    clock, engine, metrics = FakeClock(NIGHT + timedelta(hours=2)), FakeEngine(), Metrics()
    daemon = make_daemon(client, sched_dir, clock, engine, metrics=metrics)
    with capture_logs() as logs:
        daemon.reconciler("team-a", "startup")
    assert engine.calls == []
    assert not any(e["event"] == "window_missed" for e in logs)
    assert any(e["event"] == "window_before_first_run" for e in logs)
    labels = {"schedule": "team-a", "window": "night"}
    assert not metrics.registry.get_sample_value("tidal_windows_missed_total", labels)
    handled = StateStore(client, NS).read("team-a").handled
    assert handled is not None and handled.outcome == "beforeFirstRun"
    clock.set(NIGHT + timedelta(hours=8))  # the day start (07:00 local)
    renew(daemon)
    daemon.reconciler("team-a", "window:day")
    assert [c[1] for c in engine.calls] == ["day"]
