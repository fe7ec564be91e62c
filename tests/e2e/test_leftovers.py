"""Nothing tidal writes outlives its purpose (issue 25, defects 1 and 2): a `tidal switch`
SIGKILLed mid-surge or mid-bridge and never restarted leaves overrides or a Duplicated bridge
placement; `tidal status` names them (count, age, owner), `tidal cleanup` sweeps them, and a
daemon started after the schedule file is gone sweeps them too, with a metric."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    daemon_metrics,
    log_events,
    start_daemon,
    stop_all,
    wait_for,
)
from tests.e2e.outside import start_tidal, status_of, tidal
from tests.e2e.surge_helpers import FULL_AVAILABILITY, slow_startup, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for
from tidal.karmada import policies
from tidal.karmada.names import BRIDGE_PLACEMENT
from tidal.karmada.overrides import list_overrides

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SHORT_LOCK = {
    "TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS": "3",
    "TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS": "2",
    "TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS": "0.5",
    "TIDAL_STATE_NAMESPACE": "tidal-system",
}


def _slow_b(client: Any) -> None:
    """From now on cluster-b's pods take 10 minutes (30 s real) to start: a surge waits."""
    slow_startup(client, "cluster-b", 600)


def _killed_mid_switch(emu: Any, tmp: Path, path: Path, reached: Any, what: str) -> Path:
    """`tidal switch` started, SIGKILLed once `reached()`; the kubeconfig."""
    kubeconfig: Path = emu.write_kubeconfig(tmp / "kc")
    proc = start_tidal(
        tmp / "switch.log",
        "switch",
        path,
        "--window",
        "night",
        "--kubeconfig",
        kubeconfig,
        "--yes",
        env=SHORT_LOCK,
    )
    try:
        wait_for(reached, 60, what)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    return kubeconfig


def _surged(client: Any) -> bool:
    return bool(list_overrides(client, schedule="team-s"))


def _cpp(client: Any) -> dict[str, Any]:
    found: dict[str, Any] = policies.get_policy(
        client, "ClusterPropagationPolicy", "team-cpp", None
    )
    return found


def test_overrides_of_a_killed_switch_are_shown_and_swept_by_tidal_cleanup(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Killed while the surged replicas start: status shows the overrides (lastRun
    overridesLeft and leftovers, with owner and age), `cleanup --dry-run` writes nothing,
    `cleanup` deletes them (status then shows only the temporary Lazy), and a second cleanup
    finds none to remove."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    _slow_b(client)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    kubeconfig = _killed_mid_switch(
        emu, tmp_path, path, lambda: _surged(client), "the surge overrides"
    )
    standing = {
        f"{v.kind}/{v.namespace}/{v.name}" for v in list_overrides(client, schedule="team-s")
    }
    run_id = next(iter(list_overrides(client, schedule="team-s"))).run_id

    def shown() -> bool:  # once the killed switch's run lock has expired
        entry = status_of(tmp_path, kubeconfig, "team-s", env=SHORT_LOCK)
        return bool(entry["lastRun"]["overridesLeft"])

    wait_for(shown, 30, "status to show the overrides left")
    entry = status_of(tmp_path, kubeconfig, "team-s", env=SHORT_LOCK)
    assert {o for left in entry["lastRun"]["overridesLeft"] for o in left["overrides"]} == standing
    shown_left = {x["object"] for x in entry["leftovers"] if x["kind"] == "override"}
    assert shown_left == standing
    assert all(x["runId"] == run_id and x["ageSeconds"] is not None for x in entry["leftovers"])
    dry = tidal("cleanup", "--dry-run", "--kubeconfig", kubeconfig, "-o", "json", env=SHORT_LOCK)
    assert {
        a["object"] for a in json.loads(dry.stdout)["actions"] if a["result"] == "would sweep"
    } == standing, dry.stderr
    assert _surged(client)
    done = tidal("cleanup", "--kubeconfig", kubeconfig, "-o", "json", env=SHORT_LOCK)
    removed = {a["object"] for a in json.loads(done.stdout)["actions"] if a["result"] == "removed"}
    assert removed == standing, done.stdout + done.stderr
    assert not _surged(client)
    after = status_of(tmp_path, kubeconfig, "team-s", env=SHORT_LOCK)
    assert after["lastRun"]["overridesLeft"] == []
    assert [x["kind"] for x in after["leftovers"]] == ["lazy"]  # lifted by a run of its window
    again = tidal("cleanup", "--kubeconfig", kubeconfig, "-o", "json", env=SHORT_LOCK)
    assert not [a for a in json.loads(again.stdout)["actions"] if a["result"] == "removed"]


def test_a_bridge_placement_of_a_killed_switch_is_put_back_by_tidal_cleanup(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Killed while 1-2 replica workloads are bridged (team-cpp Duplicated): the mark names
    its owner; cleanup puts the placement the bridge replaced (the window's) back and removes
    the mark."""
    emu = make_switch_emulator(team([1, 2]))
    client = client_for(emu, tmp_path)
    _slow_b(client)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    kubeconfig = _killed_mid_switch(
        emu,
        tmp_path,
        path,
        lambda: BRIDGE_PLACEMENT in (_cpp(client)["metadata"].get("annotations") or {}),
        "the bridge placement",
    )
    mark = json.loads(_cpp(client)["metadata"]["annotations"][BRIDGE_PLACEMENT])
    assert mark["schedule"] == "team-s" and mark["purpose"] == "bridge" and mark["runId"]

    def swept() -> bool:  # once the killed switch's run lock has expired
        done = tidal("cleanup", "--kubeconfig", kubeconfig, "-o", "json", env=SHORT_LOCK)
        return any(a["result"] == "restored" for a in json.loads(done.stdout)["actions"])

    wait_for(swept, 30, "cleanup to restore the placement")
    policy = _cpp(client)
    assert BRIDGE_PLACEMENT not in (policy["metadata"].get("annotations") or {})
    assert policy["spec"]["placement"] == mark["original"] != mark["bridge"]


def test_a_daemon_sweeps_leftovers_of_a_schedule_that_no_longer_exists(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The switch killed mid-surge, its schedule file removed: a daemon started on an empty
    schedules directory deletes the overrides, logs each, and exports the leftovers still
    there (the temporary Lazy, which a run lifts) as tidal_leftover_objects."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    _slow_b(client)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    _killed_mid_switch(emu, tmp_path, path, lambda: _surged(client), "the surge overrides")
    path.unlink()
    schedules = tmp_path / "schedules"
    schedules.mkdir()
    proc = start_daemon(emu, tmp_path, "a", schedules, TIDAL_SWEEPER__INTERVAL_SECONDS="1")
    try:
        wait_for(lambda: not _surged(client), 60, "the daemon to sweep the overrides")
        events = log_events(tmp_path / "a.log")
        swept = [e for e in events if e.get("event") == "leftover_swept"]
        assert swept and all(e["schedule"] == "team-s" for e in swept)
        # The gauge is set when the sweep's pass ends, a moment after its last delete lands.
        lazy = 'tidal_leftover_objects{kind="lazy",schedule="team-s"} 1.0'
        wait_for(lambda: lazy in daemon_metrics(events), 10, "the sweep to export the Lazy")
    finally:
        stop_all([proc])
