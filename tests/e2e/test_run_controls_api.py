"""`tidal pause|resume|abort|promote NAME --daemon URL` against two `tidal run` replicas on the
emulator: each command is sent to the STANDBY's command API with the token, forwarded to the
leader, and the leader's switch in flight acts on it before its next wave; status shows it and
the leader counts it (tidal_run_commands_total, source api). A wrong token is refused (401).
The same verbs through the state object (no --daemon) are in test_run_controls.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.e2e.daemon_helpers import (
    STATE_NS,
    daemon_metrics,
    log_events,
    settled_team,
    start_daemon,
    stop_all,
    wait_for,
    write_due_schedule,
)
from tidal.cli.main import cli
from tidal.daemon.lease import leader_api_url
from tidal.daemon.state import StateStore
from tidal.engine.journal import RunState
from tidal.karmada.client import KarmadaClient
from tidal.karmada.leases import get_lease

pytestmark = pytest.mark.e2e
NAME = "team-t1"
TOKEN = "e2e-command-token"


class Replicas:
    """Two `tidal run` replicas with the command API on, running team-t1's due night."""

    def __init__(
        self,
        make_emulator: Callable[..., Any],
        tmp: Path,
        pause: str,
        on_failure: str,
        before: Callable[[Any], None] = lambda emu: None,
        wave_timeout: str = "60s",
    ) -> None:
        emu = settled_team(make_emulator)
        before(emu)
        self.emu = emu
        self.tmp, self.schedules = tmp, tmp / "schedules"
        write_due_schedule(
            self.schedules, pause=pause, on_failure=on_failure, wave_timeout=wave_timeout
        )
        self.kubeconfig = emu.write_kubeconfig(tmp / "kubeconfig")
        self.client = KarmadaClient.from_kubeconfig(self.kubeconfig)
        self.store = StateStore(self.client, STATE_NS)
        self.token = tmp / "token"
        self.token.write_text(TOKEN)
        env = {
            "TIDAL_COMMANDS__ENABLED": "true",
            "TIDAL_COMMANDS__PORT": "0",
            "TIDAL_COMMANDS__TOKEN_FILE": str(self.token),
            "TIDAL_LISTEN_ADDRESS": "127.0.0.1",
        }
        self.procs = {who: start_daemon(emu, tmp, who, self.schedules, **env) for who in ("a", "b")}
        wait_for(lambda: all(self.started(who) for who in self.procs), 30, "both replicas")

    def started(self, who: str) -> dict[str, Any] | None:
        return next(
            (e for e in log_events(self.tmp / f"{who}.log") if e.get("event") == "daemon_started"),
            None,
        )

    def leader(self) -> str | None:
        lease = get_lease(self.client, STATE_NS, "tidal-leader")
        holder = (lease or {}).get("spec", {}).get("holderIdentity")
        return str(holder) if holder else None

    def standby_url(self) -> str:
        """The command API of the replica that does NOT lead."""
        wait_for(lambda: self.leader() in self.procs, 30, "a leader")
        standby = next(who for who in self.procs if who != self.leader())
        started = self.started(standby)
        assert started is not None and started["command_api"].startswith("http://127.0.0.1:")
        leader_started = self.started(str(self.leader()))
        assert leader_started is not None
        assert (
            leader_api_url(get_lease(self.client, STATE_NS, "tidal-leader"))
            == leader_started["command_api"]
        )
        return str(started["command_api"])

    def run(self) -> RunState:
        return self.store.load(NAME) or RunState(NAME, "night", "none")

    def wait(self, check: Callable[[RunState], bool], what: str) -> RunState:
        wait_for(lambda: check(self.run()), 60, what)
        return self.run()

    def command(self, verb: str, token: Path | None = None, name: str = NAME) -> Result:
        return CliRunner().invoke(
            cli,
            [verb, name, "--daemon", self.standby_url(), "--token-file", str(token or self.token)],
        )

    def status(self) -> dict[str, Any]:
        result = CliRunner().invoke(
            cli,
            [
                "status",
                "--schedules",
                str(self.schedules),
                "--kubeconfig",
                str(self.kubeconfig),
                "-o",
                "json",
            ],
            env={"TIDAL_STATE_NAMESPACE": STATE_NS},
        )
        (entry,) = json.loads(result.stdout)["schedules"]
        return dict(entry)

    def leader_events(self) -> list[dict[str, Any]]:
        return log_events(self.tmp / f"{self.leader()}.log")

    def stop(self) -> None:
        stop_all(self.procs.values())


@pytest.fixture
def replicas(
    make_emulator: Callable[..., Any], tmp_path: Path
) -> Iterator[Callable[..., Replicas]]:
    made: list[Replicas] = []

    def start(pause: str, on_failure: str = "halt", **kw: Any) -> Replicas:
        made.append(Replicas(make_emulator, tmp_path, pause, on_failure, **kw))
        return made[-1]

    yield start
    for one in made:
        one.stop()


def _started(run: RunState) -> bool:
    return bool(run.waves) and run.waves[0].started_at is not None


def _wave_one_done(run: RunState) -> bool:
    return bool(run.waves) and run.waves[0].result == "succeeded"


