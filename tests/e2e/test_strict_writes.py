"""Every acting write of a switch asks the apiserver for strict field validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.surge_helpers import FULL_AVAILABILITY, surge_schedule, team
from tests.e2e.switch_helpers import WRITE_VERBS, MakeEmulator, invoke_cli

pytestmark = pytest.mark.e2e


def test_a_surge_switch_sends_every_write_with_strict_field_validation(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A whole surge night through the CLI: each create, update and patch it sends (policies,
    overrides, touches, journal ConfigMaps, Leases, Events) carries fieldValidation=Strict, so
    an unknown field is refused, never pruned in silence."""
    emu = make_switch_emulator(team([5, 5]))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    emu.reset_requests()
    result = invoke_cli("switch", path, kubeconfig, "--yes")
    assert result.exit_code == 0, result.output
    sent = [
        r
        for r in emu.request_log()
        if r.verb in WRITE_VERBS and r.verb not in ("delete", "deletecollection")
    ]
    assert {r.resource for r in sent} >= {"clusterpropagationpolicies", "overridepolicies"}
    loose = sorted({f"{r.verb} {r.resource}" for r in sent if r.field_validation != "Strict"})
    assert loose == []
