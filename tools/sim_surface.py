"""What of tidal the emulator's demo and commands may import directly (tidal-sim's public
surface of tidal), and the forbidden list of the import-linter contract that enforces it.

`python -m tools.sim_surface` prints the forbidden_modules of the contract "tidal-sim's demo
and commands import only tidal's public surface" in pyproject.toml;
tests/packaging/test_sim_surface.py checks that the contract lists exactly these, so a module
added to tidal is forbidden to the demo until it is added to SURFACE here (and in
docs/architecture.md).
"""

from __future__ import annotations

import json
import pkgutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The modules the demo (tidal_sim.demo) and the `tidal sim|demo` commands (tidal_sim.cli) import
# directly: they drive tidal as a user would (run a switch or a daemon, plan, read its events).
SURFACE: tuple[str, ...] = (
    "tidal.cli.exitcodes",  # the commands exit with tidal's codes
    "tidal.daemon.app",  # the demo runs the daemon (Daemon, Wiring)
    "tidal.domain.floors",  # the demo judges floors as the schedule states them
    "tidal.engine.events",  # the demo's progress and tracker read the engine's events
    "tidal.engine.planning",  # the demo prints the plan
    "tidal.engine.switch",  # the demo runs a switch by hand
    "tidal.karmada.client",  # the demo and the testing kit talk to the emulator as tidal does
    "tidal.karmada.errors",
    "tidal.loading",  # load_schedules (the package's public function)
    "tidal.logs",
    "tidal.metrics",
    "tidal.plot",  # the demo draws its picture as `tidal status --plot` does
    "tidal.settings",
)


def _children(package: str) -> list[str]:
    path = ROOT / package.replace(".", "/")
    return sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules([str(path)]))


def forbidden() -> list[str]:
    """Every tidal module that is neither in SURFACE nor a package holding one of it (those
    are opened up to their children); a forbidden package covers its descendants."""
    out: list[str] = []
    todo = ["tidal"]
    while todo:
        package = todo.pop()
        for module in _children(package):
            if module in SURFACE:
                continue
            if any(s.startswith(module + ".") for s in SURFACE):
                todo.append(module)
            else:
                out.append(module)
    return sorted(out)


if __name__ == "__main__":
    print(json.dumps(forbidden()))
