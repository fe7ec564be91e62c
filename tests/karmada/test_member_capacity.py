"""The members' free capacity, watched through the cluster proxy (over real HTTP)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.switch_helpers import NS, client_for, cluster, cpp, deployment, namespace
from tests.sim.http_helpers import raw
from tidal.karmada.member_capacity import MemberCapacity, merged
from tidal_sim.clock import ManualClock
from tidal_sim.emulator import Emulator

SETTINGS = {
    "apiVersion": "sim.tidal.io/v1alpha1",
    "kind": "EmulatorSettings",
    "spec": {"memberPods": True},
}
ONLY_A = {"clusterAffinity": {"clusterNames": ["cluster-a"]}}


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "not within the time"
        time.sleep(0.02)


def _scale(emu: Emulator, replicas: int) -> None:
    path = f"/apis/apps/v1/namespaces/{NS}/deployments/web"
    body = {"spec": {"replicas": replicas}}
    assert raw(emu, "PATCH", path, body, "application/merge-patch+json")[0] == 200


def _team(make_emulator: Any, replicas: int) -> Emulator:
    a = cluster("cluster-a", cpu="3", pods="10", startup=1.0, termination=5.0)
    team = [namespace(), cpp("team-cpp", "t1", ONLY_A), deployment("web", "t1", replicas, cpu="1")]
    emu: Emulator = make_emulator([SETTINGS, a, *team], clock=ManualClock())
    emu.advance(0.5)
    return emu


def _free(capacity: MemberCapacity) -> dict[str, float] | None:
    free, versions = capacity.free(["cluster-a"])
    assert set(free) == set(versions)
    return free.get("cluster-a")


def test_free_follows_the_members_pods_before_any_cluster_status_refresh(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Free is allocatable minus every unfinished pod's requests, current as pods come, wait
    for room, terminate (still holding it) and go, with no Cluster status refresh between."""
    emu = _team(make_emulator, 2)
    capacity = MemberCapacity(client_for(emu, tmp_path))
    try:
        _eventually(lambda: _free(capacity) is not None)
        assert _free(capacity) == {"cpu": 1.0, "memory": 4.0 * 2**40, "pods": 8.0}
        _scale(emu, 4)
        emu.advance(0.1)  # three fit, the fourth waits for room and still counts
        _eventually(lambda: (_free(capacity) or {}).get("cpu") == -1.0)
        _scale(emu, 0)
        emu.advance(0.1)
        _eventually(lambda: (_free(capacity) or {}).get("pods") == 7.0)  # three terminate
        assert (_free(capacity) or {}).get("cpu") == 0.0
        emu.advance(5.0)
        _eventually(lambda: (_free(capacity) or {}).get("cpu") == 3.0)
    finally:
        capacity.stop()


def test_a_report_from_the_version_read_when_replicas_run_counts_them(
    make_emulator: Any, tmp_path: Path
) -> None:
    """versions_now gives one below the watch's version once the watch holds every pod that
    existed when asked; a report at that watch version, with nothing changed since, is later
    than it and counts them (a member that changes no more still shows the replicas counted)."""
    emu = _team(make_emulator, 1)
    capacity = MemberCapacity(client_for(emu, tmp_path))
    try:
        _eventually(lambda: _free(capacity) is not None)
        _scale(emu, 3)
        emu.advance(0.1)
        asked_at = emu.server.members.member("cluster-a").resource_version
        (ran,) = capacity.versions_now(["cluster-a"]).values()
        assert int(ran) + 1 >= asked_at
        free, versions = capacity.free(["cluster-a"])
        assert int(versions["cluster-a"]) > int(ran)
        assert free["cluster-a"]["pods"] == 7.0  # the three pods are in that report
    finally:
        capacity.stop()


def test_an_unreachable_member_is_left_to_cluster_status(
    make_emulator: Any, tmp_path: Path
) -> None:
    """A member the proxy cannot reach has no current figure: the caller keeps Cluster
    status's, with its version marked so that no budget compares it with a member's."""
    emu = _team(make_emulator, 1)
    emu.server.members.unreachable.add("cluster-a")
    capacity = MemberCapacity(client_for(emu, tmp_path), retry_seconds=0.05)
    try:
        time.sleep(0.3)
        assert capacity.free(["cluster-a"]) == ({}, {})
        free, versions = merged({"cluster-a": {"cpu": 2.0}}, {"cluster-a": "41"}, {}, {})
        assert free == {"cluster-a": {"cpu": 2.0}} and versions == {"cluster-a": "status:41"}
    finally:
        capacity.stop()


def test_a_watch_reopening_a_moment_keeps_the_figure_a_long_outage_drops_it(
    make_emulator: Any, tmp_path: Path
) -> None:
    """The totals stay in use while a member's watch reopens (they are its state at their
    version); once it has been down longer than the grace, the member is left to Cluster
    status."""
    emu = _team(make_emulator, 1)
    capacity = MemberCapacity(client_for(emu, tmp_path), reopen_grace=0.5, retry_seconds=5.0)
    try:
        _eventually(lambda: _free(capacity) is not None)
        emu.server.members.unreachable.add("cluster-a")
        emu.server.members.member("cluster-a").close_watches()
        assert _free(capacity) is not None  # just down: still the member's state
        _eventually(lambda: _free(capacity) is None, 5.0)
    finally:
        capacity.stop()


def test_what_a_namespace_requests_follows_its_pods_alone(
    make_emulator: Any, tmp_path: Path
) -> None:
    """requested_in sums the pods of the namespaces asked about, as they come and go; another
    namespace's pods are not in it."""
    emu = _team(make_emulator, 1)
    capacity = MemberCapacity(client_for(emu, tmp_path))
    try:
        _eventually(lambda: _free(capacity) is not None)
        assert capacity.requested_in([NS]) == {"cluster-a": {"cpu": 1.0, "pods": 1.0}}
        assert capacity.requested_in(["elsewhere"]) == {"cluster-a": {}}
        _scale(emu, 2)
        emu.advance(0.1)
        _eventually(lambda: capacity.requested_in([NS])["cluster-a"].get("pods") == 2.0)
        assert capacity.requested_in([NS, "elsewhere"])["cluster-a"]["cpu"] == 2.0
    finally:
        capacity.stop()