def test_pause_and_resume_through_a_standby(
    replicas: Callable[..., Replicas], tmp_path: Path
) -> None:
    """Paused through the standby while wave 1 runs: wave 2 waits, status says paused (source
    api); a wrong token is refused with 401 and changes nothing, an unknown schedule is the
    leader's 404 (exit 1, one line); resumed, the run succeeds."""
    daemons = replicas("2s", "halt", before=lambda emu: emu.set_pods_fail("cluster-b"))
    daemons.wait(_started, "wave 1")
    paused = daemons.command("pause")
    assert paused.exit_code == 0, paused.output
    assert (
        paused.stdout.strip()
        == f"{NAME}: the switch in flight holds before its next wave (`tidal resume` lets it go on)"
    )
    daemons.emu.set_pods_fail("cluster-b", False)  # wave 1 ends only once the pause is in
    daemons.wait(_wave_one_done, "wave 1 done")
    time.sleep(3)  # past the 2s pause between waves: wave 2 would have started
    assert daemons.run().waves[1].started_at is None
    control = daemons.status()["runControl"]
    assert (control["paused"], control["last"], control["source"]) == (True, "pause", "api")
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token")
    refused = daemons.command("resume", wrong)
    assert refused.exit_code == 1
    assert (
        refused.stderr.startswith("error: the daemon refused the request")
        and "HTTP 401" in refused.stderr
        and len(refused.stderr.strip().splitlines()) == 1
    )
    assert daemons.status()["runControl"]["paused"] is True
    unknown = daemons.command("pause", name="team-nope")
    assert unknown.exit_code == 1
    assert (
        unknown.stderr.strip()
        == f"error: no schedule 'team-nope' in {daemons.schedules} (known: {NAME})"
    )
    resumed = daemons.command("resume")
    assert (resumed.exit_code, resumed.stdout.strip()) == (0, f"{NAME}: resumed")
    run = daemons.wait(lambda run: run.finished, "the run to finish")
    assert run.result == "succeeded"
    events = [e["event"] for e in daemons.leader_events()]
    assert "run_paused" in events and "run_resumed" in events
    assert [e["code"] for e in daemons.leader_events() if e["event"] == "command_request"] == [
        200,
        404,
        200,
    ]  # the 401 never reached the leader


def test_promote_through_a_standby(replicas: Callable[..., Replicas]) -> None:
    """1h between waves, promoted through the standby after wave 1: the run succeeds now; the
    leader counts the command with source api."""
    daemons = replicas("1h", "halt")
    daemons.wait(_wave_one_done, "wave 1")
    promoted = daemons.command("promote")
    assert promoted.exit_code == 0, promoted.output
    run = daemons.wait(lambda run: run.finished, "the promoted run to finish")
    assert run.result == "succeeded"
    metrics = daemon_metrics(daemons.leader_events())
    assert (
        'tidal_run_commands_total{command="promote",schedule="team-t1",source="api"} 1.0' in metrics
    )


@pytest.mark.parametrize(("on_failure", "result"), [("halt", "failed"), ("rollback", "rolledBack")])
def test_abort_through_a_standby(
    replicas: Callable[..., Replicas], on_failure: str, result: str
) -> None:
    """1h between waves, aborted through the standby after wave 1: no wave 2; halted or
    rolled back as onFailure says, the reason naming the abort; status shows the last run."""
    daemons = replicas("1h", on_failure)
    daemons.wait(_wave_one_done, "wave 1")
    aborted = daemons.command("abort")
    assert aborted.exit_code == 0, aborted.output
    run = daemons.wait(lambda run: run.finished, "the aborted run to stop")
    assert run.result == result and "tidal abort" in run.reason
    assert all(w.started_at is None for w in run.waves[1:])
    assert daemons.status()["lastRun"]["result"] == result
    again = daemons.command("abort")
    assert again.exit_code == 1
    assert (
        again.stderr.strip()
        == f"error: no switch of {NAME} is running; `tidal status` shows its last run"
    )


def test_retry_through_a_standby_re_runs_the_failed_window(
    replicas: Callable[..., Replicas],
) -> None:
    """cluster-b's pods fail, the night halts on its first wave; once they start again, retry
    through the standby: 202-taken, the leader runs the night again and it succeeds; a second
    retry finds nothing failed and says so in one line (exit 1)."""
    daemons = replicas(
        "0s", "halt", before=lambda emu: emu.set_pods_fail("cluster-b"), wave_timeout="3s"
    )
    failed = daemons.wait(lambda run: run.finished, "the night to fail")
    assert failed.result == "failed"
    daemons.emu.set_pods_fail("cluster-b", False)
    retried = daemons.command("retry")
    assert retried.exit_code == 0, retried.output
    assert retried.stdout.strip().startswith(f"{NAME}: the daemon runs window night again")
    run = daemons.wait(
        lambda run: run.run_id != failed.run_id and run.finished, "the retried night to finish"
    )
    assert run.result == "succeeded" and run.window == "night"
    assert daemons.status()["lastRun"]["result"] == "succeeded"
    again = daemons.command("retry")
    assert again.exit_code == 1
    assert again.stderr.strip() == (
        f"error: {NAME}: no failed switch to retry (last run: succeeded); `tidal status` shows it"
    )
    events = [e["event"] for e in daemons.leader_events()]
    assert events.count("run_retrying") == 1
