"""Shared fixtures. The emulator's (over real HTTP on loopback, or in-process) come from the
tidal-sim testing plugin: make_emulator, emulator, demo_emulator, kubeconfig, api_client,
make_karmada_fake, karmada_fake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tidal_sim.clock import ScaledClock
from tidal_sim.emulator import Emulator

if TYPE_CHECKING:
    from tidal_sim.testing.plugin import MakeEmulator

pytest_plugins = ["tidal_sim.testing.plugin"]


@pytest.fixture(autouse=True)
def _logging_as_found() -> Iterator[None]:
    """A command run in-process configures structlog and the root logger (a level, a stream):
    put both back so that no test's logs depend on what ran before it."""
    import logging

    import structlog

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(scope="session", autouse=True)
def _upstream_crds_in_settings() -> Iterator[None]:
    """Where the upstream CRDs are found (tests/upstream.py), the settings say so for the whole
    session: tidal's loader and every emulator check policies against them, in-process and in
    subprocesses. Without them (a fresh clone) nothing is set and nothing is guessed."""
    import os

    from tests.upstream import CRDS

    if CRDS is None or os.environ.get("TIDAL_KARMADA_CRDS"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIDAL_KARMADA_CRDS", str(CRDS))
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_terminal_width_from_the_runner() -> Iterator[None]:
    """pytest-xdist workers inherit COLUMNS=80 from their launcher, and tidal's tables honour
    COLUMNS: tests see no terminal width unless they set one themselves."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("COLUMNS", raising=False)
        patch.delenv("LINES", raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_policy_settle_on_the_emulator() -> Iterator[None]:
    """The emulator's detector reaches a changed policy's templates at once (unless a topology
    sets policyChangeLagSeconds, and those tests pass their own settle): runs in-process and in
    subprocesses need not wait TIDAL_KARMADA__POLICY_SETTLE_SECONDS (15 s) after each policy
    change. Scenarios on real Karmada pass the default explicitly (tests/e2e/targets.py)."""
    import os

    if os.environ.get("TIDAL_KARMADA__POLICY_SETTLE_SECONDS"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIDAL_KARMADA__POLICY_SETTLE_SECONDS", "0")
        yield


@pytest.fixture
def upstream_crds() -> Path:
    """The upstream Karmada CRD directory; the test is skipped, saying why, without one."""
    from tests.upstream import CRDS, MISSING

    if CRDS is None:
        pytest.skip(MISSING)
    return CRDS


# the workers mostly wait on emulated clocks: two a core left a core idle (6 min 45 s, about
# one core busy); three a core: 5 min 46 s on the same 2-core machine
WORKERS_PER_CORE = 3


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tidal")
    group.addoption(
        "--karmada",
        choices=("emulator", "real", "both"),
        default="emulator",
        help="e2e target of the scenarios parametrised over targets: the emulator "
        "(default), a real Karmada built from Go modules (tools.realkarmada: "
        "built and brought up, or a running one reused), or both",
    )
    group.addoption(
        "--karmada-version",
        default=None,
        help="Karmada release of the real target (default: tools.realkarmada's)",
    )
    group.addoption(
        "--fidelity-out",
        default=None,
        help="directory where target-parametrised scenarios write their per-wave "
        "placements (JSON) for docs/fidelity.md",
    )


@pytest.hookimpl(optionalhook=True)  # (the hook exists only with pytest-xdist loaded)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers `-n auto` (pyproject's addopts) starts. The emulator suite
    mostly waits (emulated pods start, watches and gates wait on the emulator's clock), so a
    run over a directory (the whole suite included) gets WORKERS_PER_CORE workers a core, each
    with its own emulators on their own ports and its own tmp_path. Test files named one by one
    run in this process (a worker's start-up would outlast them), and so does a run with a real
    Karmada as a target (`--karmada real|both`): its scenarios share one plane."""
    import os

    if config.getoption("karmada") != "emulator":
        return 0
    if not any(Path(str(arg).split("::")[0]).is_dir() for arg in config.args):
        return 0
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "karmada_target_name" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("karmada")
        names = ["emulator", "real"] if chosen == "both" else [chosen]
        metafunc.parametrize("karmada_target_name", names)


@pytest.fixture
def make_switch_emulator(make_emulator: MakeEmulator) -> MakeEmulator:
    """Factory for the switch tests: `make_switch_emulator(topology=None, **team)` -> a started
    emulator whose clock runs 20x, once its first scheduling has settled (0.5s). Without a
    topology it holds `switch_helpers.static_team(**team)`."""

    def make(topology: list[dict[str, Any]] | None = None, **team: Any) -> Emulator:
        from tests.e2e.switch_helpers import static_team

        emu = make_emulator(
            static_team(**team) if topology is None else topology, clock=ScaledClock(20.0)
        )
        time.sleep(0.5)
        return emu

    return make


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files holding `slow` scenarios first, each file's tests kept together and in their
    order: xdist's loadscope hands files out in collection order, so a long file started last
    would run alone while the other workers idle (the suite's tail)."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: the rest keeps its order
