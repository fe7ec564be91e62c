"""A wave's template touches over HTTP: several in flight at once, each sent once, results in
the wave's order, a deleted template reported rather than fatal."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.surge_helpers import team
from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tidal.domain.waves import WorkloadKey
from tidal.engine.resolve import Workload
from tidal.engine.triggers import TOUCHES_AT_ONCE, touch_wave

HELD_SECONDS = 1.0


def _workload(name: str) -> Workload:
    key = WorkloadKey(NS, name, "Deployment", "apps/v1")
    return Workload(key, {}, None, "ClusterPropagationPolicy/team-cpp")


def test_touches_of_a_wave_are_in_flight_together(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Eight templates whose every patch the server holds for 1 s: all eight reach it before
    the first is answered (one after another they would span 7 s), each is patched once, and
    the result lists them in the wave's order with their new resourceVersions."""
    emu = make_switch_emulator(team([1] * 8))
    client = client_for(emu, tmp_path)
    held = emu.faults.inject(
        type="latency", verb="patch", resource="deployments", seconds=HELD_SECONDS
    )
    names = [f"web-{i}" for i in range(8)]
    emu.reset_requests()
    result = touch_wave(client, [_workload(n) for n in names], stamp="s", run_id="r")
    patches = [r for r in emu.request_log() if r.verb == "patch" and r.resource == "deployments"]
    assert TOUCHES_AT_ONCE >= 8 and held.fired == 8
    assert sorted(str(r.name) for r in patches) == sorted(names)
    arrivals = sorted(r.time for r in patches)
    assert arrivals[-1] - arrivals[0] < HELD_SECONDS
    assert result.touched == [f"{NS}/Deployment/{n}" for n in names]
    assert result.deleted == [] and len(result.versions) == 8


def test_a_deleted_template_is_reported_among_the_touched(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A template gone before its touch is listed as deleted; the others are touched, and a
    skipped one (touched before a resume) is counted touched without a request."""
    emu = make_switch_emulator(team([1] * 3))
    client = client_for(emu, tmp_path)
    wave = [_workload("web-0"), _workload("gone"), _workload("web-2"), _workload("web-1")]
    emu.reset_requests()
    result = touch_wave(client, wave, stamp="s", run_id="r", skip=[wave[3].name])
    assert result.touched == [wave[0].name, wave[2].name, wave[3].name]
    assert result.deleted == [wave[1].name]
    assert emu.requests()["by"].get("patch deployments") == 3
