"""The short chaos soak (issue 9) in the default suite: two `tidal run` daemons against one
emulator, windows every minute, seeded random faults; every invariant must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.soak.runner import run_soak

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_short_soak_holds_every_invariant(tmp_path: Path) -> None:
    """2 minutes of faults and failovers: runs happen, faults fire, no invariant is violated."""
    result = run_soak(2.0, tmp_path, seed=7)
    assert result["violations"] == [], (tmp_path / "soak.md").read_text()
    assert result["runs"] >= 2, result
    assert result["faults_injected"] >= 5, result
    assert (tmp_path / "soak.json").is_file() and (tmp_path / "soak.md").is_file()
