"""A journal written by tidal 0.1.0 (stored as a fixture) resumes under the current version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.switch_helpers import MakeEmulator, client_for, load_one, write_schedule
from tests.engine.crashing import crash_run, wave_starts
from tests.engine.test_resume import SCHEDULE
from tidal.domain.clock import SystemClock
from tidal.engine.journal import InMemoryJournal, RunState
from tidal.engine.switch import run_switch

pytestmark = pytest.mark.e2e

FIXTURE = Path(__file__).parent / "fixtures" / "journal-0.1.0-mid-run.json"


def test_a_journal_from_0_1_0_resumes_at_its_next_wave(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The stored 0.1.0 journal (wave 1 done, wave 2 started) resumes wave 2 only and succeeds."""
    stored = json.loads(FIXTURE.read_text())
    emu = make_switch_emulator()
    client = client_for(emu, tmp_path)
    loaded = load_one(write_schedule(tmp_path, SCHEDULE))
    journal = InMemoryJournal()

    # Bring the control plane to where the 0.1.0 run stopped, then put its journal in place.
    crash_run(client, loaded, journal, wave_starts(2), run_id=stored["runId"])
    current = journal.load("team-r")
    assert current is not None
    journal.save(RunState.from_dict(stored, journal_token=current.journal_token))
    emu.reset_requests()
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded", record.to_json()
    assert record.run_id == stored["runId"]
    touched = sorted(
        r.name
        for r in emu.request_log()
        if r.verb == "patch" and r.name and r.name.startswith("web-")
    )
    assert touched == ["web-2", "web-3"]
    final = journal.load("team-r")
    assert final is not None and final.completed_waves == [1, 2]
