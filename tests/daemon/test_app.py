"""The wired Daemon in-process: APScheduler fires a window through the custom trigger, HTTP
probes and metrics answer, a reload picks up a ConfigMap-style symlink swap, shutdown releases."""

from __future__ import annotations

import os
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_daemon import NS, FakeEngine, schedule_yaml
from tidal.daemon.app import Daemon, Wiring
from tidal.daemon.reload import DirectoryWatcher
from tidal.daemon.state import StateStore
from tidal.domain.clock import FakeClock
from tidal.karmada.client import KarmadaClient
from tidal.karmada.leases import get_lease
from tidal.metrics import Metrics
from tidal.settings import load_settings

pytestmark = pytest.mark.e2e
NIGHT = datetime(2026, 6, 1, 15, tzinfo=UTC)


def wait_for(pred: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    return KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))


def test_daemon_fires_window_via_scheduler_and_serves_probes(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """Half a second before 23:00 local the scheduler fires night once; probes and metrics 200."""
    sched = tmp_path / "schedules"
    sched.mkdir()
    (sched / "team-a.yaml").write_text(schedule_yaml("team-a"))
    clock, engine = FakeClock(NIGHT - timedelta(milliseconds=500)), FakeEngine()
    settings = load_settings(schedules=sched, port=0, state_namespace=NS, identity="solo")
    metrics = Metrics()
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=engine, metrics=metrics, watch=False),
    )
    daemon.start()
    try:
        assert wait_for(lambda: engine.calls, 5)
        assert daemon.dispatcher.wait_idle(5)
        assert [c[1] for c in engine.calls] == ["night"]
        handled = StateStore(client, NS).read("team-a").handled
        assert handled is not None and (handled.window, handled.at) == ("night", NIGHT)
        assert daemon.http is not None
        port = daemon.http.port
        assert get(port, "/healthz")[0] == 200
        code, body = get(port, "/readyz")
        assert code == 200 and "leader" in body
        code, body = get(port, "/metrics")
        assert code == 200 and "tidal_leader 1.0" in body
        assert "tidal_windows_missed_total" in body
    finally:
        assert daemon.shutdown(grace_seconds=5) == 0
    lease = get_lease(client, NS, settings.leader_election.lease_name)
    assert lease is not None and not lease["spec"].get("holderIdentity")  # released


def test_symlink_swap_in_configmap_style_directory_is_picked_up(tmp_path: Path) -> None:
    """Swapping the `..data` symlink (as kubelet does) triggers a reload within seconds."""
    root = tmp_path / "schedules"
    root.mkdir()
    v1, v2 = root / "..2026_v1", root / "..2026_v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "team-a.yaml").write_text(schedule_yaml("team-a"))
    (v2 / "team-a.yaml").write_text(schedule_yaml("team-a", night="22:00"))
    os.symlink("..2026_v1", root / "..data")
    os.symlink("..data/team-a.yaml", root / "team-a.yaml")
    from tidal.daemon.reload import ScheduleDirectory

    directory = ScheduleDirectory(root)
    directory.reload()
    assert directory.get("team-a").schedule.window("night").start == "23:00"
    watcher = DirectoryWatcher(root, directory.reload, debounce_ms=50)
    watcher.start()
    try:
        time.sleep(0.3)  # let the watcher arm
        os.symlink("..2026_v2", root / "..data_tmp")
        os.replace(root / "..data_tmp", root / "..data")
        assert wait_for(
            lambda: directory.get("team-a").schedule.window("night").start == "22:00", 5
        )
    finally:
        watcher.stop()


def test_git_sync_checkout_flips_are_reloaded_each_time(tmp_path: Path) -> None:
    """Schedules read through git-sync's link (root/repo -> .worktrees/<commit>, the old
    worktree removed on each sync): the first and a second flip are both reloaded."""
    import shutil

    from tidal.daemon.reload import ScheduleDirectory, watch_roots

    root = tmp_path / "git"
    for commit, night in (("c1", "23:00"), ("c2", "22:00"), ("c3", "21:00")):
        (root / ".worktrees" / commit / "teams").mkdir(parents=True)
        (root / ".worktrees" / commit / "teams" / "team-a.yaml").write_text(
            schedule_yaml("team-a", night=night)
        )
    os.symlink(".worktrees/c1", root / "repo")
    schedules = root / "repo" / "teams"
    assert watch_roots(schedules) == [schedules, root]
    directory = ScheduleDirectory(schedules)
    directory.reload()
    watcher = DirectoryWatcher(schedules, directory.reload, debounce_ms=50)
    watcher.start()
    try:
        time.sleep(0.3)  # let the watcher arm
        for old, new, night in (("c1", "c2", "22:00"), ("c2", "c3", "21:00")):
            os.symlink(f".worktrees/{new}", root / "repo-tmp")
            os.replace(root / "repo-tmp", root / "repo")
            shutil.rmtree(root / ".worktrees" / old)
            assert wait_for(
                lambda night=night: directory.get("team-a").schedule.window("night").start == night,
                5,
            )
    finally:
        watcher.stop()


