"""The commands shared by the CLI and the daemon's API, and the interlude that acts on them,
against the emulator's state ConfigMaps over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tidal.daemon.commands import CommandRefused, ask_retry, failed_run, give
from tidal.daemon.interlude import OperatorInterlude
from tidal.daemon.state import StateStore
from tidal.domain.clock import FakeClock
from tidal.domain.run_control import Source, Verb
from tidal.engine.journal import Interrupted, RunState
from tidal.engine.states import Phase, RunResult
from tidal.karmada.client import KarmadaClient
from tidal.karmada.state_objects import ensure_namespace

pytestmark = pytest.mark.e2e
NS = "tidal-system"
NOW = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)


@pytest.fixture
def store(emulator: Any, tmp_path: Path) -> StateStore:
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    ensure_namespace(client, NS)
    return StateStore(client, NS)


def running(store: StateStore, run_id: str = "r1") -> RunState:
    state = RunState(schedule="team-1", window="night", run_id=run_id, phase=Phase.WAVES)
    store.save(state)
    return state


def test_a_command_is_kept_with_its_source_and_bound_to_the_run(store: StateStore) -> None:
    """pause through the API: kept for run r1 with source api; resume clears the pause."""
    running(store)
    given = give(store, "team-1", Verb.PAUSE, NOW, Source.API)
    assert (given.run_id, given.message) == (
        "r1",
        "team-1: the switch in flight holds before its next wave (`tidal resume` lets it go on)",
    )
    control = store.read("team-1").controls.run
    assert control is not None and (control.run_id, control.paused, control.source) == (
        "r1",
        True,
        "api",
    )
    give(store, "team-1", Verb.RESUME, NOW, Source.CLI)
    control = store.read("team-1").controls.run
    assert control is not None and (control.paused, control.last, control.source) == (
        False,
        "resume",
        "cli",
    )


def test_no_run_in_flight_refuses_pause_abort_promote(store: StateStore) -> None:
    """Without a run in flight pause, abort and promote are refused in one line; resume is
    not (it also undoes a suspension)."""
    for verb in (Verb.PAUSE, Verb.ABORT, Verb.PROMOTE):
        with pytest.raises(CommandRefused, match="no switch of team-1 is running"):
            give(store, "team-1", verb, NOW, Source.API)
    assert give(store, "team-1", Verb.RESUME, NOW, Source.API).message == "team-1: resumed"


def test_retry_is_asked_only_of_a_failed_run(store: StateStore) -> None:
    """retry: refused while nothing failed; a failed run is marked to run again."""
    state = running(store)
    with pytest.raises(CommandRefused, match=r"no failed switch to retry \(last run: running\)"):
        ask_retry(store, "team-1")
    state.result, state.phase = RunResult.FAILED, Phase.DONE
    store.save(state)
    assert failed_run(store, "team-1").run_id == "r1"
    assert "runs window night again" in ask_retry(store, "team-1").message
    assert store.read("team-1").controls.retry_run == "r1"


def test_the_interlude_counts_a_command_by_source(store: StateStore) -> None:
    """A promote given through the API: the interlude goes on at once, logs run_promoted with
    source api and reports (schedule, command, source) once."""
    running(store)
    give(store, "team-1", Verb.PROMOTE, NOW, Source.API)
    counted: list[tuple[str, str, str]] = []
    interlude = OperatorInterlude(
        store, "team-1", FakeClock(NOW), lambda *args: counted.append(args)
    )
    with capture_logs() as logs:
        assert interlude("r1", 0, 3600.0) is None
    assert counted == [("team-1", "promote", "api")]
    assert [(e["event"], e["source"]) for e in logs] == [("run_promoted", "api")]


def test_a_process_that_may_no_longer_act_leaves_the_pause(store: StateStore) -> None:
    """Paused, then the process stops leading (SIGTERM, lease lost): the interlude gives up,
    the run interrupted where the journal has it, instead of holding forever."""
    running(store)
    give(store, "team-1", Verb.PAUSE, NOW, Source.CLI)
    leading = [True, True, False]
    guarded = StateStore(store.client, NS, guard=lambda: leading.pop(0))
    interlude = OperatorInterlude(guarded, "team-1", FakeClock(NOW))
    with pytest.raises(Interrupted, match="between waves 0 and 1"):
        interlude("r1", 0, 0.0)
    assert leading == []
