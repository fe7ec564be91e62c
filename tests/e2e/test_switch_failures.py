"""Failure paths over HTTP: a wave that cannot converge halts at waveTimeout or rolls back,
a template deleted mid-switch is left out, 409/429 are retried, a second writer fences out."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    NIGHT_TO_B,
    NS,
    MakeEmulator,
    assert_back_to_day,
    client_for,
    cpp,
    deployment,
    latest,
    load_one,
    schedule_text,
    static_team,
    switch,
    weights_window,
    write_schedule,
    writes,
)
from tidal.engine import events as ev
from tidal.engine.journal import FencedOut, InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.karmada import policies
from tidal.karmada.client import CLUSTERS, KarmadaClient
from tidal.karmada.policies import MERGE_PATCH
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e

FLOOR_B = """
floors:
  - clusters: [cluster-b]
    minReadyReplicas: 1
"""
DAY_WINDOW = weights_window("day", "07:00", {"cluster-a": 4, "cluster-b": 1})


def _schedule(
    tmp: Path,
    *,
    timeout: str = "20s",
    on_failure: str = "halt",
    floors: str = FLOOR_B,
    windows: str = NIGHT_TO_B,
) -> Path:
    rollout = (
        f"waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: {timeout}\n"
        f"onFailure: {on_failure}\n{textwrap.dedent(floors).strip()}"
    )
    return write_schedule(tmp, schedule_text("team-f", rollout, windows=windows))


def _emulator(
    make_switch_emulator: MakeEmulator, *, workloads: int = 4, b_cpu: str = "1000"
) -> Emulator:
    return make_switch_emulator(workloads=workloads, cpu="1", b_cpu=b_cpu)


def test_wave_that_cannot_fit_halts_at_timeout(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Pods pending in a full cluster fail wave 1 at waveTimeout; wave 2 never starts."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    events: list[Any] = []
    record = switch(client, _schedule(tmp_path, timeout="2s"), "night", events=events)
    assert record.result == "failed"
    assert [(w.index, w.result) for w in record.waves] == [(1, "failed")]
    assert "waveTimeout" in record.waves[0].reason
    failed = [e for e in events if isinstance(e, ev.WaveFinished)]
    assert [(e.wave, e.failure) for e in failed] == [(1, "timeout")]
    now = latest(emu)
    for name in ("web-2", "web-3"):  # wave 2: untouched
        assert now[(f"{NS}/Deployment/{name}", "cluster-b")][0] == 1
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"].get("activationPreference") == "Lazy"  # halt leaves things as they are


def test_rollback_returns_to_the_day_distribution(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """With onFailure rollback the policy and the switched wave go back to 80/20."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    t0 = emu.clock.now()
    record = switch(client, _schedule(tmp_path, timeout="2s", on_failure="rollback"), "night")
    assert record.result == "rolledBack", record.to_json()
    assert record.waves[0].result == "failed"
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"]["placement"] == DAY
    assert "activationPreference" not in policy["spec"]
    assert_back_to_day(emu)
    assert all(
        s["ready"] >= 1 for s in emu.timeline() if s["t"] >= t0 and s["cluster"] == "cluster-b"
    )


