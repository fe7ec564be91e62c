"""Leftovers on each --karmada target (issue 25): the daemon SIGKILLed mid-surge, its schedule
file then removed (a Git revert), and a new daemon started on what is left: it finds the
crashed run's OverridePolicies by their owner marks, although no schedule names them, and
deletes them once every workload stays ready without them; each member then runs what its
binding assigns (the spec), nothing pinned. And a `tidal switch` SIGKILLed mid-surge with no
daemon at all: status names what it left, `tidal cleanup` sweeps it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import STATE_NS, log_events, stop_all, wait_for
from tests.e2e.outside import start_tidal, status_of, tidal
from tests.e2e.targets import Target
from tests.e2e.test_targets_daemon import day_team, due_schedule, start_replica
from tidal.karmada.overrides import list_overrides

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_crashed_surge_of_a_removed_schedule_is_swept(target: Target, tmp_path: Path) -> None:
    """SIGKILL while the overrides stand, schedule file removed, daemon restarted: no override
    left, each workload's members add up to its spec, the sweep logged per override."""
    replicas = day_team(target)
    schedules = tmp_path / "schedules"
    due_schedule(schedules, target.patience)
    client = target.client()
    procs = {"a": start_replica(target, tmp_path, "a", schedules)}
    try:
        wait_for(
            lambda: bool(list_overrides(client, schedule="team-1005")),
            target.patience,
            "the first wave's overrides",
        )
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(10)
        standing = {v.name for v in list_overrides(client, schedule="team-1005")}
        (schedules / "team-1005.yaml").unlink()
        procs["b"] = start_replica(target, tmp_path, "b", schedules, sweep_seconds=2.0)
        wait_for(
            lambda: not list_overrides(client, schedule="team-1005"),
            target.patience * 2,
            "the sweep of the overrides",
        )
    finally:
        stop_all(procs.values())
    swept = {
        e["object"].rsplit("/", 1)[-1]
        for e in log_events(tmp_path / "b.log")
        if e.get("event") == "leftover_swept" and e.get("kind") == "override"
    }
    assert swept == standing

    def served(now: Any) -> bool:
        return all(
            sum(now.get((w, c), (0, 0))[0] for c in ("cluster-a", "cluster-b")) == n
            for w, n in replicas.items()
        )

    target.wait_for(served, "every workload's members adding up to its spec", 60)


def test_a_killed_switch_leaves_overrides_that_status_names_and_cleanup_sweeps(
    target: Target, tmp_path: Path
) -> None:
    """`tidal switch` SIGKILLed mid-surge, never restarted, its schedule kept: status names the
    standing overrides (never a clean `[]`), `cleanup --dry-run` writes nothing, `cleanup`
    deletes exactly those, and each workload's members then add up to its spec."""
    replicas = day_team(target)
    schedules = tmp_path / "schedules"
    due_schedule(schedules, target.patience)
    client = target.client()
    env = {
        "TIDAL_STATE_NAMESPACE": STATE_NS,
        "TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS": "3",
        "TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS": "2",
        "TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS": "0.5",
        "TIDAL_KARMADA__POLICY_SETTLE_SECONDS": str(target.policy_settle),
    }
    proc = start_tidal(
        tmp_path / "switch.log",
        "switch",
        schedules / "team-1005.yaml",
        "--window",
        "night",
        "--kubeconfig",
        target.kubeconfig,
        "--yes",
        env=env,
    )
    try:
        wait_for(
            lambda: bool(list_overrides(client, schedule="team-1005")),
            target.patience,
            "the first wave's overrides",
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    standing = {
        f"{v.kind}/{v.namespace}/{v.name}" for v in list_overrides(client, schedule="team-1005")
    }

    def shown() -> bool:  # once the killed switch's run lock has expired
        entry = status_of(schedules, target.kubeconfig, "team-1005", env=env)
        return {x["object"] for x in entry["leftovers"] if x["kind"] == "override"} == standing

    wait_for(shown, 60, "status to name the overrides left")
    dry = tidal("cleanup", "--dry-run", "--kubeconfig", target.kubeconfig, "-o", "json", env=env)
    assert {
        a["object"] for a in json.loads(dry.stdout)["actions"] if a["result"] == "would sweep"
    } == standing, dry.stdout + dry.stderr
    assert {
        f"{v.kind}/{v.namespace}/{v.name}" for v in list_overrides(client, schedule="team-1005")
    } == standing

    def swept() -> bool:  # cleanup keeps an override while lifting it would breach a floor
        done = tidal("cleanup", "--kubeconfig", target.kubeconfig, "-o", "json", env=env)
        assert done.returncode in (0, 2), done.stdout + done.stderr
        return not list_overrides(client, schedule="team-1005")

    wait_for(swept, target.patience * 2, "cleanup to delete the overrides")

    def served(now: Any) -> bool:
        return all(
            sum(now.get((w, c), (0, 0))[0] for c in ("cluster-a", "cluster-b")) == n
            for w, n in replicas.items()
        )

    target.wait_for(served, "every workload's members adding up to its spec", 60)
