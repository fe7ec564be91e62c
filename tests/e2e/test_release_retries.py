"""Releasing a surge survives a throttled API (issue 25, defect 5): a 429 whose Retry-After
outlasts what the run lock has left is waited out within the wave budget instead of giving the
DELETE up; what still stands when the budget ends is journalled and shown by `tidal status`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.outside import status_of, tidal
from tests.e2e.surge_helpers import FULL_AVAILABILITY, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for
from tidal.karmada.overrides import list_overrides

pytestmark = pytest.mark.e2e


def test_a_long_retry_after_on_an_override_delete_is_waited_out(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """One 429 with Retry-After 12 s (longer than the CLI's lock has left) on the release's
    delete (one deletecollection by owner labels): the switch waits it out and succeeds; no
    override is left."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    emu.faults.inject(
        type="throttle",
        verb="deletecollection",
        resource="overridepolicies",
        count=1,
        retry_after=12,
    )
    done = tidal(
        "switch", path, "--window", "night", "--kubeconfig", kubeconfig, "--yes", "-o", "json"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list_overrides(client, schedule="team-s") == []


def test_overrides_left_when_the_budget_ends_are_journalled_and_shown(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Every override delete throttled (Retry-After 12 s) past a 6 s wave budget: the switch
    fails (exit 2) and `tidal status` names each override still there, never `[]`."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(
        tmp_path, FULL_AVAILABILITY.replace("waveTimeout: 60s", "waveTimeout: 6s")
    )
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    emu.faults.inject(
        type="throttle", verb="deletecollection", resource="overridepolicies", retry_after=12
    )
    done = tidal(
        "switch", path, "--window", "night", "--kubeconfig", kubeconfig, "--yes", "-o", "json"
    )
    assert done.returncode == 2, done.stderr[-2000:]
    standing = {
        f"{v.kind}/{v.namespace}/{v.name}" for v in list_overrides(client, schedule="team-s")
    }
    assert standing
    entry = status_of(tmp_path, kubeconfig, "team-s")
    shown = {o for left in entry["lastRun"]["overridesLeft"] for o in left["overrides"]}
    assert shown == standing
