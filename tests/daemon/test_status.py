"""`tidal status`'s view of a halted run: the policies it left Lazy, and what they go back to."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.e2e.switch_helpers import (
    MakeEmulator,
    client_for,
    schedule_text,
    switch,
    write_schedule,
)
from tidal.daemon.status import lazy_held
from tidal.engine.journal import InMemoryJournal

pytestmark = pytest.mark.e2e


def _schedule(tmp: Path, timeout: str) -> Path:
    rollout = textwrap.dedent(f"""\
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: {timeout}
        onFailure: halt""")
    return write_schedule(tmp, schedule_text("team-s", rollout))


def test_a_halted_run_shows_the_policy_it_left_lazy(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """After a halt, the policy left Lazy is listed with the value it goes back to."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="6")
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    assert switch(client, _schedule(tmp_path, "2s"), "night", journal=journal).result == "failed"
    halted = journal.load("team-s")
    assert halted is not None
    assert lazy_held(client, halted) == [
        {"policy": "ClusterPropagationPolicy/team-cpp", "restoreTo": None}
    ]


def test_a_finished_run_holds_nothing(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """A run that succeeded took its Lazy off: nothing is listed."""
    emu = make_switch_emulator(workloads=2, cpu="100m")
    client = client_for(emu, tmp_path)
    journal = InMemoryJournal()
    assert (
        switch(client, _schedule(tmp_path, "20s"), "night", journal=journal).result == "succeeded"
    )
    done = journal.load("team-s")
    assert done is not None and lazy_held(client, done) == []
