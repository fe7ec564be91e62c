"""Resume after a crash: completed waves are never re-run and the policy is not re-patched;
engine events are logged with the run's bound fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.e2e.switch_helpers import (
    NS,
    TEAM_T1,
    MakeEmulator,
    client_for,
    cluster,
    cpp,
    deployment,
    dynamic_placement,
    load_one,
    namespace,
    schedule_text,
    write_schedule,
)
from tests.engine.crashing import crash_run, wave_starts
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import run_switch

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-r",
    """
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 20s
""",
)


def test_crash_mid_run_resumes_without_redoing_work(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A crash when wave 2 starts resumes at wave 2: no policy patch, no wave-1 touches."""
    emu = make_switch_emulator()
    client = client_for(emu, tmp_path)
    loaded = load_one(write_schedule(tmp_path, SCHEDULE))
    journal = InMemoryJournal()

    crash_run(client, loaded, journal, wave_starts(2))
    state = journal.load("team-r")
    assert state is not None and state.completed_waves == [1] and state.phase == "waves"
    emu.reset_requests()
    with structlog.testing.capture_logs() as logs:
        record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded" and record.run_id == state.run_id
    patched = [r.name for r in emu.request_log() if r.verb == "patch" and not r.dry_run and r.name]
    assert sorted(n for n in patched if n.startswith("web-")) == ["web-2", "web-3"]
    assert patched.count("team-cpp") == 1  # only the Lazy restore at the end
    started = [e for e in logs if e["event"] == "run_started"]
    assert started and started[0]["resumed"] is True
    waves = [e for e in logs if e["event"] == "wave_started"]
    assert [e["wave"] for e in waves] == [2]
    assert all(
        e["run_id"] == state.run_id and e["schedule"] == "team-r" and e["window"] == "night"
        for e in logs
    )


DYN_SCHEDULE = schedule_text(
    "team-rb",
    windows="""
    - name: night
      start: "22:00"
      trigger: rebalance
      policies:
        - kind: ClusterPropagationPolicy
          name: dyn
          patch:
            spec:
              placement:
                clusterAffinity: {clusterNames: [cluster-a, cluster-b]}
""",
    rollout="""
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 20s
""",
)


def test_crash_after_a_rebalance_does_not_trigger_it_again(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Resumed mid-wave, workloads the old rebalancer already rescheduled get no new one."""
    topo = [
        cluster("cluster-a", startup=0.5),
        cluster("cluster-b", startup=0.5),
        namespace(),
        cpp("dyn", "t1", dynamic_placement()),
    ]
    topo += [deployment(f"job-{i}", "t1", 4, cpu="1") for i in range(4)]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    loaded = load_one(write_schedule(tmp_path, DYN_SCHEDULE))
    journal = InMemoryJournal()

    crash_run(
        client,
        loaded,
        journal,
        lambda event: (
            isinstance(event, ev.GatePassed) and event.wave == 1 and event.gate == "scheduled"
        ),
    )
    state = journal.load("team-rb")
    assert state is not None and len(state.waves[0].rebalancers) == 1
    emu.reset_requests()
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded", record.to_json()
    created = [
        r.name
        for r in emu.request_log()
        if r.verb == "create" and r.resource == "workloadrebalancers"
    ]
    assert len(created) == 1
    final = journal.load("team-rb")
    assert final is not None
    assert [len(w.rebalancers) for w in final.waves] == [1, 1]


def test_pre_image_is_journalled_before_the_policy_write(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The pre-image is journalled before the policy write, a wave's intent before its touch."""
    emu = make_switch_emulator(workloads=2)
    client = client_for(emu, tmp_path)
    loaded = load_one(write_schedule(tmp_path, SCHEDULE))

    class Recording(InMemoryJournal):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[bool, int, int]] = []

        def save(self, state: Any) -> None:
            log = emu.request_log()
            policy_writes = sum(
                1
                for r in log
                if r.verb == "patch"
                and not r.dry_run
                and r.resource == "clusterpropagationpolicies"
            )
            touches = sum(1 for r in log if r.verb == "patch" and r.resource == "deployments")
            pre = bool(state.policies and state.policies[0].pre_image is not None)
            self.seen.append((pre, policy_writes, touches))
            super().save(state)

    emu.reset_requests()
    journal = Recording()
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded"
    first_pre = next(i for i, (pre, _, _) in enumerate(journal.seen) if pre)
    assert journal.seen[first_pre][1] == 0  # saved before the policy was patched
    assert journal.seen[-1][2] == 2
    # the wave's intent was saved after the policy write and before the first touch
    assert any(writes == 1 and touches == 0 for _, writes, touches in journal.seen)


