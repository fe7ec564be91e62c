"""`tidal pause|resume|abort|promote NAME` against a `tidal switch` process on the emulator:
the commands go through the schedule's state object and the run acts on them between waves."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.cli.test_demo import tidal_command
from tests.e2e.switch_helpers import MakeEmulator, schedule_text, write_schedule
from tidal.cli.main import cli
from tidal.daemon.state import StateStore
from tidal.engine.journal import RunState
from tidal.karmada.client import KarmadaClient

pytestmark = pytest.mark.e2e
NAME = "team-s"


class SwitchProcess:
    """`tidal switch` of NAME's night window in a process of its own, and its journal."""

    def __init__(
        self,
        emulator: object,
        tmp_path: Path,
        pause: str,
        on_failure: str,
        before: Callable[[Any], None] = lambda emu: None,
    ) -> None:
        before(emulator)
        self.path = write_schedule(
            tmp_path,
            schedule_text(
                NAME,
                f"""
            waveSize: 1
            pauseBetweenWaves: {pause}
            waveTimeout: 30s
            onFailure: {on_failure}
        """,
            ),
        )
        self.emulator: Any = emulator
        self.kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")  # type: ignore[attr-defined]
        self.store = StateStore(KarmadaClient.from_kubeconfig(self.kubeconfig), "tidal-system")
        self.proc = subprocess.Popen(
            [
                *tidal_command(),
                "switch",
                str(self.path),
                "--window",
                "night",
                "--yes",
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self) -> RunState | None:
        return self.store.load(NAME)

    def wait_for(self, check: Callable[[RunState], bool], seconds: float = 60) -> RunState:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            run = self.run()
            if run is not None and check(run):
                return run
            assert self.proc.poll() is None, self.proc.communicate()
            time.sleep(0.1)
        raise AssertionError(f"timed out; journal: {self.run()}")

    def command(self, verb: str) -> None:
        result = CliRunner().invoke(
            cli,
            [
                verb,
                NAME,
                "--schedules",
                str(self.path.parent),
                "--kubeconfig",
                str(self.kubeconfig),
            ],
        )
        assert result.exit_code == 0, result.output

    def finish(self) -> tuple[int, dict[str, object], list[str]]:
        out, err = self.proc.communicate(timeout=90)
        events = [
            json.loads(line).get("event") for line in err.splitlines() if line.startswith("{")
        ]
        return self.proc.returncode, json.loads(out), events


def _wave_done(index: int) -> Callable[[RunState], bool]:
    return lambda run: len(run.waves) > index and run.waves[index].result == "succeeded"


@pytest.fixture
def switch(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> Iterator[Callable[..., SwitchProcess]]:
    made: list[SwitchProcess] = []
    emulator = make_switch_emulator()

    def start(pause: str, on_failure: str = "rollback", **kw: Any) -> SwitchProcess:
        made.append(SwitchProcess(emulator, tmp_path, pause, on_failure, **kw))
        return made[-1]

    yield start
    for proc in made:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.communicate()


def test_pause_holds_before_the_next_wave_until_resume(
    switch: Callable[..., SwitchProcess],
) -> None:
    """Paused while wave 1 runs: wave 2 does not start while paused, status says so;
    resumed, the switch succeeds. The process logs run_paused and run_resumed."""
    # wave 1's new pods start only once the pause is in, so wave 1 cannot end before it
    proc = switch("2s", "rollback", before=lambda emu: emu.set_pods_fail("cluster-b"))
    proc.wait_for(lambda run: bool(run.waves) and run.waves[0].started_at is not None)
    proc.command("pause")
    proc.emulator.set_pods_fail("cluster-b", False)
    proc.wait_for(_wave_done(0))
    time.sleep(3)  # longer than the 2s pause between waves: wave 2 would have started
    run = proc.run()
    assert run is not None and run.waves[1].started_at is None
    status = CliRunner().invoke(
        cli,
        [
            "status",
            "--schedules",
            str(proc.path.parent),
            "--kubeconfig",
            str(proc.kubeconfig),
            "-o",
            "json",
        ],
    )
    (entry,) = json.loads(status.stdout)["schedules"]
    assert entry["runControl"]["paused"] is True and entry["runControl"]["last"] == "pause"
    proc.command("resume")
    code, record, events = proc.finish()
    assert (code, record["result"]) == (0, "succeeded")
    assert "run_paused" in events and "run_resumed" in events


def test_promote_skips_the_remaining_pauses(switch: Callable[..., SwitchProcess]) -> None:
    """pauseBetweenWaves 1h: promoted after wave 1, the remaining waves follow at once."""
    proc = switch("1h", "rollback")
    proc.wait_for(_wave_done(0))
    proc.command("promote")
    code, record, events = proc.finish()
    assert (code, record["result"]) == (0, "succeeded")
    assert [w["result"] for w in record["waves"]] == ["succeeded"] * 4  # type: ignore[attr-defined]
    assert "run_promoted" in events


@pytest.mark.parametrize(("on_failure", "result"), [("rollback", "rolledBack"), ("halt", "failed")])
def test_abort_rolls_back_or_halts_as_on_failure_says(
    switch: Callable[..., SwitchProcess], on_failure: str, result: str
) -> None:
    """Aborted during the pause after wave 1: no wave 2; onFailure rollback moves wave 1
    back (rolledBack), halt leaves it (failed); exit 2 either way, the reason says abort."""
    proc = switch("1h", on_failure)
    proc.wait_for(_wave_done(0))
    proc.command("abort")
    code, record, events = proc.finish()
    assert (code, record["result"]) == (2, result)
    run = proc.run()
    assert run is not None and "tidal abort" in run.reason
    assert run.waves[1].started_at is None
    assert "run_aborted" in events


def test_a_command_without_a_switch_in_flight_is_refused(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`tidal pause NAME` with no switch of NAME running: one line saying so, exit 1."""
    path = write_schedule(tmp_path, schedule_text(NAME, "waveSize: 1\n"))
    kubeconfig = make_switch_emulator().write_kubeconfig(tmp_path / "kubeconfig")
    result = CliRunner().invoke(
        cli, ["pause", NAME, "--schedules", str(path.parent), "--kubeconfig", str(kubeconfig)]
    )
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == f"error: no switch of {NAME} is running; `tidal status` shows its last run"
    )


class DaemonRun:
    """`tidal run` carrying out team-t1's due night, its journal, and commands to it."""

    def __init__(
        self,
        make_emulator: Callable[..., object],
        tmp_path: Path,
        pause: str,
        on_failure: str,
        before: Callable[[Any], None] = lambda emu: None,
    ) -> None:
        from tests.e2e.daemon_helpers import (
            STATE_NS,
            settled_team,
            start_daemon,
            write_due_schedule,
        )

        emu = settled_team(make_emulator)
        self.emu: Any = emu
        before(emu)
        self.tmp, self.schedules = tmp_path, tmp_path / "schedules"
        write_due_schedule(self.schedules, pause=pause, on_failure=on_failure)
        self.kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        self.store = StateStore(KarmadaClient.from_kubeconfig(self.kubeconfig), STATE_NS)
        self.namespace = STATE_NS
        self.daemon = start_daemon(emu, tmp_path, "a", self.schedules)

    def run(self) -> RunState:
        return self.store.load("team-t1") or RunState("team-t1", "night", "none")

    def wait(self, check: Callable[[RunState], bool], what: str) -> RunState:
        from tests.e2e.daemon_helpers import wait_for

        wait_for(lambda: check(self.run()), 60, what)
        return self.run()

    def command(self, verb: str) -> None:
        result = CliRunner().invoke(
            cli,
            [
                verb,
                "team-t1",
                "--schedules",
                str(self.schedules),
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            env={"TIDAL_STATE_NAMESPACE": self.namespace},
        )
        assert result.exit_code == 0, result.output

    def stop(self) -> str:
        from tests.e2e.daemon_helpers import stop

        stop(self.daemon)
        return (self.tmp / "a.log").read_text()


@pytest.fixture
def daemon_run(
    make_emulator: Callable[..., object], tmp_path: Path
) -> Iterator[Callable[..., DaemonRun]]:
    made: list[DaemonRun] = []

    def start(pause: str, on_failure: str = "halt", **kw: Any) -> DaemonRun:
        made.append(DaemonRun(make_emulator, tmp_path, pause, on_failure, **kw))
        return made[-1]

    yield start
    for run in made:
        if run.daemon.poll() is None:
            run.stop()


def _started(run: RunState) -> bool:
    return bool(run.waves) and run.waves[0].started_at is not None


def test_pause_and_resume_reach_a_switch_the_daemon_runs(
    daemon_run: Callable[..., DaemonRun],
) -> None:
    """The daemon's night (2s between waves), paused while wave 1 runs: wave 2 waits while
    paused; resumed, the run succeeds; the daemon logs both commands."""
    # wave 1's new pods start only once the pause is in, so wave 1 cannot end before it
    daemon = daemon_run("2s", "halt", before=lambda emu: emu.set_pods_fail("cluster-b"))
    daemon.wait(_started, "wave 1")
    daemon.command("pause")
    daemon.emu.set_pods_fail("cluster-b", False)
    daemon.wait(lambda run: run.waves[0].result == "succeeded", "wave 1 done")
    time.sleep(3)  # past the 2s pause: wave 2 would have started
    assert daemon.run().waves[1].started_at is None
    daemon.command("resume")
    run = daemon.wait(lambda run: run.finished, "the run to finish")
    assert run.result == "succeeded"
    log = daemon.stop()
    assert '"run_paused"' in log and '"run_resumed"' in log


def test_promote_reaches_a_switch_the_daemon_runs(
    daemon_run: Callable[..., DaemonRun],
) -> None:
    """The daemon's night (1h between waves), promoted after wave 1: the run succeeds now."""
    daemon = daemon_run("1h", "halt")
    daemon.wait(lambda run: bool(run.waves) and run.waves[0].result == "succeeded", "wave 1")
    daemon.command("promote")
    run = daemon.wait(lambda run: run.finished, "the promoted run to finish")
    assert run.result == "succeeded"
    assert '"run_promoted"' in daemon.stop()


def test_abort_reaches_a_switch_the_daemon_runs(
    daemon_run: Callable[..., DaemonRun],
) -> None:
    """The daemon's night (1h between waves), aborted after wave 1: the run halts there
    (onFailure halt) and says why; the daemon logs the command."""
    daemon = daemon_run("1h", "halt")
    daemon.wait(lambda run: bool(run.waves) and run.waves[0].result == "succeeded", "wave 1")
    daemon.command("abort")
    run = daemon.wait(lambda run: run.finished, "the aborted run to halt")
    assert run.result == "failed" and "tidal abort" in run.reason
    assert all(w.started_at is None for w in run.waves[1:])
    assert '"run_aborted"' in daemon.stop()


def test_retry_re_runs_the_failed_wave(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """A wave failed (cluster-b's pods failing) and the switch halted; once the pods start
    again, `tidal retry NAME` runs the window again from that wave and succeeds; with
    nothing failed, retry refuses in one line."""
    emulator = make_switch_emulator()
    path = write_schedule(
        tmp_path,
        schedule_text(
            NAME,
            """
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: 3s
        onFailure: halt
    """,
        ),
    )
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    common = [
        NAME,
        "--schedules",
        str(path.parent),
        "--kubeconfig",
        str(kubeconfig),
        "--yes",
        "-o",
        "json",
    ]
    emulator.set_pods_fail("cluster-b")
    failed = CliRunner().invoke(
        cli,
        [
            "switch",
            str(path),
            "--window",
            "night",
            "--yes",
            "--kubeconfig",
            str(kubeconfig),
            "-o",
            "json",
        ],
    )
    assert failed.exit_code == 2, failed.output
    assert json.loads(failed.stdout)["waves"][0]["result"] == "failed"
    emulator.set_pods_fail("cluster-b", False)
    retried = CliRunner().invoke(cli, ["retry", *common])
    assert retried.exit_code == 0, retried.output
    record = json.loads(retried.stdout)
    assert record["result"] == "succeeded" and record["window"] == "night"
    again = CliRunner().invoke(cli, ["retry", *common])
    assert again.exit_code == 1
    assert again.stderr.strip() == (
        f"error: {NAME}: no failed switch to retry (last run: succeeded); `tidal status` shows it"
    )
