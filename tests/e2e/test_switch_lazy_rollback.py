"""A Lazy an earlier run left, adopted by a run that then rolls back, is taken off by that
rollback; `tidal status` shows a Lazy tidal left held, whichever run left it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.switch_helpers import MakeEmulator, client_for, switch
from tests.e2e.test_switch_failures import _emulator, _lazy_marks, _schedule
from tidal.daemon.status import lazy_held
from tidal.engine.journal import InMemoryJournal
from tidal.loading.loader import load_schedule_file

pytestmark = pytest.mark.e2e
LAZY_MARKS = {"tidal.io/lazy-added-by", "tidal.io/activation-before-lazy"}


def test_rolled_back_run_that_adopted_a_lazy_takes_it_off(make_switch_emulator: MakeEmulator,
                                                          tmp_path: Path) -> None:
    """A halted night (journal forgotten) leaves a marked Lazy; the next night adopts it, fails
    and rolls back: the policy's original activationPreference is back and the marks gone."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    first = switch(client, _schedule(tmp_path, timeout="2s"), "night",
                   journal=InMemoryJournal())
    assert first.result == "failed"
    assert _lazy_marks(client) == ("Lazy", LAZY_MARKS)
    second = switch(client, _schedule(tmp_path, timeout="2s", on_failure="rollback"), "night",
                    journal=InMemoryJournal())
    assert second.result == "rolledBack", second.to_json()
    assert _lazy_marks(client) == (None, set())


def test_status_shows_a_lazy_left_by_a_forgotten_run(make_switch_emulator: MakeEmulator,
                                                     tmp_path: Path) -> None:
    """The held Lazy is read from the policy's marks, not from the last run's journal."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    path = _schedule(tmp_path, timeout="2s")
    assert switch(client, path, "night", journal=InMemoryJournal()).result == "failed"
    loaded, errors = load_schedule_file(path)
    assert loaded is not None and not errors
    assert lazy_held(client, None, loaded.schedule) == [
        {"policy": "ClusterPropagationPolicy/team-cpp", "restoreTo": None}]