def test_an_edit_during_a_run_waits_for_the_next_start(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The schedule is edited (night now 1:1) while wave 2 runs and the replica dies: the
    resume finishes against the version the run started with (night all on cluster-b),
    succeeds without waiting out a timeout, and says the edit waits for the next start."""
    from tests.e2e.switch_helpers import NS, latest, weights_window
    from tidal.daemon.status import edit_pending
    from tidal.engine.snapshot import schedule_hash

    emu = make_switch_emulator()
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE)
    loaded = load_one(path)
    journal = InMemoryJournal()

    crash_run(client, loaded, journal, wave_starts(2))
    started_with = journal.load("team-r")
    assert started_with is not None and started_with.schedule_hash == schedule_hash(loaded)
    edited_text = schedule_text(
        "team-r",
        """
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: 20s
    """,
        windows=weights_window("night", "23:00", {"cluster-b": 1, "cluster-a": 1}),
    )
    assert edited_text != SCHEDULE
    edited = load_one(write_schedule(tmp_path, edited_text))
    assert schedule_hash(edited) != started_with.schedule_hash
    pending = edit_pending(started_with, edited)
    assert pending is not None and pending["runId"] == started_with.run_id
    events: list[Any] = []
    record = run_switch(
        client,
        edited,
        "night",
        clock=SystemClock(),
        journal=journal,
        on_event=events.append,
        resume=started_with,
    )
    assert record.result == "succeeded", record.to_json()
    warnings = [e.message for e in events if isinstance(e, ev.RunWarning)]
    assert any("edited" in m and "next start" in m for m in warnings), warnings
    now = latest(emu)
    for i in range(4):
        assert now.get((f"{NS}/Deployment/web-{i}", "cluster-a"), (0, 0))[0] == 0


def test_a_resume_reports_the_workloads_gone_while_no_run_was_up(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Templates of an unfinished wave deleted or relabelled out of the schedule's selection
    between the crash and the resume are each left out with a warning and a workload_skipped
    event naming why; the run finishes."""
    emu = make_switch_emulator()
    client = client_for(emu, tmp_path)
    loaded = load_one(
        write_schedule(
            tmp_path,
            schedule_text(
                "team-r",
                """
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: 20s
    """,
                workloads=TEAM_T1,
            ),
        )
    )
    journal = InMemoryJournal()
    crash_run(client, loaded, journal, wave_starts(2))
    deployments = client.resource_for("apps/v1", "Deployment")
    client.request("delete", deployments, "DELETE", deployments.path(NS, "web-3"))
    client.request(
        "patch",
        deployments,
        "PATCH",
        deployments.path(NS, "web-2"),
        body={"metadata": {"labels": {"team": "t2"}}},
        content_type="application/merge-patch+json",
    )

    with structlog.testing.capture_logs() as logs:
        record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded", record.to_json()
    skipped = [(e["workload"], e["reason"]) for e in logs if e["event"] == "workload_skipped"]
    assert skipped == [
        (f"{NS}/Deployment/web-2", "not_selected"),
        (f"{NS}/Deployment/web-3", "deleted"),
    ]
    assert any("web-2" in w and "not selected" in w for w in record.warnings)
    assert any("web-3" in w and "template deleted" in w for w in record.warnings)
