"""Targets of the scenarios parametrised over `--karmada` (see tests/e2e/targets.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.targets import EmulatorTarget, RealTarget, Target

NS = "ai-app"


@pytest.fixture(scope="session")
def real_plane(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A real Karmada plane: the running one if healthy, else built (cached) and brought up for
    this session and taken down at its end. A failure to build or come up is an error, never a
    skip."""
    from tools.realkarmada.plane import Plane, down, up
    from tools.realkarmada.versions import DEFAULT_KARMADA

    version = request.config.getoption("karmada_version") or DEFAULT_KARMADA
    running = Plane.load()
    if running is not None and running.healthy() and running.version == version:
        yield running
        return
    if running is not None:
        down()
    plane = up(version)
    try:
        yield plane
    finally:
        down()


@pytest.fixture
def target(
    request: pytest.FixtureRequest, karmada_target_name: str, tmp_path: Path
) -> Iterator[Target]:
    """The scenario's target, empty of earlier scenarios' objects. Emulator scenarios get their
    clusters from `request.param`-free defaults: call `target_topology` first when needed."""
    if karmada_target_name == "emulator":
        from tidal_sim.clock import ScaledClock
        from tidal_sim.emulator import Emulator

        topology = getattr(request, "_emulator_topology", None) or _default_clusters()
        emu = Emulator(topology, clock=ScaledClock(20.0)).start()
        try:
            yield EmulatorTarget(emu, tmp_path)
        finally:
            emu.stop()
        return
    plane = request.getfixturevalue("real_plane")
    real = RealTarget(plane.kubeconfig, plane.members, NS, plane.version)
    try:
        yield real
    finally:
        real.close()


def _default_clusters() -> list[dict[str, Any]]:
    """The demo topology's EmulatorSettings and the two Clusters the real plane has as members,
    cluster-a and cluster-b (pods start in 5s, end in 2s)."""
    import yaml

    from tidal_sim.emulator import DEFAULT_TOPOLOGY

    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    for doc in docs:
        if doc["kind"] == "EmulatorSettings":
            # the team estimator follows the time of day and real Karmada here has none
            doc["spec"].pop("teamEstimator", None)
    return [
        d
        for d in docs
        if d["kind"] == "EmulatorSettings"
        or (d["kind"] == "Cluster" and d["metadata"]["name"] in ("cluster-a", "cluster-b"))
    ]


@pytest.fixture
def fidelity(request: pytest.FixtureRequest, karmada_target_name: str) -> Iterator[dict[str, Any]]:
    """A dict the scenario fills with its per-wave observations; written to --fidelity-out."""
    record: dict[str, Any] = {"target": karmada_target_name, "scenario": request.node.originalname}
    yield record
    out = request.config.getoption("fidelity_out")
    if out:
        safe = request.node.name.replace("[", "-").replace("]", "")
        path = Path(out) / f"{safe}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, sort_keys=True))