class _BrokenLeaseStore:
    """A Lease store that fails in a way the elector does not expect."""

    def get(self) -> Any:
        raise RuntimeError("lease store exploded")

    def create(self, spec: Any) -> Any:
        raise RuntimeError("lease store exploded")

    def update(self, lease: Any) -> Any:
        raise RuntimeError("lease store exploded")


def test_dead_lease_thread_makes_the_replica_unready_and_is_logged(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """The lease thread dies: /readyz answers 503 naming it; lease_thread_died is logged."""
    from structlog.testing import capture_logs

    sched = tmp_path / "schedules"
    sched.mkdir()
    settings = load_settings(schedules=sched, port=0, state_namespace=NS, identity="solo")
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(run_switch=FakeEngine(), watch=False, lease_store=_BrokenLeaseStore()),
    )
    with capture_logs() as logs:
        daemon.start()
        try:
            assert daemon.http is not None
            port = daemon.http.port
            assert wait_for(lambda: get(port, "/readyz")[0] == 503, 5)
            assert "leader election is not running" in get(port, "/readyz")[1]
        finally:
            daemon.shutdown(grace_seconds=1)
    died = [e for e in logs if e["event"] == "lease_thread_died"]
    assert died and died[0]["error_class"] == "RuntimeError"


def _hostile_schedule(windows: int) -> str:
    """The issue's file: `windows` block-style windows (5,000 make about 566 KB)."""
    block = "".join(
        f'    - name: w{i}\n      start: "{i % 24:02d}:{i % 60:02d}"\n      policies:\n'
        "        - kind: ClusterPropagationPolicy\n          name: p\n"
        "          patch: {spec: {placement: {clusterAffinity: {clusterNames: [a]}}}}\n"
        for i in range(windows)
    )
    return (
        "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: hostile}\n"
        f"spec:\n  timeZone: UTC\n  windows:\n{block}"
    )


def test_hostile_schedule_files_do_not_stall_the_daemon(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """A 566 KB and a 2,000-window schedule beside a good one: the good window still fires,
    probes answer, the hostile files are invalid, and shutdown is prompt."""
    sched = tmp_path / "schedules"
    sched.mkdir()
    (sched / "hostile-big.yaml").write_text(_hostile_schedule(5000))
    compact = "\n".join(
        f'    - {{name: w{i}, start: "{i % 24:02d}:{i % 60:02d}", policies: [{{}}]}}'
        for i in range(2000)
    )
    (sched / "hostile-many.yaml").write_text(
        "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: many}\n"
        f"spec:\n  timeZone: UTC\n  windows:\n{compact}\n"
    )
    (sched / "team-a.yaml").write_text(schedule_yaml("team-a"))
    clock, engine = FakeClock(NIGHT - timedelta(milliseconds=500)), FakeEngine()
    settings = load_settings(schedules=sched, port=0, state_namespace=NS, identity="solo")
    metrics = Metrics()
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=clock, run_switch=engine, metrics=metrics, watch=False),
    )
    started = time.monotonic()
    daemon.start()
    try:
        assert time.monotonic() - started < 5
        assert wait_for(lambda: engine.calls, 5)
        assert daemon.http is not None
        assert get(daemon.http.port, "/healthz")[0] == 200
        body = get(daemon.http.port, "/metrics")[1]
        for name in ("hostile-big.yaml", "hostile-many.yaml"):
            assert f'tidal_schedule_config_valid{{file="{sched / name}"}} 0.0' in body
        assert "tidal_schedules_loaded 1.0" in body
    finally:
        stopping = time.monotonic()
        assert daemon.shutdown(grace_seconds=5) == 0
        assert time.monotonic() - stopping < 5


def test_a_stuck_load_blocks_neither_probes_nor_a_stop(
    client: KarmadaClient, tmp_path: Path
) -> None:
    """While the first load hangs, /healthz answers and a stop request ends start() at once."""
    import threading

    release = threading.Event()

    def stuck_loader(paths: list[Path]) -> Any:
        release.wait(30)
        from tidal.loading import load_schedules

        return load_schedules(paths)

    sched = tmp_path / "schedules"
    sched.mkdir()
    settings = load_settings(schedules=sched, port=0, state_namespace=NS, identity="solo")
    daemon = Daemon(
        settings,
        client=client,
        wiring=Wiring(clock=FakeClock(NIGHT), metrics=Metrics(), load=stuck_loader, watch=False),
    )
    starter = threading.Thread(target=daemon.start)
    starter.start()
    try:
        assert wait_for(lambda: daemon.http is not None, 5)
        http = daemon.http
        assert http is not None
        # the server answers from before the scheduler starts (503 for that instant)
        assert wait_for(lambda: get(http.port, "/healthz")[0] == 200, 5)
        assert get(http.port, "/readyz")[0] == 503
        daemon.request_stop()
        starter.join(2)
        assert not starter.is_alive()
    finally:
        release.set()
        starter.join(5)
        daemon.shutdown(grace_seconds=2)