def test_rollback_leaves_no_window_marks_of_the_rolled_back_run(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """After a rollback the policy no longer claims to be the rolled-back window's (no stale
    tidal.io/window or tidal.io/run), so status and the next run see it as it was."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    record = switch(client, _schedule(tmp_path, timeout="2s", on_failure="rollback"), "night")
    assert record.result == "rolledBack", record.to_json()
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    notes = policy["metadata"].get("annotations") or {}
    assert "tidal.io/window" not in notes and "tidal.io/run" not in notes, notes


def _switch_changing_at_wave_1(
    client: KarmadaClient, tmp: Path, change: Callable[[], Any]
) -> tuple[RunRecord, list[Any]]:
    """The night switch, `change` made as wave 1 starts; its record and every event."""
    events: list[Any] = []

    def on_event(event: Any) -> None:
        events.append(event)
        if isinstance(event, ev.WaveStarted) and event.wave == 1:
            change()

    return switch(client, _schedule(tmp), "night", on_event=on_event), events


def test_template_deleted_mid_switch_is_reported(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A template deleted during wave 1 is left out with a warning; the others switch."""
    emu = _emulator(make_switch_emulator, workloads=6)
    client = client_for(emu, tmp_path)
    deployments = client.resource_for("apps/v1", "Deployment")
    record, events = _switch_changing_at_wave_1(
        client,
        tmp_path,
        lambda: client.request("delete", deployments, "DELETE", deployments.path(NS, "web-5")),
    )
    assert record.result == "succeeded", record.to_json()
    assert any("web-5" in w for w in record.warnings)
    skipped = [e for e in events if isinstance(e, ev.WorkloadSkipped)]
    assert [(e.workload, e.reason) for e in skipped] == [(f"{NS}/Deployment/web-5", "deleted")]
    now = latest(emu)
    for i in range(5):
        assert now[(f"{NS}/Deployment/web-{i}", "cluster-b")] == (5, 5)


def test_template_relabelled_out_of_its_policy_mid_switch_is_left_out(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A template of wave 3 relabelled out of its policy's resourceSelectors while wave 1
    runs keeps its claim but no longer follows the policy: its wave's touch finds the new
    labels and leaves it out with a warning (instead of waiting for a move that never comes
    until waveTimeout); the others switch."""
    emu = _emulator(make_switch_emulator, workloads=6)
    client = client_for(emu, tmp_path)
    deployments = client.resource_for("apps/v1", "Deployment")
    record, events = _switch_changing_at_wave_1(
        client,
        tmp_path,
        lambda: client.request(
            "patch",
            deployments,
            "PATCH",
            deployments.path(NS, "web-5"),
            body={"metadata": {"labels": {"team": "t9"}}},
            content_type="application/merge-patch+json",
        ),
    )
    assert record.result == "succeeded", record.to_json()
    skipped = [e for e in events if isinstance(e, ev.WorkloadSkipped)]
    assert [(e.workload, e.reason, e.wave) for e in skipped] == [
        (f"{NS}/Deployment/web-5", "unmatched", 3)
    ]
    assert any("web-5" in w for w in record.warnings)
    assert max(e.duration_seconds for e in events if isinstance(e, ev.WaveFinished)) < 10
    now = latest(emu)
    assert now[(f"{NS}/Deployment/web-5", "cluster-a")][0] == 4
    for i in range(5):
        assert now[(f"{NS}/Deployment/web-{i}", "cluster-b")] == (5, 5)


def test_conflicts_and_throttling_are_retried(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Injected 409s on the policy patch and 429s on touches are retried; the switch succeeds."""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    emu.faults.inject(type="conflict", verb="patch", resource="clusterpropagationpolicies", count=2)
    emu.faults.inject(type="throttle", verb="patch", resource="deployments", count=3, retry_after=1)
    emu.faults.inject(type="error", verb="list", resource="resourcebindings", count=1)
    record = switch(client, _schedule(tmp_path), "night")
    assert record.result == "succeeded", record.to_json()
    codes = {(r.verb, r.resource, r.code) for r in emu.request_log()}
    assert ("patch", "clusterpropagationpolicies", 409) in codes
    assert ("patch", "deployments", 429) in codes


def test_second_writer_fences_the_engine_out(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """When another writer saves the run state, the engine stops before its next write."""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            journal.steal("team-f")
            emu.reset_requests()

    with pytest.raises(FencedOut):
        switch(client, _schedule(tmp_path), "night", journal=journal, on_event=on_event)
    assert writes(emu) == []


def _fenced_reasons(tmp_path: Path, fence: BaseException) -> tuple[list[Any], list[str]]:
    """A daemon pass whose switch raises `fence`: the reasons its fenced_out logs give, and
    what it reported as fenced."""
    from structlog.testing import capture_logs

    from tidal.daemon.reconcile import Reconciler

    def raising(*args: Any, **kwargs: Any) -> None:
        raise fence

    fenced: list[str] = []
    loaded = load_one(_schedule(tmp_path))
    reconciler = Reconciler(
        client=None,  # type: ignore[arg-type]
        state=None,  # type: ignore[arg-type]
        run_switch=raising,  # type: ignore[arg-type]
        clock=None,  # type: ignore[arg-type]
        get_schedule=lambda name: loaded,
        is_leader=lambda: True,
        on_event=lambda e: None,
        on_fenced=fenced.append,
    )
    reconciler._pass = raising  # type: ignore[method-assign]
    with capture_logs() as logs:
        reconciler("team-f", "resync")
    return [e.get("reason") for e in logs if e["event"] == "fenced_out"], fenced


def test_a_replica_that_lost_its_own_lease_is_not_told_of_another_writer(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The guard refuses a save because this replica's lease lapsed: the engine stops, and
    the reason says so (no other writer is implied); the reconciler logs lease_lost."""

    from tidal.karmada.errors import Conflict

    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    lapsed = {"now": False}
    real_save = journal.save

    def guarded_save(state: Any) -> None:
        if lapsed["now"]:
            raise Conflict(
                "save run state: this replica is not the leader", code=409, reason="NotLeader"
            )
        real_save(state)

    journal.save = guarded_save  # type: ignore[method-assign]

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1:
            lapsed["now"] = True

    with pytest.raises(FencedOut) as caught:
        switch(client, _schedule(tmp_path), "night", journal=journal, on_event=on_event)
    assert "another writer" not in str(caught.value)
    assert "no longer holds the lease" in str(caught.value)

    reasons, fenced = _fenced_reasons(tmp_path, caught.value)
    assert reasons == ["lease_lost"] and fenced


def test_a_fence_from_a_lost_lease_is_logged_as_lease_lost(tmp_path: Path) -> None:
    """A FencedOut raised for a LeaseLost (an acting write refused after the lease lapsed)
    is reported as lease_lost, not another writer."""

    from tidal.karmada.errors import LeaseLost

    try:
        try:
            raise LeaseLost("the Lease expires in 0.2s", verb="patch", resource="deployments")
        except LeaseLost as lost:
            raise FencedOut("run state of team-f not saved") from lost
    except FencedOut as exc:
        fence = exc

    reasons, _ = _fenced_reasons(tmp_path, fence)
    assert reasons == ["lease_lost"]


def test_dropped_watches_and_gone_are_survived(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Watches cut mid-wave (history compacted too) are resumed with a new watch; the switch
    still succeeds. (How many cuts land depends on how long the run lasts, so the test asks
    for at least one, not a fixed number.)"""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    faults: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and event.wave == 1:
            faults.append(
                emu.faults.inject(
                    type="drop-watch",
                    resource="resourcebindings",
                    count=6,
                    seconds=0.05,
                    compact=True,
                )
            )

    emu.reset_requests()
    record = switch(client, _schedule(tmp_path), "night", on_event=on_event)
    assert record.result == "succeeded", record.to_json()
    (fault,) = faults
    assert fault.fired >= 1  # a watch was cut while the run went on
    by = emu.requests()["by"]
    assert by.get("watch resourcebindings", 0) >= 2  # the run's watch, then again after a cut


def test_floor_breach_anywhere_fails_the_wave_at_once(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A later wave's workload scaled up mid-switch breaks a floor: the running wave fails."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    deployments = client.resource_for("apps/v1", "Deployment")
    path = _schedule(tmp_path, floors="floors: [{minAvailablePercent: 20}]")

    def on_event(event: Any) -> None:
        events.append(event)
        if isinstance(event, ev.WaveStarted) and event.wave == 1:
            client.request(
                "patch",
                deployments,
                "PATCH",
                deployments.path(NS, "web-3"),
                body={"spec": {"replicas": 50}},
                content_type="application/merge-patch+json",
            )

    events: list[Any] = []
    record = switch(client, path, "night", on_event=on_event)
    assert record.result == "failed", record.to_json()
    assert [(w.index, w.result) for w in record.waves] == [(1, "failed")]
    breaches = [e for e in events if isinstance(e, ev.FloorBreached)]
    assert breaches and breaches[0].workload == f"{NS}/Deployment/web-3"
    finished = [e for e in events if isinstance(e, ev.WaveFinished)]
    assert finished[0].failure == "floor_breach"


def test_rerun_after_a_halt_finishes_and_restores_activation(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Re-running a halted window after a fix completes it and removes the added Lazy."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    path = _schedule(tmp_path, timeout="2s")
    first = switch(client, path, "night", journal=journal)
    assert first.result == "failed"
    body = {
        "status": {
            "resourceSummary": {"allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "1000"}}
        }
    }
    client.request(
        "patch",
        CLUSTERS,
        "PATCH",
        CLUSTERS.path(name="cluster-b", subresource="status"),
        body=body,
        content_type=MERGE_PATCH,
    )
    second = switch(client, _schedule(tmp_path, timeout="20s"), "night", journal=journal)
    assert second.result == "succeeded", second.to_json()
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert "activationPreference" not in policy["spec"]
    now = latest(emu)
    for i in range(4):
        assert now[(f"{NS}/Deployment/web-{i}", "cluster-b")][0] == 5


def test_next_window_after_a_halt_restores_activation(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A halted night leaves its Lazy on the policy; the day window that follows removes it."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    windows = NIGHT_TO_B + DAY_WINDOW
    path = _schedule(tmp_path, timeout="2s", floors="", windows=windows)
    night = switch(client, path, "night", journal=journal)
    assert night.result == "failed"
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"]["activationPreference"] == "Lazy"
    path = _schedule(tmp_path, timeout="20s", floors="", windows=windows)
    day = switch(client, path, "day", journal=journal)
    assert day.result == "succeeded", day.to_json()
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"]["placement"] == DAY
    assert "activationPreference" not in policy["spec"]


def _lazy_marks(client: Any, name: str = "team-cpp") -> tuple[Any, set[str]]:
    policy = policies.get_policy(client, "ClusterPropagationPolicy", name, None)
    notes = policy["metadata"].get("annotations") or {}
    return policy["spec"].get("activationPreference"), {k for k in notes if "lazy" in k}


def test_lazy_left_by_a_forgotten_run_is_restored(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A halted run's Lazy is marked on the policy, so a later run with no journal of it
    still restores the original activationPreference and removes the marks."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    first = switch(client, _schedule(tmp_path, timeout="2s"), "night", journal=InMemoryJournal())
    assert first.result == "failed"
    assert _lazy_marks(client) == (
        "Lazy",
        {"tidal.io/lazy-added-by", "tidal.io/activation-before-lazy"},
    )
    body = {
        "status": {
            "resourceSummary": {"allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "1000"}}
        }
    }
    client.request(
        "patch",
        CLUSTERS,
        "PATCH",
        CLUSTERS.path(name="cluster-b", subresource="status"),
        body=body,
        content_type=MERGE_PATCH,
    )
    second = switch(client, _schedule(tmp_path, timeout="20s"), "night", journal=InMemoryJournal())
    assert second.result == "succeeded", second.to_json()
    assert _lazy_marks(client) == (None, set())


def test_window_in_force_still_clears_a_leftover_lazy(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A window already in force is not a no-op while the policy carries a Lazy tidal added:
    the run puts the original activationPreference back."""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    path = _schedule(tmp_path)
    assert switch(client, path, "night").result == "succeeded"
    leftover = {
        "metadata": {
            "annotations": {
                "tidal.io/lazy-added-by": "an-old-run",
                "tidal.io/activation-before-lazy": "",
            }
        },
        "spec": {"activationPreference": "Lazy"},
    }
    policies.patch_policy(client, "ClusterPropagationPolicy", "team-cpp", None, leftover)
    again = switch(client, path, "night")
    assert again.result == "succeeded" and not again.noop, again.to_json()
    assert _lazy_marks(client) == (None, set())
    assert switch(client, path, "night").noop


def test_a_window_that_does_not_name_a_halted_policy_leaves_its_lazy(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Lifting a halted run's Lazy would release its unmoved templates at once: only a window
    that names that policy (and paces its waves) puts the original value back."""
    topology = (
        static_team(cpu="1", b_cpu="6")
        + [cpp("other-cpp", "t2", DAY)]
        + [deployment(f"api-{i}", "t2", 2) for i in range(2)]
    )
    emu = make_switch_emulator(topology)
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    windows = NIGHT_TO_B + weights_window("noon", "12:00", {"cluster-a": 1}, policy="other-cpp")
    night = switch(
        client,
        _schedule(tmp_path, timeout="2s", floors="", windows=windows),
        "night",
        journal=journal,
    )
    assert night.result == "failed"
    noon = switch(client, _schedule(tmp_path, floors="", windows=windows), "noon", journal=journal)
    assert noon.result == "succeeded", noon.to_json()
    assert _lazy_marks(client) == (
        "Lazy",
        {"tidal.io/lazy-added-by", "tidal.io/activation-before-lazy"},
    )
    assert _lazy_marks(client, "other-cpp") == (None, set())


def test_an_api_error_mid_wave_fails_that_wave(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A touch that keeps failing with 500 fails the run and the wave in flight (api_error),
    so the wave-failure metric and alert see it like any other failed wave."""
    emu = _emulator(make_switch_emulator)
    client = client_for(emu, tmp_path)
    emu.faults.inject(type="error", verb="patch", resource="deployments", count=1000)
    events: list[Any] = []
    record = switch(client, _schedule(tmp_path), "night", events=events)
    assert record.result == "failed" and record.reason.startswith("API error"), record.to_json()
    assert [(w.index, w.result) for w in record.waves] == [(1, "failed")]
    finished = [(e.wave, e.result, e.failure) for e in events if isinstance(e, ev.WaveFinished)]
    assert finished == [(1, "failed", "api_error")]
