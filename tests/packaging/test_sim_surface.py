"""The import contracts over tidal-sim cover every module: the demo's surface of tidal is the
one tools/sim_surface.py names, and every module of the emulator proper is in its contracts."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

from tools.sim_surface import SURFACE, forbidden

ROOT = Path(__file__).resolve().parents[2]
NOT_EMULATOR = {"tidal_sim.cli", "tidal_sim.demo", "tidal_sim.testing"}


def _contract(name_start: str) -> dict[str, Any]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    found: dict[str, Any] = next(c for c in contracts if c["name"].startswith(name_start))
    return found


def test_the_demo_contract_forbids_all_of_tidal_but_the_surface() -> None:
    """The contract's forbidden list is `python -m tools.sim_surface` (regenerate it there)."""
    contract = _contract("tidal-sim's demo and commands import only")
    assert contract["forbidden_modules"] == forbidden()
    assert not set(SURFACE) & set(contract["forbidden_modules"])


def test_every_emulator_module_is_in_the_emulator_contracts() -> None:
    """Each top-level module of tidal_sim but the demo, commands and testing kit is listed
    where the emulator proper is forbidden to import tidal."""
    modules = {f"tidal_sim.{m.name}" for m in pkgutil.iter_modules([str(ROOT / "sim/tidal_sim")])}
    contract = _contract("The emulator proper imports nothing of tidal")
    assert set(contract["source_modules"]) == modules - NOT_EMULATOR
